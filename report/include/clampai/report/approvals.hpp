// The `approvals` member of the run and agent reports (docs/CLI.md, "Approvals"): plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace clampai::report {

struct ApprovalsSection {
  std::uint64_t granted = 0, denied = 0, expired = 0;
  std::vector<std::pair<std::string, std::string>> waiting{};  ///< (ticket, action), still pending
  [[nodiscard]] bool empty() const noexcept {
    return granted + denied + expired == 0 && waiting.empty();
  }
};

}  // namespace clampai::report
