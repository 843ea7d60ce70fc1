#include "clampai/verifier/deadline.hpp"

#include <algorithm>

namespace clampai::verifier {

Deadline Deadline::after(std::uint64_t ms) {
  Deadline d;
  if (ms == 0) return d;
  d.ms_ = ms;
  d.at_ = Clock::now() + std::chrono::milliseconds(ms);
  return d;
}

bool Deadline::passed() const { return set() && Clock::now() >= at_; }

unsigned Deadline::cut(unsigned call_ms) const {
  if (!set()) return call_ms;
  const auto now = Clock::now();
  if (now >= at_) return 0;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - now).count();
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(left, call_ms)));
}

std::string Deadline::not_reached() const {
  return "not checked: the run's time limit (" + std::to_string(ms_) +
         " ms, --timeout) was reached first";
}

std::string Deadline::interrupted() const {
  return "not finished: the run's time limit (" + std::to_string(ms_) +
         " ms, --timeout) was reached during the solver call";
}

}  // namespace clampai::verifier
