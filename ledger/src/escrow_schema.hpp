// The escrow tables' migration (escrow.cpp), applied by PostgresLedger's versioned migrations.
#pragma once

namespace clampai::ledger::detail {

/// Schema version 2: escrow mode's pools and leases (docs/LEDGER.md).
extern const char* const kEscrowMigration;

}  // namespace clampai::ledger::detail
