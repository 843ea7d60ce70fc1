// The approvals' tickets of a trace (docs/SERVE.md, "Approvals"; docs/LEDGER.md): which are
// open, and the rule that answers each at most once.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "clampai/kernel/trace.hpp"

namespace clampai::kernel {

/// The approvals' tickets open after a trace's entries (requested, and neither granted, denied
/// nor expired), and the rule the `approval_*` entries of a trace follow: a request names a
/// ticket that is not open; an answer (granted, denied, expired) an open ticket, of the action it
/// was requested for. So a ticket is answered at most once. `SharedKernel` commits by it (an
/// answer only while its ticket is open at the head it extends); `TraceReplay` (`trace verify
/// --spec`) checks it.
class OpenTickets {
 public:
  /// Why `e` cannot follow the entries noted so far, or nullopt (always for other kinds).
  [[nodiscard]] std::optional<std::string> refusal(const TraceEntry& e) const;
  /// Notes `e`, which `refusal` accepts.
  void note(const TraceEntry& e);
  /// True iff `ticket` is open.
  [[nodiscard]] bool open(std::string_view ticket) const;

 private:
  std::map<std::string, std::string, std::less<>> open_;  // ticket -> its action
};

}  // namespace clampai::kernel
