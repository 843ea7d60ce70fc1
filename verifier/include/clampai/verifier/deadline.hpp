// The wall-time limit of a whole run (`verify --timeout`, `compose --timeout`): every solver
// call is cut to the time left, and what has not started by then is `unknown`.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace clampai::verifier {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// No limit.
  Deadline() = default;
  /// `ms` milliseconds from now; 0: no limit.
  static Deadline after(std::uint64_t ms);

  [[nodiscard]] bool set() const noexcept { return ms_ > 0; }
  /// True once the instant has passed (never without a limit).
  [[nodiscard]] bool passed() const;
  /// The limit of a solver call that starts now: `call_ms`, cut to the time left (at least
  /// 1 ms); 0 once the deadline has passed. Without a limit, `call_ms`.
  [[nodiscard]] unsigned cut(unsigned call_ms) const;
  /// The instant (Clock::time_point::max() without a limit).
  [[nodiscard]] Clock::time_point at() const noexcept { return at_; }
  /// The limit as given, in milliseconds (0: none).
  [[nodiscard]] std::uint64_t ms() const noexcept { return ms_; }

  /// The reason of what was not started: `not checked: the run's time limit (N ms, --timeout)
  /// was reached first`.
  [[nodiscard]] std::string not_reached() const;
  /// The reason of a solver call the deadline interrupted: `not finished: the run's time limit
  /// (N ms, --timeout) was reached during the solver call`.
  [[nodiscard]] std::string interrupted() const;

 private:
  Clock::time_point at_ = Clock::time_point::max();
  std::uint64_t ms_ = 0;
};

}  // namespace clampai::verifier
