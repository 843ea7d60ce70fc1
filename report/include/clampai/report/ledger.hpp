// What a run on a shared ledger (`--ledger`) adds to its report (`run`, `agent`): the ledger
// and this process's statistics of its protocol, as typed values (no report is re-parsed).
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "clampai/kernel/ledger.hpp"

namespace clampai::report {

/// Escrow mode's counters (`clampai::ledger::EscrowStats`, copied: the report library does
/// not depend on the ledger library).
struct EscrowLedgerStats {
  std::uint64_t leases = 0, flushes = 0, commits = 0, expired = 0;
};

/// The `ledger` member of a report (JSON) and its last line (text).
struct LedgerSection {
  std::string url{};  // as the ledger describes itself (no password)
  /// A `SharedKernel`'s protocol, or escrow mode's leases.
  std::variant<kernel::SharedStats, EscrowLedgerStats> stats{};
};

}  // namespace clampai::report
