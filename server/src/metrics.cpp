// Rendering /metrics: counters only grow, so scrapes can compute rates.
#include "metrics.hpp"

#include <cstdio>

namespace clampai::server {

namespace ck = clampai::kernel;

void Metrics::observe(int status, double seconds) {
  std::size_t s = kStatuses.size() - 1;
  for (std::size_t i = 0; i + 1 < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) s = i;
  }
  by_status_[s].fetch_add(1, std::memory_order_relaxed);
  std::size_t b = kBuckets.size();
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      b = i;
      break;
    }
  }
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

namespace {

std::string number(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

}  // namespace

std::string Metrics::render(
    const std::vector<std::pair<std::string, const TaskCounters*>>& tasks) const {
  std::string out;
  const auto load = [](const std::atomic<std::uint64_t>& a) {
    return std::to_string(a.load(std::memory_order_relaxed));
  };
  out +=
      "# HELP clampai_decisions_total Decisions of the kernel, by task, endpoint and outcome.\n"
      "# TYPE clampai_decisions_total counter\n";
  static constexpr const char* kEndpoints[] = {"evaluate", "execute"};
  static constexpr const char* kOutcomes[] = {"approved", "rejected"};
  for (const auto& [name, c] : tasks) {
    for (std::size_t e = 0; e < 2; ++e) {
      for (std::size_t o = 0; o < 2; ++o) {
        out += "clampai_decisions_total{task=\"" + name + "\",endpoint=\"" + kEndpoints[e] +
               "\",outcome=\"" + kOutcomes[o] + "\"} " + load(c->decisions[e][o]) + "\n";
      }
    }
  }
  out +=
      "# HELP clampai_rejections_total Reasons of rejected decisions, by task and stable code.\n"
      "# TYPE clampai_rejections_total counter\n";
  for (const auto& [name, c] : tasks) {
    for (std::size_t r = 0; r < TaskCounters::kReasons; ++r) {
      out += "clampai_rejections_total{task=\"" + name + "\",reason=\"" +
             std::string(ck::to_string(static_cast<ck::ReasonCode>(r))) + "\"} " +
             load(c->rejections[r]) + "\n";
    }
  }
  out +=
      "# HELP clampai_shadow_rejections_total Shadow mode: reasons of the rejections the "
      "enforcing kernel would have answered (the steps were followed), by task and stable "
      "code.\n"
      "# TYPE clampai_shadow_rejections_total counter\n";
  for (const auto& [name, c] : tasks) {
    for (std::size_t r = 0; r < TaskCounters::kReasons; ++r) {
      out += "clampai_shadow_rejections_total{task=\"" + name + "\",reason=\"" +
             std::string(ck::to_string(static_cast<ck::ReasonCode>(r))) + "\"} " +
             load(c->shadow_rejections[r]) + "\n";
    }
  }
  out +=
      "# HELP clampai_rollbacks_total Committed actions rolled back, by task.\n"
      "# TYPE clampai_rollbacks_total counter\n";
  for (const auto& [name, c] : tasks)
    out += "clampai_rollbacks_total{task=\"" + name + "\"} " + load(c->rollbacks) + "\n";
  out +=
      "# HELP clampai_tasks The tasks served.\n"
      "# TYPE clampai_tasks gauge\n"
      "clampai_tasks " +
      std::to_string(tasks.size()) + "\n";
  out +=
      "# HELP clampai_http_responses_total Responses by HTTP status (`other`: any status not "
      "listed).\n"
      "# TYPE clampai_http_responses_total counter\n";
  for (std::size_t i = 0; i < kStatuses.size(); ++i) {
    out += "clampai_http_responses_total{status=\"" +
           (kStatuses[i] == 0 ? std::string("other") : std::to_string(kStatuses[i])) + "\"} " +
           load(by_status_[i]) + "\n";
  }
  out +=
      "# HELP clampai_malformed_requests_total Requests refused as malformed (400, 413, 431).\n"
      "# TYPE clampai_malformed_requests_total counter\n"
      "clampai_malformed_requests_total " +
      load(malformed_) + "\n";
  out +=
      "# HELP clampai_accept_errors_total Connections the listener failed to accept (such as "
      "out of file descriptors); it goes on accepting, backing off while they last.\n"
      "# TYPE clampai_accept_errors_total counter\n"
      "clampai_accept_errors_total " +
      load(accept_errors_) + "\n";
  out +=
      "# HELP clampai_request_duration_seconds Time to answer an API request, from its body "
      "read to its response built.\n"
      "# TYPE clampai_request_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= kBuckets.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += "clampai_request_duration_seconds_bucket{le=\"" +
           (i < kBuckets.size() ? number(kBuckets[i]) : std::string("+Inf")) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += "clampai_request_duration_seconds_sum " +
         number(static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9) + "\n";
  out += "clampai_request_duration_seconds_count " + std::to_string(cumulative) + "\n";
  return out;
}

std::string render_pools(const std::vector<ck::PoolStatus>& pools) {
  std::string out;
  const std::pair<const char*, const char*> gauges[] = {
      {"total", "The total budget of each pool."},
      {"net", "Net spend in each pool, every task under it (T1: never above its total)."},
      {"gross", "Gross spend in each pool (T4: never decreases)."}};
  for (const auto& [what, help] : gauges) {
    out += std::string("# HELP clampai_pool_") + what + " " + help + "\n# TYPE clampai_pool_" +
           what + " gauge\n";
    for (const ck::PoolStatus& p : pools) {
      const ck::Amount a = what[0] == 't' ? p.total : what[0] == 'n' ? p.net : p.gross;
      out +=
          std::string("clampai_pool_") + what + "{pool=\"" + p.name + "\"} " + p.format(a) + "\n";
    }
  }
  return out;
}

}  // namespace clampai::server
