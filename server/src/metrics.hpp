// The server's counters and the latency histogram, lock-free, rendered in the Prometheus text
// format (version 0.0.4).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/pools.hpp"
#include "task.hpp"

namespace clampai::server {

class Metrics {
 public:
  /// Upper bounds of the latency buckets, in seconds (then +Inf).
  static constexpr std::array<double, 12> kBuckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0, 10.0};

  /// Counts a response of `status` that took `seconds` to compute.
  void observe(int status, double seconds);
  /// Counts a request refused as malformed (400, 413, 431).
  void malformed() { malformed_.fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t malformed_count() const {
    return malformed_.load(std::memory_order_relaxed);
  }
  /// Counts a connection the listener failed to accept.
  void accept_error() { accept_errors_.fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t accept_error_count() const {
    return accept_errors_.load(std::memory_order_relaxed);
  }
  /// The text of /metrics: these counters and each task's.
  [[nodiscard]] std::string render(
      const std::vector<std::pair<std::string, const TaskCounters*>>& tasks) const;

 private:
  static constexpr std::array<int, 12> kStatuses = {
      200, 201, 400, 401, 404, 405, 409, 413, 431, 500, 503, 0};  // 0: any other
  std::array<std::atomic<std::uint64_t>, kStatuses.size()> by_status_{};
  std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
  std::atomic<std::uint64_t> malformed_{0};
  std::atomic<std::uint64_t> accept_errors_{0};
};

/// The budget pools' gauges for /metrics: `clampai_pool_total`, `clampai_pool_net` and
/// `clampai_pool_gross` by pool (decimal amounts at each pool's scale).
[[nodiscard]] std::string render_pools(const std::vector<kernel::PoolStatus>& pools);

}  // namespace clampai::server
