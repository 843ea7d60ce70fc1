// The PostgreSQL ledger (libpqxx 6): versioned schema, compare-and-set commits.
#include <pqxx/pqxx>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "clampai/ledger/ledger.hpp"
#include "escrow_schema.hpp"
#include "session.hpp"

namespace clampai::ledger {

using kernel::CommitStatus;
using kernel::LedgerRecord;

namespace {

// The schema, one migration per version; applied in order, each once, in one transaction
// under an advisory lock (so that processes starting together do not race).
const char* const kMigrations[] = {
    // 1: tasks (the head of each task's chain, with the state and budget after it) and entries.
    R"SQL(
CREATE TABLE clampai_ledger_tasks (
  task text PRIMARY KEY,
  spec text NOT NULL,
  length bigint NOT NULL CHECK (length >= 1),
  head text NOT NULL,
  state text NOT NULL,
  total numeric NOT NULL,
  gross numeric NOT NULL,
  net numeric NOT NULL,
  steps bigint NOT NULL,
  emergency_steps bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT clampai_budget_safe CHECK (net >= 0 AND net <= total AND net <= gross)
);
CREATE TABLE clampai_ledger_entries (
  task text NOT NULL REFERENCES clampai_ledger_tasks (task),
  seq bigint NOT NULL CHECK (seq >= 0),
  kind text NOT NULL,
  hash text NOT NULL,
  prev text NOT NULL,
  line text NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task, seq),
  CONSTRAINT clampai_no_fork UNIQUE (task, prev)
);
)SQL",
    // 2: escrow mode's pools and leases (escrow.cpp).
    detail::kEscrowMigration,
    // 3: budget pools (docs/POOLS.md): one row per pool (its parent, depth from the root, total
    // and spend), and what each entry charged (refunded) at each level, written in the entry's
    // transaction (pools.cpp creates and changes the pools).
    R"SQL(
CREATE TABLE clampai_ledger_pools (
  name text PRIMARY KEY,
  parent text REFERENCES clampai_ledger_pools (name),
  depth integer NOT NULL CHECK (depth >= 0),
  total numeric NOT NULL,
  gross numeric NOT NULL DEFAULT 0,
  net numeric NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT clampai_pool_safe CHECK (net >= 0 AND net <= total AND net <= gross)
);
CREATE TABLE clampai_ledger_pool_charges (
  task text NOT NULL,
  seq bigint NOT NULL,
  pool text NOT NULL REFERENCES clampai_ledger_pools (name),
  refund boolean NOT NULL,
  amount numeric NOT NULL CHECK (amount > 0),
  gross numeric NOT NULL,
  net numeric NOT NULL,
  PRIMARY KEY (task, seq, pool),
  FOREIGN KEY (task, seq) REFERENCES clampai_ledger_entries (task, seq)
);
)SQL",
};
constexpr int kVersion = static_cast<int>(sizeof kMigrations / sizeof kMigrations[0]);
constexpr long long kMigrationLock = 0x636c616d70616931;  // "clampai1"

// The pools from $1 up to the root (`lvl` 0: $1 itself).
constexpr const char* kPoolPath =
    "WITH RECURSIVE path (name, parent, lvl) AS (SELECT name, parent, 0 FROM clampai_ledger_pools "
    "WHERE name = $1 UNION ALL SELECT p.name, p.parent, path.lvl + 1 FROM clampai_ledger_pools p "
    "JOIN path ON p.name = path.parent WHERE path.lvl < 64) ";

}  // namespace

void detail::migrate(Session& session) {
  session.guarded([&] {
    pqxx::work w(session.connection());
    w.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLock);
    w.exec(
        "CREATE TABLE IF NOT EXISTS clampai_ledger_schema ("
        "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
    const int have =
        w.exec("SELECT coalesce(max(version), 0) FROM clampai_ledger_schema")[0][0].as<int>();
    if (have > kVersion) {
      throw Error("the ledger " + redact_url(session.conninfo) + " has schema version " +
                  std::to_string(have) + ", newer than this program's (" +
                  std::to_string(kVersion) + "): upgrade clampai");
    }
    for (int v = have + 1; v <= kVersion; ++v) {
      w.exec(kMigrations[v - 1]);
      w.exec_params("INSERT INTO clampai_ledger_schema (version) VALUES ($1)", v);
    }
    w.commit();
  });
}

struct PostgresLedger::Impl : detail::Session {
  std::string task;
  Access access;
  std::function<void()> hook;

  void migrate() { detail::migrate(*this); }

  void check_schema() {
    guarded([&] {
      pqxx::read_transaction r(connection());
      const bool present =
          r.exec("SELECT to_regclass('clampai_ledger_schema') IS NOT NULL")[0][0].as<bool>();
      if (!present)
        throw Error("no ClampAI ledger in " + redact_url(conninfo) +
                    " (no clampai_ledger_schema table)");
      const int have =
          r.exec("SELECT coalesce(max(version), 0) FROM clampai_ledger_schema")[0][0].as<int>();
      if (have != kVersion) {
        throw Error("the ledger " + redact_url(conninfo) + " has schema version " +
                    std::to_string(have) + "; this program reads version " +
                    std::to_string(kVersion));
      }
    });
  }
};

PostgresLedger::PostgresLedger(const std::string& conninfo, std::string task, Access access)
    : impl_(std::make_unique<Impl>()) {
  if (task.empty()) throw InvalidArgument("a PostgreSQL ledger needs a task name");
  impl_->conninfo = conninfo;
  impl_->application_name = "clampai-ledger";
  impl_->task = std::move(task);
  impl_->access = access;
  if (access == Access::read_write) {
    impl_->migrate();
  } else {
    impl_->check_schema();
  }
}

PostgresLedger::~PostgresLedger() = default;

std::string PostgresLedger::describe() const {
  return redact_url(impl_->conninfo) + "#" + impl_->task;
}

int PostgresLedger::schema_version() noexcept { return kVersion; }

void PostgresLedger::set_transaction_hook(std::function<void()> hook) {
  impl_->hook = std::move(hook);
}

std::vector<kernel::LedgerPool> PostgresLedger::pool_path(const std::string& pool) {
  return impl_->guarded([&] {
    pqxx::read_transaction r(impl_->connection());
    const pqxx::result rows = r.exec_params(
        std::string(kPoolPath) +
            "SELECT path.name, coalesce(path.parent, ''), l.total::text, l.gross::text, "
            "l.net::text FROM path JOIN clampai_ledger_pools l ON l.name = path.name ORDER BY "
            "path.lvl",
        pool);
    return detail::pool_rows(rows);
  });
}

bool PostgresLedger::has_task() {
  return impl_->guarded([&] {
    pqxx::read_transaction r(impl_->connection());
    return !r.exec_params("SELECT 1 FROM clampai_ledger_tasks WHERE task = $1", impl_->task)
                .empty();
  });
}

std::vector<std::string> PostgresLedger::read(std::uint64_t from) {
  return read_page(from, static_cast<std::size_t>(std::numeric_limits<long long>::max()));
}

std::vector<std::string> PostgresLedger::read_page(std::uint64_t from, std::size_t limit) {
  if (limit == 0) throw InvalidArgument("PostgresLedger::read_page: a page of no lines");
  const auto rows_at_most = static_cast<long long>(std::min<std::size_t>(
      limit, static_cast<std::size_t>(std::numeric_limits<long long>::max())));
  return impl_->guarded([&] {
    pqxx::read_transaction r(impl_->connection());
    const pqxx::result rows = r.exec_params(
        "SELECT seq, line FROM clampai_ledger_entries WHERE task = $1 AND seq >= $2 ORDER BY seq "
        "LIMIT $3",
        impl_->task,
        static_cast<long long>(from),
        rows_at_most);
    std::vector<std::string> lines;
    lines.reserve(rows.size());
    for (const auto& row : rows) {
      if (row[0].as<long long>() != static_cast<long long>(from + lines.size()))
        throw TraceError("the ledger " + describe() + " misses entry " +
                         std::to_string(from + lines.size()));
      lines.push_back(row[1].as<std::string>());
    }
    return lines;
  });
}

CommitStatus PostgresLedger::commit(const LedgerRecord& rec) {
  if (impl_->access == Access::read_only)
    throw InvalidArgument("the ledger " + describe() + " is open read-only");
  return impl_->guarded([&] {
    pqxx::work w(impl_->connection());
    const auto seq = static_cast<long long>(rec.sequence);
    if (rec.sequence == 0) {
      const pqxx::result r = w.exec_params(
          "INSERT INTO clampai_ledger_tasks (task, spec, length, head, state, total, gross, net, "
          "steps, emergency_steps) VALUES ($1, $2, 1, $3, $4, $5::numeric, $6::numeric, "
          "$7::numeric, $8, $9) ON CONFLICT (task) DO NOTHING",
          impl_->task,
          rec.spec,
          rec.hash,
          rec.state,
          rec.total,
          rec.gross,
          rec.net,
          static_cast<long long>(rec.steps),
          static_cast<long long>(rec.emergency_steps));
      if (r.affected_rows() == 0) return CommitStatus::conflict;  // another process created it
    } else {
      // The compare-and-set: only the head this entry was decided on may be replaced.
      const pqxx::result r = w.exec_params(
          "UPDATE clampai_ledger_tasks SET length = length + 1, head = $3, state = $4, "
          "gross = $5::numeric, net = $6::numeric, steps = $7, emergency_steps = $8, "
          "updated_at = now() WHERE task = $1 AND length = $9 AND head = $2",
          impl_->task,
          rec.prev,
          rec.hash,
          rec.state,
          rec.gross,
          rec.net,
          static_cast<long long>(rec.steps),
          static_cast<long long>(rec.emergency_steps),
          seq);
      if (r.affected_rows() == 0) return CommitStatus::conflict;  // `w` rolls back
    }
    w.exec_params(
        "INSERT INTO clampai_ledger_entries (task, seq, kind, hash, prev, line) VALUES ($1, $2, "
        "$3, $4, $5, $6)",
        impl_->task,
        seq,
        rec.kind,
        rec.hash,
        rec.prev,
        rec.line);
    if (!rec.pool.empty() && !rec.pool_amount.empty()) {
      // Budget pools (tla/SharedPools.tla): every level from the task's pool up to the root,
      // locked root first (depth, then name: one global order, so no deadlock), checked and
      // charged (refunded) in this transaction. A level that cannot take a charge refuses the
      // whole commit: `w` rolls back, nothing changed.
      const bool refund = rec.kind == "rolled_back" || rec.kind == "compensated";
      const pqxx::result levels = w.exec_params(
          std::string(kPoolPath) +
              "SELECT l.name, l.total - l.net >= $2::numeric FROM clampai_ledger_pools l "
              "WHERE l.name IN (SELECT name FROM path) ORDER BY l.depth, l.name FOR UPDATE",
          rec.pool,
          rec.pool_amount);
      if (levels.empty())
        throw InvalidArgument("the ledger " + describe() + " has no budget pool `" + rec.pool +
                              "`");
      if (!refund) {
        for (const auto& level : levels)
          if (!level[1].as<bool>()) return CommitStatus::refused;  // `w` rolls back
      }
      w.exec_params(
          std::string(kPoolPath) +
              ", u AS (UPDATE clampai_ledger_pools SET gross = gross + CASE WHEN $5 THEN 0 "
              "ELSE $2::numeric END, net = net + CASE WHEN $5 THEN -$2::numeric ELSE "
              "$2::numeric END, updated_at = now() WHERE name IN (SELECT name FROM path) "
              "RETURNING name, gross, net) INSERT INTO clampai_ledger_pool_charges (task, seq, "
              "pool, refund, amount, gross, net) SELECT $3, $4, u.name, $5, $2::numeric, "
              "u.gross, u.net FROM u",
          rec.pool,
          rec.pool_amount,
          impl_->task,
          seq,
          refund);
    }
    if (impl_->hook) impl_->hook();
    w.commit();
    return CommitStatus::committed;
  });
}

}  // namespace clampai::ledger
