// Escrow mode of the PostgreSQL ledger (clampai/ledger/escrow.hpp, docs/LEDGER.md).
#include "clampai/ledger/escrow.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clampai/kernel/number.hpp"
#include "clampai/ledger/ledger.hpp"
#include "escrow_schema.hpp"
#include "session.hpp"

namespace clampai::ledger {

using kernel::Amount;
using kernel::Outcome;
using kernel::Proposal;
using kernel::ReasonCode;
using kernel::TaskModel;

namespace detail {

// Schema version 2 (applied by PostgresLedger's migrations, in order with version 1): the pools
// and leases of escrow mode, and a trigger that keeps a task out of the shared mode once it is
// in escrow mode (and the escrow side refuses a task the shared mode has: see open_pool). Both
// take the same advisory lock on the task's name, so the two checks cannot race.
const char* const kEscrowMigration = R"SQL(
CREATE TABLE clampai_escrow_pools (
  task text PRIMARY KEY,
  spec text NOT NULL,
  total numeric NOT NULL CHECK (total >= 0),
  reserved numeric NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT clampai_escrow_pool_safe CHECK (reserved >= 0 AND reserved <= total)
);
CREATE TABLE clampai_escrow_leases (
  id bigserial PRIMARY KEY,
  task text NOT NULL REFERENCES clampai_escrow_pools (task),
  owner text NOT NULL,
  slice numeric NOT NULL CHECK (slice > 0),
  spent numeric NOT NULL DEFAULT 0,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed', 'expired')),
  lifetime interval NOT NULL,
  expires_at timestamptz NOT NULL,
  opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  ended_at timestamptz,
  CONSTRAINT clampai_escrow_lease_safe CHECK (spent >= 0 AND spent <= slice)
);
CREATE INDEX clampai_escrow_leases_active ON clampai_escrow_leases (task) WHERE status = 'active';
CREATE FUNCTION clampai_escrow_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('clampai-mode:' || NEW.task));
  IF EXISTS (SELECT 1 FROM clampai_escrow_pools WHERE task = NEW.task) THEN
    RAISE EXCEPTION 'task % is in escrow mode: open it with escrow=SLICE, not in the shared mode',
      NEW.task;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER clampai_escrow_guard BEFORE INSERT ON clampai_ledger_tasks
  FOR EACH ROW EXECUTE FUNCTION clampai_escrow_guard();
)SQL";

}  // namespace detail

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string default_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + ":" + std::to_string(::getpid());
}

std::string interval(std::chrono::milliseconds ms) {
  return std::to_string(ms.count()) + " milliseconds";
}

// A numeric from the database as an amount at the model's scale.
Amount amount_of(const TaskModel& m, const std::string& text) {
  const auto d = kernel::Decimal::parse(text);
  const auto r = d ? d->rescaled(m.budget.scale) : std::nullopt;
  if (!r) throw Error("escrow: the database holds the amount `" + text + "`, not one of this spec");
  return r->units;
}

// A URL's query parameter `name` (removed from `query`), or nullopt.
std::optional<std::string> take_param(std::string& query, const std::string& name) {
  std::size_t at = 0;
  while (at <= query.size()) {
    std::size_t end = query.find('&', at);
    if (end == std::string::npos) end = query.size();
    const std::string item = query.substr(at, end - at);
    const std::size_t eq = item.find('=');
    if (item.substr(0, eq) == name) {
      std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
      const std::size_t from = at == 0 ? 0 : at - 1;  // with the `&` before it
      const std::size_t to = at == 0 && end < query.size() ? end + 1 : end;
      query.erase(from, to - from);
      return value;
    }
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

// ---- URLs and specs ----

namespace {
// The URL split at its query and fragment.
struct UrlParts {
  std::string base, query, fragment;
  bool has_fragment = false;
};
UrlParts url_parts(const std::string& url) {
  UrlParts p;
  std::string rest = url;
  const std::size_t hash = rest.find('#');
  if (hash != std::string::npos) {
    p.fragment = rest.substr(hash + 1);
    p.has_fragment = true;
    rest.resize(hash);
  }
  const std::size_t q = rest.find('?');
  p.base = rest.substr(0, q);
  if (q != std::string::npos) p.query = rest.substr(q + 1);
  return p;
}
}  // namespace

bool is_escrow_url(const std::string& url) {
  if (!is_postgres_url(url)) return false;
  UrlParts p = url_parts(url);
  return take_param(p.query, "escrow").has_value();
}

EscrowUrl split_escrow_url(const std::string& url) {
  const std::string shown = redact_url(url);
  if (!is_postgres_url(url))
    throw InvalidArgument("`" + shown + "` is not a postgresql:// URL (escrow mode needs one)");
  UrlParts p = url_parts(url);
  EscrowUrl out;
  const auto slice = take_param(p.query, "escrow");
  if (!slice) throw InvalidArgument("the ledger URL `" + shown + "` has no escrow=SLICE parameter");
  const auto d = kernel::Decimal::parse(*slice);
  if (!d || d->units <= 0)
    throw InvalidArgument("the ledger URL `" + shown + "`: escrow=" + *slice +
                          " is not a slice of budget > 0 (a decimal, e.g. escrow=10)");
  out.slice = *slice;
  if (const auto lease = take_param(p.query, "escrow_lease")) {
    const auto s = kernel::Decimal::parse(*lease);
    const auto ms = s ? s->rescaled(3) : std::nullopt;
    if (!ms || ms->units <= 0)
      throw InvalidArgument("the ledger URL `" + shown + "`: escrow_lease=" + *lease +
                            " is not a lifetime in seconds > 0 (at most 3 decimals)");
    out.lifetime = std::chrono::milliseconds(ms->units);
  }
  if (const auto batch = take_param(p.query, "escrow_batch")) {
    const auto b = kernel::Decimal::parse(*batch);
    if (!b || b->scale != 0 || b->units < 1 || b->units > 100000)
      throw InvalidArgument("the ledger URL `" + shown + "`: escrow_batch=" + *batch +
                            " is not a whole number of decisions per flush in 1..100000");
    out.batch = static_cast<std::size_t>(b->units);
  }
  out.conninfo = p.base + (p.query.empty() ? "" : "?" + p.query);
  if (p.has_fragment) {
    if (p.fragment.empty())
      throw InvalidArgument("the ledger URL `" + shown +
                            "` ends with an empty fragment: name the task after `#`");
    out.task = p.fragment;
  }
  return out;
}

std::optional<std::string> escrow_refusal(const TaskModel& m) {
  const std::string why =
      "escrow mode shares only the budget (each process decides on its own copy of the state), "
      "but ";
  const std::string fix = "; use the shared mode (a ledger URL without escrow=)";
  // A lease reserves a slice of the task's own budget only: the levels of a pool (shared with
  // other tasks) would be checked by no one across processes (docs/POOLS.md).
  if (!m.budget.pool.empty())
    return why + "the budget is in pool `" + m.budget.pool +
           "`, and a lease reserves a slice of the task's own budget only, not of every level "
           "of its pools (escrow mode does not keep budget pools)" +
           fix;
  if (!m.invariants.empty())
    return why + "the spec has invariant `" + m.invariants.front().name +
           "`, which would hold for one process's state, not the group's" + fix;
  std::vector<bool> reads(m.variables.size(), false);
  auto first_read = [&](const kernel::ExprPtr& e) -> std::optional<std::string> {
    if (!e) return std::nullopt;
    std::fill(reads.begin(), reads.end(), false);
    kernel::collect_variables(*e, reads);
    for (std::size_t i = 0; i < reads.size(); ++i)
      if (reads[i]) return m.variables[i].name;
    return std::nullopt;
  };
  for (const kernel::Action& a : m.actions) {
    const std::string at = "action `" + a.id + "`";
    if (auto v = first_read(a.guard)) return why + at + "'s `requires` reads `" + *v + "`" + fix;
    if (auto v = first_read(a.cost_expr)) return why + at + "'s cost reads `" + *v + "`" + fix;
    if (!a.dependencies.empty())
      return why + at + " depends on `" + m.actions[a.dependencies.front()].id +
             "` having completed, which only the shared mode knows across processes" + fix;
    for (const kernel::Effect& e : a.effects) {
      const std::string& var = m.variables[e.variable].name;
      if (e.mode != kernel::EffectMode::set && e.mode != kernel::EffectMode::del)
        return why + at + "'s effect on `" + var + "` reads its value" + fix;
      if (auto v = first_read(e.value))
        return why + at + "'s effect on `" + var + "` reads `" + *v + "`" + fix;
    }
  }
  if (auto v = first_read(m.goal)) return why + "the goal reads `" + *v + "`" + fix;
  if (m.budget.declared_max_steps &&
      m.budget.step_limit < kernel::step_bound(m.budget.total, m.budget.min_action_cost))
    return why + "budget.max_steps (" + std::to_string(*m.budget.declared_max_steps) +
           ") is below total / min_action_cost: the step bound (T2) would hold per lease, not "
           "for the group" +
           fix;
  return std::nullopt;
}

// ---- the database ----

struct EscrowKernel::Db : detail::Session {
  // Runs `f` again after LedgerUnavailable (a dropped connection, a restart), with backoff.
  template <typename F>
  auto retrying(F&& f) -> decltype(f()) {
    unsigned delay = 20;
    for (int attempt = 0;; ++attempt) {
      try {
        return guarded(f);
      } catch (const LedgerUnavailable&) {
        if (attempt >= 30) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
        delay = std::min(2000U, delay * 2);
      }
    }
  }
};

namespace {

// Expires the task's leases whose lifetime passed (the caller holds the pool's row lock):
// each returns its unspent part, once (the status changes from active exactly once).
std::uint64_t sweep(pqxx::work& w, const std::string& task) {
  const pqxx::result r = w.exec_params(
      "WITH gone AS (UPDATE clampai_escrow_leases SET status = 'expired', ended_at = "
      "clock_timestamp() WHERE task = $1 AND status = 'active' AND expires_at < clock_timestamp() "
      "RETURNING slice - spent AS back) "
      "SELECT count(*), coalesce(sum(back), 0)::text FROM gone",
      task);
  const auto n = r[0][0].as<long long>();
  if (n > 0) {
    w.exec_params(
        "UPDATE clampai_escrow_pools SET reserved = reserved - $2::numeric WHERE task = $1",
        task,
        r[0][1].as<std::string>());
  }
  return static_cast<std::uint64_t>(n);
}

}  // namespace

// ---- the kernel ----

EscrowKernel::EscrowKernel(std::shared_ptr<const TaskModel> model,
                           const std::string& conninfo,
                           std::string task,
                           EscrowOptions options)
    : model_(std::move(model)),
      task_(std::move(task)),
      options_(std::move(options)),
      db_(std::make_unique<Db>()) {
  if (!model_) throw InvalidArgument("EscrowKernel: no model");
  if (task_.empty()) throw InvalidArgument("escrow mode needs a task name");
  if (auto why = escrow_refusal(*model_))
    throw InvalidArgument("cannot run `" + model_->name + "` in escrow mode: " + *why);
  if (options_.slice <= 0)
    throw InvalidArgument("escrow mode needs a slice of budget > 0 (escrow=SLICE)");
  if (options_.lifetime.count() <= 0)
    throw InvalidArgument("escrow mode needs a lease lifetime > 0 (escrow_lease=SECONDS)");
  if (options_.batch == 0) options_.batch = 1;
  if (!options_.clock) options_.clock = now_us;
  if (options_.owner.empty()) options_.owner = default_owner();
  db_->conninfo = conninfo;
  db_->application_name = "clampai-escrow";
  // The schema (PostgresLedger migrates it, escrow tables included), then the pool.
  { PostgresLedger schema(conninfo, task_); }
  db_->retrying([&] {
    pqxx::work w(db_->connection());
    w.exec_params("SELECT pg_advisory_xact_lock(hashtext('clampai-mode:' || $1))", task_);
    if (!w.exec_params("SELECT 1 FROM clampai_ledger_tasks WHERE task = $1", task_).empty())
      throw InvalidArgument("the task `" + task_ + "` of the ledger " + redact_url(conninfo) +
                            " is in the shared mode: escrow mode cannot share its budget "
                            "(open it without escrow=, or name another task)");
    w.exec_params(
        "INSERT INTO clampai_escrow_pools (task, spec, total) VALUES ($1, $2, $3::numeric) ON "
        "CONFLICT (task) DO NOTHING",
        task_,
        model_->digest,
        model_->format_amount(model_->budget.total));
    const pqxx::result r =
        w.exec_params("SELECT spec, total::text FROM clampai_escrow_pools WHERE task = $1", task_);
    if (r[0][0].as<std::string>() != model_->digest)
      throw InvalidArgument("the escrow pool `" + task_ + "` of the ledger " +
                            redact_url(conninfo) + " was written for another spec");
    if (amount_of(*model_, r[0][1].as<std::string>()) != model_->budget.total)
      throw InvalidArgument("the escrow pool `" + task_ + "` has another total budget");
    w.commit();
  });
  open_lease(options_.slice);
}

EscrowKernel::~EscrowKernel() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the lease then expires after its lifetime
  }
}

std::string EscrowKernel::chain() const {
  return lease_ == 0 ? std::string() : task_ + "/lease-" + std::to_string(lease_);
}

std::string EscrowKernel::describe() const {
  return redact_url(db_->conninfo) + "#" + task_ + " (escrow)";
}

void EscrowKernel::check_usable() const {
  if (broken_)
    throw LeaseExpired("the escrow kernel of " + describe() +
                       " lost its lease: open a new one to go on");
}

void EscrowKernel::open_lease(Amount at_least) {
  const Amount want = std::max(options_.slice, at_least);
  // The genesis entry of the lease's chain, made before the transaction (it does not depend on
  // the slice).
  kernel::KernelOptions g;
  g.clock = options_.clock;
  g.trace_window = 1;
  const kernel::TraceEntry genesis = kernel::SafetyKernel(model_, g).trace().back();
  std::int64_t id = 0;
  Amount grant = 0;
  db_->retrying([&] {
    pqxx::work w(db_->connection());
    w.exec_params("SELECT 1 FROM clampai_escrow_pools WHERE task = $1 FOR UPDATE", task_);
    stats_.expired += sweep(w, task_);
    const pqxx::result avail = w.exec_params(
        "SELECT (total - reserved)::text FROM clampai_escrow_pools WHERE task = $1", task_);
    const Amount free = amount_of(*model_, avail[0][0].as<std::string>());
    grant = std::min(want, free);
    if (grant < at_least || grant <= 0) {
      grant = 0;
      w.commit();  // the sweep stays
      return;
    }
    const std::string slice = model_->format_amount(grant);
    id = w.exec_params(
              "INSERT INTO clampai_escrow_leases (task, owner, slice, lifetime, expires_at) VALUES "
              "($1, $2, $3::numeric, $4::interval, clock_timestamp() + $4::interval) RETURNING id",
              task_,
              options_.owner,
              slice,
              interval(options_.lifetime))[0][0]
             .as<std::int64_t>();
    w.exec_params(
        "UPDATE clampai_escrow_pools SET reserved = reserved + $2::numeric WHERE task = $1",
        task_,
        slice);
    const std::string chain = task_ + "/lease-" + std::to_string(id);
    w.exec_params(
        "INSERT INTO clampai_ledger_tasks (task, spec, length, head, state, total, gross, net, "
        "steps, emergency_steps) VALUES ($1, $2, 1, $3, $4, $5::numeric, $6::numeric, "
        "$6::numeric, 0, 0)",
        chain,
        model_->digest,
        genesis.hash,
        kernel::state_json(model_->initial_state()),
        slice,
        genesis.net);
    w.exec_params(
        "INSERT INTO clampai_ledger_entries (task, seq, kind, hash, prev, line) VALUES ($1, 0, "
        "'genesis', $2, $3, $4)",
        chain,
        genesis.hash,
        genesis.prev,
        genesis.to_json_line());
    w.commit();
  });
  // The lease's kernel: the spec with the slice as its budget (and its T2 bound).
  auto m = std::make_shared<TaskModel>(*model_);
  m->budget.total = grant;
  m->budget.step_limit =
      kernel::step_bound(grant, m->budget.min_action_cost, m->budget.declared_max_steps);
  lease_model_ = m;
  kernel::KernelOptions k;
  k.clock = options_.clock;
  k.trace_window = 1;
  k.undo_depth = 1024;
  if (grant > 0) k.resume = {genesis};
  local_ = std::make_unique<kernel::SafetyKernel>(lease_model_, std::move(k));
  lease_ = grant > 0 ? id : 0;
  granted_ = grant;
  durable_length_ = 1;
  durable_head_ = genesis.hash;
  pending_.clear();
  if (lease_ != 0) ++stats_.leases;
}

void EscrowKernel::note_entry() {
  const kernel::TraceEntry e = local_->trace().back();
  pending_.push_back(e.to_json_line());
  pending_head_ = e.hash;
  if (pending_.size() >= options_.batch) flush();
}

void EscrowKernel::flush() {
  check_usable();
  if (pending_.empty() || lease_ == 0) return;
  const std::vector<kernel::TraceEntry> entries = kernel::parse_trace_lines(pending_, describe());
  const kernel::Situation now = local_->situation();
  const std::string chain = this->chain();
  const std::uint64_t new_length = durable_length_ + pending_.size();
  enum class Done : std::uint8_t { committed, expired, retry };
  bool in_doubt = false;
  unsigned attempts = 0;
  unsigned delay = 20;
  while (true) {
    Done done = Done::retry;
    try {
      done = db_->guarded([&] {
        pqxx::work w(db_->connection());
        if (in_doubt) {
          // The last attempt's COMMIT may have happened: its head says.
          const pqxx::result h =
              w.exec_params("SELECT length, head FROM clampai_ledger_tasks WHERE task = $1", chain);
          if (!h.empty() && h[0][1].as<std::string>() == pending_head_) return Done::committed;
        }
        const pqxx::result lease = w.exec_params(
            "UPDATE clampai_escrow_leases SET spent = $2::numeric, expires_at = "
            "clock_timestamp() + lifetime WHERE id = $1 AND status = 'active' AND expires_at > "
            "clock_timestamp()",
            lease_,
            model_->format_amount(now.budget.net()));
        if (lease.affected_rows() == 0) return Done::expired;
        const pqxx::result head = w.exec_params(
            "UPDATE clampai_ledger_tasks SET length = $2, head = $3, state = $4, gross = "
            "$5::numeric, net = $6::numeric, steps = $7, emergency_steps = $8, updated_at = now() "
            "WHERE task = $1 AND length = $9 AND head = $10",
            chain,
            static_cast<long long>(new_length),
            pending_head_,
            kernel::state_json(now.state),
            model_->format_amount(now.budget.gross()),
            model_->format_amount(now.budget.net()),
            static_cast<long long>(now.steps),
            static_cast<long long>(now.emergency_steps),
            static_cast<long long>(durable_length_),
            durable_head_);
        if (head.affected_rows() == 0)
          throw Error("the chain " + chain + " of " + describe() +
                      " was extended by another writer: only its lease's holder may write it");
        for (const kernel::TraceEntry& e : entries) {
          w.exec_params(
              "INSERT INTO clampai_ledger_entries (task, seq, kind, hash, prev, line) VALUES ($1, "
              "$2, $3, $4, $5, $6)",
              chain,
              static_cast<long long>(e.sequence),
              std::string(kernel::to_string(e.kind)),
              e.hash,
              e.prev,
              e.to_json_line());
        }
        if (options_.hook) options_.hook();
        w.commit();
        return Done::committed;
      });
    } catch (const LedgerUnavailable&) {
      // Outcome unknown: reconnect (with backoff) and read the head back before sending again.
      if (++attempts > 30) throw;
      in_doubt = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      delay = std::min(2000U, delay * 2);
      continue;
    }
    if (done == Done::expired) {
      broken_ = true;
      const std::size_t lost = pending_.size();
      pending_.clear();
      throw LeaseExpired("the lease " + chain + " of " + describe() + " expired before its last " +
                         std::to_string(lost) +
                         " decision(s) were flushed: they were never counted");
    }
    if (done == Done::committed) break;
  }
  ++stats_.flushes;
  stats_.commits += pending_.size();
  durable_length_ = new_length;
  durable_head_ = pending_head_;
  pending_.clear();
}

void EscrowKernel::close_lease() {
  if (lease_ == 0) return;
  db_->retrying([&] {
    pqxx::work w(db_->connection());
    w.exec_params("SELECT 1 FROM clampai_escrow_pools WHERE task = $1 FOR UPDATE", task_);
    const pqxx::result r = w.exec_params(
        "UPDATE clampai_escrow_leases SET status = 'closed', ended_at = clock_timestamp() WHERE "
        "id = $1 AND status = 'active' RETURNING (slice - spent)::text",
        lease_);
    if (!r.empty()) {
      w.exec_params(
          "UPDATE clampai_escrow_pools SET reserved = reserved - $2::numeric WHERE task = $1",
          task_,
          r[0][0].as<std::string>());
    }
    w.commit();
  });
  lease_ = 0;
}

void EscrowKernel::close() {
  if (broken_ || lease_ == 0) return;
  flush();
  close_lease();
}

Outcome EscrowKernel::execute(const Proposal& proposal) {
  check_usable();
  bool leased_anew = false;
  while (true) {
    const bool alone = pending_.empty();
    Outcome o = local_->execute(proposal);
    if (o.receipt) {
      try {
        note_entry();
      } catch (const LeaseExpired&) {
        // The lease expired (this process was idle or slow for longer than its lifetime). If
        // the only decision lost is this one, never returned to the caller, decide it again on
        // a new lease; decisions returned before and lost with it cannot be taken back.
        if (!alone) throw;
        broken_ = false;
        lease_ = 0;
        open_lease(options_.slice);
        continue;
      }
      return o;
    }
    const bool only_budget =
        !o.decision.reasons.empty() &&
        std::all_of(
            o.decision.reasons.begin(), o.decision.reasons.end(), [](const kernel::Reason& r) {
              return r.code == ReasonCode::budget_exceeded || r.code == ReasonCode::step_limit;
            });
    if (!only_budget) return o;
    if (leased_anew) {
      for (kernel::Reason& r : o.decision.reasons)
        r.message += " (escrow: the pool of `" + task_ + "` has no slice left for it)";
      return o;
    }
    // The lease cannot pay: make it durable, return what is left of it, lease a new slice.
    flush();
    close_lease();
    open_lease(o.decision.cost);
    leased_anew = true;
  }
}

Outcome EscrowKernel::execute(std::string_view action_id, const kernel::ParamMap& params) {
  check_usable();
  auto resolved = local_->resolve(action_id, params);
  if (auto* p = std::get_if<Proposal>(&resolved)) return execute(*p);
  kernel::Decision d;
  d.reasons.push_back(std::move(std::get<kernel::Reason>(resolved)));
  return Outcome{std::move(d), std::nullopt, local_->state()};
}

Outcome EscrowKernel::rollback(const kernel::Receipt& receipt) {
  check_usable();
  if (lease_ == 0) throw InvalidArgument("nothing to roll back: no lease is open");
  Outcome o = local_->rollback(receipt);
  note_entry();
  return o;
}

std::optional<EscrowPool> EscrowKernel::pool(const std::string& conninfo,
                                             const TaskModel& model,
                                             const std::string& task,
                                             bool do_sweep) {
  Db db;
  db.conninfo = conninfo;
  db.application_name = "clampai-escrow";
  return db.retrying([&]() -> std::optional<EscrowPool> {
    pqxx::work w(db.connection());
    const pqxx::result r =
        w.exec_params("SELECT 1 FROM clampai_escrow_pools WHERE task = $1 FOR UPDATE", task);
    if (r.empty()) return std::nullopt;
    if (do_sweep) sweep(w, task);
    const pqxx::result s = w.exec_params(
        "SELECT p.total::text, p.reserved::text, (SELECT coalesce(sum(spent), 0) FROM "
        "clampai_escrow_leases l WHERE l.task = p.task)::text, (SELECT count(*) FROM "
        "clampai_escrow_leases l WHERE l.task = p.task AND l.status = 'active') FROM "
        "clampai_escrow_pools p WHERE p.task = $1",
        task);
    w.commit();
    auto units = [&](const pqxx::field& f) { return amount_of(model, f.as<std::string>()); };
    EscrowPool out;
    out.total = units(s[0][0]);
    out.reserved = units(s[0][1]);
    out.spent = units(s[0][2]);
    out.active = s[0][3].as<std::uint64_t>();
    return out;
  });
}

}  // namespace clampai::ledger
