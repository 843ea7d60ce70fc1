// Shared ledgers by URL (docs/LEDGER.md): PostgreSQL (`postgresql://...#TASK`), a trace file
// (`file:PATH`) or memory (`memory:`), behind the kernel's `Ledger` interface.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/pools.hpp"

namespace clampai::ledger {

/// True iff `url` names a PostgreSQL ledger (`postgresql://` or `postgres://`).
bool is_postgres_url(const std::string& url);

/// A PostgreSQL URL split into the libpq connection URI and the task its fragment names
/// (empty when it has no fragment).
struct PostgresUrl {
  std::string conninfo;
  std::string task;
};
/// @throws InvalidArgument if `url` is not a PostgreSQL URL, or its fragment is empty.
PostgresUrl split_postgres_url(const std::string& url);

/// `url` without the password it may carry, for messages.
std::string redact_url(const std::string& url);

/// How a PostgreSQL ledger is opened.
enum class Access : std::uint8_t {
  read_write,  // creates or upgrades the schema (its versioned migrations) and the task
  read_only,   // reads an existing ledger; changes nothing in the database
};

/// The ledger of one task in a PostgreSQL database (libpqxx). Two tables, created by versioned
/// migrations: `clampai_ledger_tasks` (one row per task: the head, the state and the budget
/// after it) and `clampai_ledger_entries` (the canonical trace lines). A commit updates the
/// task's row where its length and head are the expected ones and inserts the entry, in one
/// transaction; no row updated is a conflict. Not thread-safe (one connection): give each
/// `SharedKernel` its own.
class PostgresLedger final : public kernel::Ledger {
 public:
  /// Connects to `conninfo` (a libpq URI or keyword string) for `task` (a spec's name).
  /// @throws LedgerUnavailable if the server cannot be reached; InvalidArgument if `task` is
  /// empty; clampai::Error if the database's schema is newer than this program's, or (read
  /// only) there is no ledger in the database.
  PostgresLedger(const std::string& conninfo, std::string task, Access access = Access::read_write);
  ~PostgresLedger() override;
  PostgresLedger(const PostgresLedger&) = delete;
  PostgresLedger& operator=(const PostgresLedger&) = delete;

  [[nodiscard]] std::string describe() const override;
  std::vector<std::string> read(std::uint64_t from) override;
  /// One page of at most `limit` lines (`LIMIT`, keyed on the sequence number: the index's
  /// order), in its own read transaction.
  std::vector<std::string> read_page(std::uint64_t from, std::size_t limit) override;
  /// With `record.pool`: the pool rows of the path locked root first (`SELECT ... FOR UPDATE`
  /// ordered by depth), checked (a charge) and updated, and each level's figures after it
  /// written to `clampai_ledger_pool_charges`, in the entry's transaction; a level that cannot
  /// take the charge makes it `refused` (nothing changed).
  kernel::CommitStatus commit(const kernel::LedgerRecord& record) override;
  std::vector<kernel::LedgerPool> pool_path(const std::string& pool) override;

  /// True iff the task has a genesis entry in the database.
  bool has_task();
  /// Called inside every commit's transaction, after the head's update and before COMMIT
  /// (tests kill the process there).
  void set_transaction_hook(std::function<void()> hook);

  /// The schema version this program migrates to.
  static int schema_version() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What `apply_pools` did to one pool of the file (or found of a pool the file does not name).
struct PoolChange {
  std::string name;
  std::string parent;          // empty: a root
  std::string action;          // `created`, `changed` (its total), `unchanged`, `kept` (not in
                               // the file: left as it is)
  std::string previous_total;  // before (empty when created)
  std::string total;           // after
  std::string gross;
  std::string net;
};

/// Creates and changes the budget pools of the PostgreSQL database `conninfo` (a libpq URI)
/// to match `decls` (a pools file, `kernel::parse_pools`), creating or upgrading the schema
/// first: a pool not on the ledger is created with nothing spent; a pool whose total differs
/// gets the file's total (raised or lowered at run time: its row is locked as a commit locks
/// it). Idempotent: the same file again changes nothing. Pools the file does not name are kept.
/// All of it in one transaction, or nothing.
/// @throws InvalidArgument naming the pool and the figures if a total would fall below the
/// pool's net spend, or a pool's parent differs from the ledger's (a parent never changes);
/// LedgerUnavailable if the database cannot be reached.
std::vector<PoolChange> apply_pools(const std::string& conninfo,
                                    const std::vector<kernel::PoolDecl>& decls);

/// Pool rows (`read_pools`, `Ledger::pool_path`) as the figures of the reports
/// (`kernel::PoolStatus`, parents first as `rows` has them reversed when `leaf_first`), each
/// level at the finest scale of its figures; `tasks` is not known there (0).
/// @throws Error if a figure is not a decimal or does not fit at that scale.
std::vector<kernel::PoolStatus> pool_status(std::vector<kernel::LedgerPool> rows, bool leaf_first);

/// Every budget pool of the database `conninfo`, parents before children (depth, then name);
/// empty if it has none (or no ledger). @throws LedgerUnavailable.
std::vector<kernel::LedgerPool> read_pools(const std::string& conninfo);

/// Opens the ledger `url` names for the task `task`: `postgresql://...` (the URL's fragment, if
/// any, names the task instead), `file:PATH` or a path, `memory:`.
/// @throws InvalidArgument naming the URL if it is none of these, or no task is named;
/// LedgerUnavailable if it cannot be reached.
std::shared_ptr<kernel::Ledger> open_ledger(const std::string& url,
                                            const std::string& task,
                                            Access access = Access::read_write);

}  // namespace clampai::ledger
