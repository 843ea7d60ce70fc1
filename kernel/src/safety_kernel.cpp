// The safety kernel: the atomic commit of decide_at's decisions (decision/decide.cpp), rollback
// by two independent mechanisms, and the hash-chained trace, kept in the store
// (trace/store.hpp).
#include "clampai/kernel/safety_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "clampai/kernel/assert.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/parallel.hpp"
#include "clampai/kernel/suggest.hpp"
#include "clampai/kernel/tickets.hpp"
#include "decide.hpp"
#include "json.hpp"
#include "numeric_program.hpp"
#include "store.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {

using detail::check_param;
using detail::decide_at;
using detail::kZeroHash;
using detail::normalise;
using detail::reason;
using detail::recorded_params;
using detail::system_clock_us;

std::string state_digest(const State& state) {
  std::vector<std::pair<std::string_view, VarId>> order;
  order.reserve(state.size());
  for (VarId i = 0; i < state.size(); ++i) order.emplace_back(state.schema().name(i), i);
  std::sort(order.begin(), order.end());
  std::string out = "{";
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k > 0) out += ',';
    detail::append_json_string(out, order[k].first);
    out += ':';
    detail::append_value(out, state.get(order[k].second));
  }
  out += '}';
  return sha256_hex(out);
}

SafetyKernel::SafetyKernel(std::shared_ptr<const TaskModel> model, KernelOptions options)
    : model_(std::move(model)),
      options_(std::move(options)),
      state_(model_->initial_state()),
      budget_(model_->budget.total),
      completions_(std::make_unique<std::atomic<std::uint64_t>[]>(model_->actions.size())),
      impl_(std::make_unique<Impl>()) {
  if (!options_.clock) options_.clock = system_clock_us;
  impl_->defer = options_.defer_hash && !options_.writer;
  impl_->worker_stop = detail::test_no_background_hasher.load(std::memory_order_relaxed);
  impl_->scale = model_->budget.scale;
  impl_->line.reserve(1024);
  impl_->last_write.assign(model_->variables.size(), 0);
  impl_->flat.reserve(model_->invariants.size());
  for (const Invariant& inv : model_->invariants)
    impl_->flat.push_back(inv.expr ? detail::flatten(*inv.expr) : detail::FlatComparison{});
  for (const Action& a : model_->actions) {
    Impl::ActionLayout layout;
    layout.action = "{\"action\":";
    detail::append_json_string(layout.action, a.id);
    layout.action += ",\"changes\":{";
    for (std::size_t i = 0; i < a.effects.size(); ++i) {
      std::string key;
      detail::append_json_string(key, model_->variables[a.effects[i].variable].name);
      layout.changes.emplace_back(i, key + ':');
    }
    for (std::size_t i = 0; i < a.parameters.size(); ++i) {
      std::string key;
      detail::append_json_string(key, a.parameters[i].name);
      layout.params.emplace_back(i, key + ':');
    }
    // The order of the raw names, as the canonical serialization sorts them.
    std::sort(layout.changes.begin(), layout.changes.end(), [&](const auto& x, const auto& y) {
      return model_->variables[a.effects[x.first].variable].name <
             model_->variables[a.effects[y.first].variable].name;
    });
    std::sort(layout.params.begin(), layout.params.end(), [&](const auto& x, const auto& y) {
      return a.parameters[x.first].name < a.parameters[y.first].name;
    });
    layout.fixed = Impl::kFixed + layout.action.size();
    for (const auto& change : layout.changes) layout.fixed += change.second.size() + 1;
    for (const auto& param : layout.params) layout.fixed += param.second.size() + 1;
    impl_->layouts.push_back(std::move(layout));
    impl_->max_values = std::max(impl_->max_values, a.effects.size() + a.parameters.size());
  }
  // The renderers' buffers, so that hashing allocates nothing.
  impl_->decoded = std::make_unique<LineValue[]>(std::max<std::size_t>(impl_->max_values, 1));
  impl_->decoded_ahead = std::make_unique<LineValue[]>(std::max<std::size_t>(impl_->max_values, 1));
  // T3's base case: the kernel refuses to start from a state it could not keep safe.
  if (options_.check_initial_state) {
    const State& s = state_;
    // Where in the spec: the JSON path, and the line and column of a spec loaded from a file.
    const auto at = [](const std::string& path, const SourceLoc& loc) {
      return " (" + path +
             (loc.line > 0
                  ? ", line " + std::to_string(loc.line) + ", column " + std::to_string(loc.column)
                  : std::string()) +
             ")";
    };
    for (const auto& v : model_->variables) {
      const Value& value = s.get(*model_->schema->find(v.name));
      if (value.kind() == Value::Kind::number &&
          ((v.min && value.as_number() < *v.min) || (v.max && value.as_number() > *v.max))) {
        throw InvalidArgument("the initial value of `" + v.name + "` is out of its bounds" +
                              at("variables." + v.name, v.loc));
      }
    }
    for (std::size_t i = 0; i < model_->invariants.size(); ++i) {
      const Invariant& inv = model_->invariants[i];
      if (inv.enforcement == Enforcement::blocking && !holds_in(inv, s)) {
        throw InvalidArgument("the initial state violates blocking invariant `" + inv.name + "`" +
                              at("invariants[" + std::to_string(i) + "]", inv.loc));
      }
    }
  }

  // Budget pools: bound now (a pool that cannot take this task's scale refuses it here); a
  // resumed trace is replayed without them and its net spend then charged to every level.
  std::optional<std::size_t> pool;
  if (options_.pools && !model_->budget.pool.empty())
    pool = options_.pools->bind(model_->budget.pool, model_->budget.scale);
  // A constructor that throws once the pool is bound unbinds it (the destructor does otherwise).
  struct UnbindOnThrow {
    PoolTree* tree;
    std::optional<std::size_t> pool;
    int uncaught = std::uncaught_exceptions();
    ~UnbindOnThrow() {
      if (pool && std::uncaught_exceptions() > uncaught) tree->unbind(*pool);
    }
  } unbind_on_throw{options_.pools.get(), pool};
  const auto join_pool_after_resume = [&] {
    if (!pool || budget_.net() == 0) {
      pool_ = pool;
      return;
    }
    // The entries' `pools` members record each level's figures as they were (every task's
    // spend), but a restarted process starts its pools from the file and its other tasks
    // resume one by one: each task charges its own net spend again, which never undercounts.
    std::lock_guard lock(mutex_);
    PoolTree::Chain chain(*options_.pools, *pool, model_->budget.scale);
    if (std::optional<Reason> r = detail::pool_check(*model_, chain, budget_.net()))
      throw InvalidArgument("cannot continue the trace in pool `" + model_->budget.pool +
                            "`: its net spend does not fit: " + r->message);
    (void)chain.charge(budget_.net());
    pool_ = pool;
  };
  if (options_.spec_change) {
    SpecChange change = std::move(*options_.spec_change);
    options_.spec_change.reset();
    start_after_spec_change(std::move(change));
    if (options_.resume_from) {
      const auto next = std::move(options_.resume_from);
      options_.resume_from = nullptr;
      resume(next, /*continued=*/true);
    }
    pool_ = pool;  // none: a task in a pool cannot change its spec (carry_situation)
    return;
  }
  if (!options_.resume.empty()) {
    const std::vector<TraceEntry> entries = std::move(options_.resume);
    options_.resume.clear();
    std::size_t i = 0;
    resume([&](TraceEntry& e) {
      if (i == entries.size()) return false;
      e = entries[i++];
      return true;
    });
    join_pool_after_resume();
    return;
  }
  if (options_.resume_from) {
    const auto next = std::move(options_.resume_from);
    options_.resume_from = nullptr;
    resume(next);
    join_pool_after_resume();
    return;
  }
  pool_ = pool;
  TraceEntry genesis;
  genesis.kind = EntryKind::genesis;
  genesis.cost = model_->format_amount(0);
  genesis.gross = model_->format_amount(0);
  genesis.net = model_->format_amount(0);
  genesis.spec = model_->digest;
  genesis.state = state_digest(state_);
  std::string line;
  append_locked(genesis, 0, 0, budget_, options_.writer ? &line : nullptr);
  if (options_.writer) write_line(0, std::move(line));
}

SafetyKernel::~SafetyKernel() {
  if (pool_) options_.pools->unbind(*pool_);
}

std::variant<Proposal, Reason> SafetyKernel::resolve(std::string_view action_id,
                                                     const ParamMap& params) const {
  return kernel::resolve(*model_, action_id, params, ParamCheck::checked);
}

std::variant<Proposal, Reason> resolve(const TaskModel& model,
                                       std::string_view action_id,
                                       const ParamMap& params,
                                       ParamCheck check) {
  const auto index = model.find_action(action_id);
  if (!index)
    return reason(ReasonCode::unknown_action,
                  std::string(action_id),
                  "unknown action `" + std::string(action_id) + "`");
  const Action& a = model.actions[*index];
  for (const auto& [name, _] : params) {
    const bool known = std::any_of(a.parameters.begin(),
                                   a.parameters.end(),
                                   [&n = name](const Parameter& p) { return p.name == n; });
    if (!known) {
      std::vector<std::string> names;
      for (const Parameter& par : a.parameters) names.push_back(par.name);
      return reason(
          ReasonCode::invalid_parameter,
          name,
          "action `" + a.id + "` has no parameter `" + name + "`" + did_you_mean(name, names));
    }
  }
  Proposal p{*index, {}};
  for (const Parameter& decl : a.parameters) {
    const auto it = std::find_if(
        params.begin(), params.end(), [&](const auto& kv) { return kv.first == decl.name; });
    Value v;
    if (it != params.end()) {
      v = it->second;
    } else if (decl.default_value) {
      v = Value::number(*decl.default_value);
    } else {
      return reason(ReasonCode::invalid_parameter,
                    decl.name,
                    "missing parameter `" + decl.name + "` (it has no default)");
    }
    if (check != ParamCheck::as_given) {
      if (auto bad = check_param(decl, v, check == ParamCheck::checked)) return *bad;
    }
    p.params.push_back(std::move(v));
  }
  return p;
}

Decision SafetyKernel::evaluate(const Proposal& proposal) const {
  std::lock_guard lock(mutex_);
  return evaluate_locked(state_, proposal);
}

Decision SafetyKernel::evaluate(std::string_view action_id, const ParamMap& params) const {
  auto resolved = resolve(action_id, params);
  if (auto* r = std::get_if<Reason>(&resolved)) {
    Decision d;
    d.reasons.push_back(std::move(*r));
    return d;
  }
  return evaluate(std::get<Proposal>(resolved));
}

Decision SafetyKernel::evaluate_in(const State& state, const Proposal& proposal) const {
  if (state.size() != model_->variables.size())
    throw InvalidArgument("the state does not have the model's variables");
  std::lock_guard lock(mutex_);
  return evaluate_locked(state, proposal);
}

namespace {
// A commit's (a rollback's) pool figures as the trace entry's `pools` member records them.
std::vector<PoolLevel> pool_levels(const std::vector<PoolCharge>& charges) {
  std::vector<PoolLevel> out;
  out.reserve(charges.size());
  for (const PoolCharge& c : charges) {
    const auto text = [&c](Amount a) {
      return Decimal{a, static_cast<std::uint8_t>(c.scale)}.to_string();
    };
    out.push_back(PoolLevel{c.pool, text(c.gross), text(c.net)});
  }
  return out;
}

std::vector<std::uint64_t> copy_completions(const std::atomic<std::uint64_t>* c, std::size_t n) {
  std::vector<std::uint64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = c[i].load(std::memory_order_relaxed);
  return out;
}
}  // namespace

void SafetyKernel::set_guard(decltype(KernelOptions::guard) guard) {
  std::lock_guard lock(mutex_);
  options_.guard = std::move(guard);
  ++guard_epoch_;  // a decision that consulted the old guard is decided afresh at commit
}

Decision SafetyKernel::evaluate_locked(const State& state,
                                       const Proposal& p,
                                       std::vector<Value>* operands) const {
  Decision d;
  decide_at(*model_,
            state,
            budget_,
            steps_,
            {nullptr, completions_.get()},
            p,
            d,
            operands,
            impl_->flat.data());
  if (options_.guard && d.approved && !d.emergency) {
    const Situation here{state,
                         budget_,
                         steps_,
                         emergency_steps_,
                         copy_completions(completions_.get(), model_->actions.size())};
    if (std::optional<Reason> veto = options_.guard(here, p, d)) {
      d.approved = false;
      d.reasons.push_back(std::move(*veto));
    }
  }
  // 4b. Budget pools: every level from the task's pool up to the root (decide.cpp's table),
  // after the guard as at commit (whose pool chain is not held while a guard searches).
  if (pool_ && d.approved && d.cost > 0) {
    const PoolTree::Chain chain(*options_.pools, *pool_, model_->budget.scale);
    if (std::optional<Reason> refused = detail::pool_check(*model_, chain, d.cost)) {
      d.approved = false;
      d.reasons.push_back(std::move(*refused));
    }
  }
  return d;
}

Situation SafetyKernel::situation() const {
  std::lock_guard lock(mutex_);
  return Situation{state_,
                   budget_,
                   steps_,
                   emergency_steps_,
                   copy_completions(completions_.get(), model_->actions.size())};
}

void SafetyKernel::append_locked(TraceEntry& entry,
                                 std::uint64_t steps,
                                 std::uint64_t emergency_steps,
                                 const BudgetController& budget,
                                 std::string* line) {
  Impl& k = *impl_;
  k.settle();              // the entry names the hash before it, and gets its own
  entry.hash.reserve(64);  // so that setting it below cannot throw
  entry.sequence = k.next_sequence();
  entry.prev = k.next_sequence() == 0 ? kZeroHash : std::string(k.head_hash());
  entry.step = steps;
  entry.emergency_steps = emergency_steps;
  entry.gross = model_->format_amount(budget.gross());
  entry.net = model_->format_amount(budget.net());
  entry.time_us = options_.clock();
  if (options_.signer && (entry.kind == EntryKind::sealed || entry.kind == EntryKind::checkpoint)) {
    entry.signature.clear();
    entry.signature = options_.signer(entry.signed_bytes());  // may throw: nothing changed yet
  }
  k.line.clear();
  const detail::LineLayout at = detail::append_canonical_without_hash(k.line, entry);
  store_line_locked(entry.kind, k.line, at.hash_at, at.prev_at, line);
  entry.hash.assign(k.head_hash());  // within the reserved capacity: cannot throw
}

void SafetyKernel::store_line_locked(EntryKind kind,
                                     std::string_view bytes,
                                     std::size_t hash_at,
                                     std::size_t prev_at,
                                     std::string* line) {
  Impl& k = *impl_;
  // May throw with nothing changed.
  if (line != nullptr) line->reserve(bytes.size() + detail::kHashMember);
  // INVARIANT (chain): the line's prev is the hash of the line before (written by the
  // hasher, in order). May throw with nothing changed.
  k.append(kind,
           bytes.substr(0, hash_at),
           bytes.substr(hash_at),
           hash_at,
           prev_at + detail::kHashMember);
  k.settle();
  copy_last_line_locked(line);
}

void SafetyKernel::copy_last_line_locked(std::string* line) noexcept {
  if (line == nullptr) return;
  Impl& k = *impl_;
  k.settle();
  k.copy_last_line(*line);  // within the reserved capacity: cannot throw
}

void SafetyKernel::write_line(std::uint64_t sequence, std::string line) {
  options_.writer->write(sequence, std::move(line));
}

namespace {
std::vector<std::pair<std::string, Value>> named(const TaskModel& m, ChangeSpan changes) {
  std::vector<std::pair<std::string, Value>> out;
  out.reserve(changes.size());
  for (const auto& [id, v] : changes) out.emplace_back(m.variables[id].name, v);
  return out;
}
}  // namespace

std::vector<std::pair<std::string, Value>> detail::named_params(const Action& a,
                                                                const std::vector<Value>& params) {
  std::vector<std::pair<std::string, Value>> out;
  for (std::size_t i = 0; i < params.size() && i < a.parameters.size(); ++i)
    out.emplace_back(a.parameters[i].name, params[i]);
  return out;
}

TraceEntry detail::note_entry(const TaskModel& m, TraceEntry entry, const std::string& what) {
  if (!is_note(entry.kind))
    throw InvalidArgument(what + "a `" + std::string(to_string(entry.kind)) +
                          "` entry changes more than the trace");
  if (entry.kind == EntryKind::attested)
    if (auto bad = malformed_attestation(entry)) throw InvalidArgument(what + *bad);
  if (!entry.action.empty() && !m.find_action(entry.action))
    throw InvalidArgument(what + "unknown action `" + entry.action + "`");
  TraceEntry kept;
  kept.kind = entry.kind;
  kept.action = std::move(entry.action);
  kept.params = std::move(entry.params);
  kept.reasons = std::move(entry.reasons);
  kept.principal = std::move(entry.principal);
  kept.ticket = std::move(entry.ticket);
  kept.cost = m.format_amount(0);
  return kept;
}

TraceEntry detail::rejected_entry(const TaskModel& m, const Proposal& proposal, const Decision& d) {
  TraceEntry entry;
  entry.kind = EntryKind::rejected;
  if (proposal.action < m.actions.size()) {
    const Action& a = m.actions[proposal.action];
    entry.action = a.id;
    entry.params = named_params(a, proposal.params);
  }
  entry.cost = m.format_amount(d.cost);
  entry.emergency = d.emergency;
  entry.reasons = d.reasons;
  entry.warnings = d.warnings;
  entry.principal = proposal.principal;
  return entry;
}

// A recorded entry's parameters as a proposal names them (decimals are written as strings);
// nullopt names the one that is not a number in `bad`.
std::optional<ParamMap> detail::recorded_params(const TraceEntry& e, std::string& bad) {
  ParamMap params;
  for (const auto& [name, v] : e.params) {
    Value value = v;
    if (v.kind() == Value::Kind::string) {
      auto d = Decimal::parse(v.as_string());
      if (!d) {
        bad = name;
        return std::nullopt;
      }
      value = Value::number(*d);
    }
    params.emplace_back(name, std::move(value));
  }
  return params;
}

SafetyKernel::Snapshot SafetyKernel::snapshot_locked() const {
  return Snapshot{state_, budget_, steps_, impl_->next_sequence()};
}

void SafetyKernel::commit_step_locked(std::uint64_t sequence,
                                      std::size_t action,
                                      bool emergency,
                                      const BudgetController& budget_after,
                                      const Changes& changes,
                                      State&& next) noexcept {
  budget_ = budget_after;
  if (emergency) {
    ++emergency_steps_;
  } else {
    ++steps_;
  }
  completions_[action].store(completions_[action].load(std::memory_order_relaxed) + 1,
                             std::memory_order_release);  // after the entry: see CompletionsRef
  state_ = std::move(next);
  Impl& k = *impl_;
  for (const auto& change : changes) k.last_write[change.first] = sequence;
  if (options_.undo_depth > 0 && k.undo.size() > options_.undo_depth) k.drop_undo_front();
}

Outcome SafetyKernel::execute(const Proposal& proposal) {
  // The effects' values from the decision, for the undo record (T7); one buffer per thread.
  thread_local std::vector<Value> operands;
  Snapshot at = [&] {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    return snapshot_locked();
  }();
  // Decided without the lock: counts newer than the snapshot move the head (below).
  Decision d;
  decide_at(*model_,
            at.state,
            at.budget,
            at.steps,
            {nullptr, completions_.get()},
            proposal,
            d,
            &operands,
            impl_->flat.data());
  if (!d.approved && !options_.record_rejections &&
      impl_->published.load(std::memory_order_seq_cst) == at.head) {
    // An untraced rejection changes nothing: it stands if it was made on one head (nothing
    // was appended while it was made, so every count it read was the snapshot's).
    return Outcome{std::move(d), std::nullopt, std::move(at.state)};
  }
  // If the head moved while deciding, decided again under the lock on the new head: every
  // commit moves the head, so a retry on a fresh snapshot would meet the same race (threads
  // sharing a kernel would waste decisions and lock round trips instead of committing).
  return commit_if_head_unchanged(at, proposal, std::move(d), operands);
}

Decided SafetyKernel::decide(const Proposal& proposal) const {
  std::lock_guard lock(mutex_);
  Decided out(this, proposal, state_);
  out.decision_ = evaluate_locked(state_, proposal, &out.operands_);
  out.head_ = impl_->next_sequence();
  out.guard_epoch_ = guard_epoch_;
  return out;
}

bool SafetyKernel::is_current(const Decided& decided) const {
  std::lock_guard lock(mutex_);
  return decided.kernel_ == this && decided.head_ == impl_->next_sequence() &&
         decided.guard_epoch_ == guard_epoch_;
}

Outcome SafetyKernel::execute(Decided decided) {
  if (decided.kernel_ != this) return execute(decided.proposal_);
  // The head the decision was made on (its budget and steps are not read by the commit).
  const Snapshot at{std::move(decided.state_), BudgetController(0), 0, decided.head_};
  return commit_if_head_unchanged(
      at, decided.proposal_, std::move(decided.decision_), decided.operands_, decided.guard_epoch_);
}

Outcome SafetyKernel::commit_if_head_unchanged(const Snapshot& at,
                                               const Proposal& proposal,
                                               Decision&& decision,
                                               std::vector<Value>& operands,
                                               std::optional<std::uint64_t> guarded) {
  std::string line;
  std::uint64_t sequence = 0;
  std::vector<std::pair<std::uint64_t, std::string>> attested;  // the commit gate's entries
  // The outcome's parts (an optional<Outcome> was zeroed whole, 288 bytes, on every call).
  std::optional<Receipt> receipt;
  std::optional<State> after;
  std::vector<PoolCharge> pool_charges;  // what the commit charged at each pool level
  bool traced = false;
  bool wake = false;  // the background hasher may have to be woken (or started)
  // The next state, built on the snapshot before the lock (so that the critical section is
  // short): it stands if the head has not moved.
  std::optional<State> prepared;
  if (decision.approved) prepared = at.state.with(decision.changes);
  {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    Impl& k = *impl_;
    Decision& d = decision;
    if (k.next_sequence() != at.head) {  // the head moved: decided again on the current one
      decide_at(*model_,
                state_,
                budget_,
                steps_,
                {nullptr, completions_.get()},
                proposal,
                d,
                &operands,
                k.flat.data());
      prepared.reset();
      guarded.reset();
    }
    // A decision of `decide` consulted the guard on this head: unless the guard was replaced
    // since, its answer stands (the decision is not made twice).
    if (options_.guard && d.approved && !d.emergency && guarded != guard_epoch_) {
      const Situation here{state_,
                           budget_,
                           steps_,
                           emergency_steps_,
                           copy_completions(completions_.get(), model_->actions.size())};
      if (std::optional<Reason> veto = options_.guard(here, proposal, d)) {
        d.approved = false;
        d.reasons.push_back(std::move(*veto));
      }
    }
    // 4b. Budget pools, with the chain held (root first) until the charge is applied below:
    // the check and the charge are one atomic step at every level.
    std::optional<PoolTree::Chain> chain;
    if (pool_ && d.approved && d.cost > 0) {
      chain.emplace(*options_.pools, *pool_, model_->budget.scale);
      if (std::optional<Reason> refused = detail::pool_check(*model_, *chain, d.cost)) {
        d.approved = false;
        d.reasons.push_back(std::move(*refused));
        chain.reset();
      }
    }
    if (options_.commit_gate && d.approved && !d.emergency) {
      const Situation here{state_,
                           budget_,
                           steps_,
                           emergency_steps_,
                           copy_completions(completions_.get(), model_->actions.size())};
      std::vector<AttestationRecord> records;
      std::optional<Reason> veto = options_.commit_gate(here, proposal, d, records);
      for (const AttestationRecord& r : records) {
        TraceEntry entry = attestation_entry(r);
        entry.cost = model_->format_amount(0);
        entry.principal = proposal.principal;
        std::string text;
        append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &text : nullptr);
        attested.emplace_back(entry.sequence, std::move(text));
      }
      if (veto) {
        d.approved = false;
        d.reasons.push_back(std::move(*veto));
      }
    }
    traced = d.approved || options_.record_rejections;
    if (!d.approved) {
      if (traced) {
        TraceEntry entry = detail::rejected_entry(*model_, proposal, d);
        append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
        sequence = entry.sequence;
      }
      after = state_;
    } else {
      const Action& a = model_->actions[proposal.action];
      // Everything that can fail (allocation) happens before the first mutation (T5).
      State next = prepared ? std::move(*prepared) : state_.with(d.changes);
      BudgetController budget_after = budget_;
      budget_after.charge(d.cost);  // can_afford held on this head; throws InvalidArgument
      // only if gross spend (which refunds never lower) would pass int64: nothing changed yet
      sequence = k.next_sequence();
      // The entry as the commit fixes it, with the counters after it; the hasher renders its
      // canonical line (with its `prev`) and hashes it.
      std::string warnings;
      if (!d.warnings.empty()) {
        warnings.assign(",\"warnings\":");
        detail::append_reasons(warnings, d.warnings);
        warnings += '}';
      }
      const Impl::Executed entry{{proposal.action,
                                  a.emergency,
                                  d.cost,
                                  budget_after.gross(),
                                  budget_after.net(),
                                  emergency_steps_ + (a.emergency ? 1 : 0),
                                  steps_ + (a.emergency ? 0 : 1),
                                  options_.clock(),
                                  warnings},
                                 &d.changes,
                                 &proposal.params};
      const Amount cost = d.cost;
      // Every level's figures after the charge (allocates: before the first mutation), for the
      // entry's `pools` member; on resume, the figures the entry recorded.
      if (chain) pool_charges = chain->plan_charge(cost);
      std::vector<PoolLevel> levels =
          chain ? pool_levels(pool_charges)
                : (resume_pools_ != nullptr ? *resume_pools_ : std::vector<PoolLevel>{});
      // The undo record: the operands, the values before and after, the parameters.
      CLAMPAI_ALWAYS_ASSERT(operands.size() == a.effects.size() &&
                            d.changes.size() == a.effects.size());
      k.push_undo(sequence, proposal.action, a, cost, operands, state_, d.changes, proposal.params);
      try {
        if (proposal.principal.empty() && levels.empty()) {
          k.publish_executed(entry, options_.writer ? &line : nullptr);
          copy_last_line_locked(options_.writer ? &line : nullptr);
        } else {
          // An entry with a principal or pools is kept as its line (the compact record has no
          // room for optional members), with the same fields and counters.
          TraceEntry text;
          text.kind = EntryKind::executed;
          text.action = a.id;
          text.params = detail::named_params(a, proposal.params);
          text.changes = named(*model_, d.changes);
          text.cost = model_->format_amount(d.cost);
          text.emergency = a.emergency;
          text.warnings = d.warnings;
          text.principal = proposal.principal;
          text.pools = std::move(levels);
          append_locked(text,
                        entry.fields.step,
                        entry.fields.emergency_steps,
                        budget_after,
                        options_.writer ? &line : nullptr);
        }
      } catch (...) {
        k.pop_undo_back();
        throw;
      }

      // Commit: nothing below throws. INVARIANT (budget-safe), (step-bound), (state-valid),
      // (chain); budget-safe at every pool level.
      if (chain) chain->apply(pool_charges);
      commit_step_locked(
          sequence, proposal.action, a.emergency, budget_after, d.changes, std::move(next));
      receipt = Receipt{sequence, proposal.action, cost};
      after = state_;
    }
    k.trim_some(options_.trace_window);
    wake = k.defer && k.lagging(Impl::kBatch);  // without reading `hashed` on most steps
  }
  if (options_.writer)
    for (auto& [seq, text] : attested) write_line(seq, std::move(text));
  if (!traced) return Outcome{std::move(decision), receipt, std::move(*after), {}};
  if (options_.writer) {
    write_line(sequence, std::move(line));
  } else if (impl_->defer) {
    if (wake) impl_->nudge();
  } else {
    impl_->help_hash();
  }
  return Outcome{std::move(decision), receipt, std::move(*after), std::move(pool_charges)};
}

Decision SafetyKernel::record_rejection(const Proposal& proposal) {
  std::string line;
  std::uint64_t sequence = 0;
  Decision d;
  {
    std::lock_guard lock(mutex_);
    d = evaluate_locked(state_, proposal);
    if (d.approved || !options_.record_rejections || sealed_) return d;
    TraceEntry entry = detail::rejected_entry(*model_, proposal, d);
    append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
    sequence = entry.sequence;
    impl_->trim(options_.trace_window);
  }
  if (options_.writer) write_line(sequence, std::move(line));
  return d;
}

TraceEntry SafetyKernel::record_attested(TraceEntry entry) {
  if (entry.kind != EntryKind::attested)
    throw InvalidArgument("record_attested: a `" + std::string(to_string(entry.kind)) +
                          "` entry is not an attestation");
  return record_note(std::move(entry));
}

TraceEntry SafetyKernel::record_note(TraceEntry entry) {
  const std::string what =
      entry.kind == EntryKind::attested ? "record_attested: " : "record_note: ";
  TraceEntry kept = detail::note_entry(*model_, std::move(entry), what);
  std::string line;
  {
    std::lock_guard lock(mutex_);
    if (sealed_)
      throw InvalidArgument("the kernel is sealed: nothing can be recorded after the seal");
    append_locked(kept, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
    impl_->trim(options_.trace_window);
  }
  if (options_.writer) write_line(kept.sequence, std::move(line));
  return kept;
}

Outcome SafetyKernel::execute(std::string_view action_id, const ParamMap& params) {
  auto resolved = resolve(action_id, params);
  if (auto* r = std::get_if<Reason>(&resolved)) {
    // Unknown actions and bad parameters are rejections like any other (T5: nothing changes).
    Decision d;
    d.reasons.push_back(std::move(*r));
    std::string line;
    std::uint64_t sequence = 0;
    {
      std::lock_guard lock(mutex_);
      if (sealed_)
        throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
      if (!options_.record_rejections) return Outcome{std::move(d), std::nullopt, state_};
      TraceEntry entry;
      entry.kind = EntryKind::rejected;
      entry.action = std::string(action_id);
      entry.params = params;
      entry.cost = model_->format_amount(0);
      entry.reasons = d.reasons;
      append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
      sequence = entry.sequence;
      impl_->trim(options_.trace_window);
    }
    if (options_.writer) write_line(sequence, std::move(line));
    return Outcome{std::move(d), std::nullopt, state()};
  }
  return execute(std::get<Proposal>(resolved));
}

Outcome SafetyKernel::rollback(const Receipt& receipt, std::string_view principal) {
  std::string line;
  std::uint64_t sequence = 0;
  Decision undone;
  std::optional<State> after;
  std::vector<PoolCharge> refunds;  // what the rollback returned to each pool level
  {
    std::lock_guard lock(mutex_);
    if (sealed_)
      throw InvalidArgument("the kernel is sealed: nothing can be rolled back after the seal");
    Impl& k = *impl_;
    auto beyond_depth = [&] {
      return InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                             ": only the last " + std::to_string(options_.undo_depth) +
                             " committed actions can be rolled back (KernelOptions::undo_depth); "
                             "the undo records of older ones were dropped");
    };
    if (k.undo.empty()) {
      if (k.undo_dropped > 0) throw beyond_depth();
      throw InvalidArgument("nothing to roll back: no committed action is in effect");
    }
    const Undo& u = k.undo.back();
    if (k.undo_dropped > 0 && receipt.sequence < k.undo.front().sequence) throw beyond_depth();
    if (receipt.sequence < k.barrier) {
      throw InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                            ": entry " + std::to_string(k.barrier) +
                            " compensated a step after it, so the state is not the one it "
                            "produced (compensate it instead)");
    }
    if (receipt.sequence != u.sequence) {
      throw InvalidArgument("cannot roll back trace entry " + std::to_string(receipt.sequence) +
                            ": the state is not the one it produced (the most recent action still "
                            "in effect is entry " +
                            std::to_string(u.sequence) + "; roll back in reverse order)");
    }
    const Action& a = model_->actions[u.action];
    if (!a.reversible)
      throw InvalidArgument("action `" + a.id +
                            "` is declared irreversible and cannot be rolled back");
    const std::size_t n = a.effects.size();
    const std::vector<Value> values = k.last_undo_values(3 * n + a.parameters.size());
    const Value* operands = values.data();
    const Value* old = operands + n;
    const Value* written = old + n;
    // The state is the one the action produced (the receipt is the latest action in effect):
    // every variable it wrote still holds what it wrote.
    const State current = state_;
    for (std::size_t i = 0; i < n; ++i)
      CLAMPAI_ALWAYS_ASSERT(current.get(a.effects[i].variable) == written[i]);

    // Mechanism 1: the algebraic inverse of each declared effect.
    Changes inverse;
    for (std::size_t i = 0; i < n; ++i) {
      const Effect& e = a.effects[i];
      const Value& now = current.get(e.variable);
      if (e.mode == EffectMode::increment || e.mode == EffectMode::decrement) {
        const auto r = e.mode == EffectMode::increment
                           ? checked_sub(now.as_number(), operands[i].as_number())
                           : checked_add(now.as_number(), operands[i].as_number());
        CLAMPAI_ALWAYS_ASSERT(r.has_value());
        Value v = Value::number(*r);
        CLAMPAI_ALWAYS_ASSERT(normalise(model_->variables[e.variable].type, v));
        inverse.emplace_back(e.variable, std::move(v));
      } else {
        // set, multiply, append, remove, delete: restore the old value (set(old)).
        inverse.emplace_back(e.variable, old[i]);
      }
    }
    State restored = current.with(inverse);
    // Mechanism 2: the pre-action state from the recorded values, and the inverse from its
    // difference with the current state.
    std::vector<std::pair<VarId, Value>> recorded;
    recorded.reserve(n);
    for (std::size_t i = 0; i < n; ++i) recorded.emplace_back(a.effects[i].variable, old[i]);
    const State before = current.with(recorded);
    std::vector<std::pair<VarId, Value>> by_diff;
    for (VarId id : before.diff(current)) by_diff.emplace_back(id, before.get(id));
    const State restored_by_diff = current.with(by_diff);
    // T7: both mechanisms give exactly the pre-action state.
    CLAMPAI_ALWAYS_ASSERT(restored == before);
    CLAMPAI_ALWAYS_ASSERT(restored_by_diff == before);

    TraceEntry entry;
    entry.kind = EntryKind::rolled_back;
    entry.action = a.id;
    entry.principal = std::string(principal);
    entry.params = detail::named_params(
        a, {values.begin() + 3 * static_cast<std::ptrdiff_t>(n), values.end()});
    entry.changes = named(*model_, inverse);
    entry.cost = model_->format_amount(u.cost);
    entry.emergency = a.emergency;
    BudgetController budget_after = budget_;
    budget_after.refund(u.cost);  // exactly that action's cost, once: its undo record is consumed
    // The refund returns to every pool level too, with the chain held until it is applied.
    // The entry records every level's figures after it (on resume, as recorded).
    std::optional<PoolTree::Chain> chain;
    if (pool_ && u.cost > 0) {
      chain.emplace(*options_.pools, *pool_, model_->budget.scale);
      refunds = chain->plan_refund(u.cost);  // throws with nothing changed
      entry.pools = pool_levels(refunds);
    } else if (resume_pools_ != nullptr) {
      entry.pools = *resume_pools_;
    }
    undone.approved = true;
    undone.action = u.action;
    undone.cost = u.cost;
    undone.emergency = a.emergency;
    undone.changes = std::move(inverse);
    // Stores the entry's line; may throw with nothing changed.
    append_locked(entry, steps_, emergency_steps_, budget_after, options_.writer ? &line : nullptr);
    sequence = entry.sequence;

    // Commit: nothing below throws.
    if (chain) chain->apply(refunds);
    budget_ = budget_after;
    completions_[u.action].store(completions_[u.action].load(std::memory_order_relaxed) - 1,
                                 std::memory_order_release);  // after the entry
    state_ = before;
    for (const auto& change : undone.changes) k.last_write[change.first] = sequence;
    k.pop_undo_back();
    k.trim(options_.trace_window);
    after = state_;
  }
  if (options_.writer) write_line(sequence, std::move(line));
  return Outcome{std::move(undone), std::nullopt, std::move(*after), std::move(refunds)};
}

Decision SafetyKernel::plan_compensation(std::uint64_t sequence) const {
  std::lock_guard lock(mutex_);
  std::size_t record = 0;
  return plan_compensation_locked(sequence, record);
}

// The one computation of a compensation's inverse (compensate, plan_compensation, and through
// them a resumed trace, TraceReplay and a SharedKernel's replica).
Decision SafetyKernel::plan_compensation_locked(std::uint64_t sequence, std::size_t& record) const {
  const Impl& k = *impl_;
  const std::string entry_name = "trace entry " + std::to_string(sequence);
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("cannot compensate " + entry_name + ": " + why);
  };
  if (sealed_) throw refuse("the kernel is sealed");
  // The undo records are in sequence order: the step's, if it is kept.
  const auto it =
      std::lower_bound(k.undo.begin(), k.undo.end(), sequence, [](const Undo& u, std::uint64_t s) {
        return u.sequence < s;
      });
  if (it == k.undo.end() || it->sequence != sequence) {
    if (k.undo_dropped > 0 && (k.undo.empty() || sequence < k.undo.front().sequence))
      throw refuse("its undo record was dropped (only the last " +
                   std::to_string(options_.undo_depth) +
                   " committed actions are kept: KernelOptions::undo_depth)");
    throw refuse(
        "it is not a committed action in effect (not an executed entry, or rolled "
        "back)");
  }
  const Undo& u = *it;
  if (u.compensated_by != 0)
    throw refuse("it was compensated already, by entry " + std::to_string(u.compensated_by));
  const Action& a = model_->actions[u.action];
  if (!a.reversible)
    throw refuse("action `" + a.id + "` is declared irreversible (neither rolled back nor " +
                 "compensated)");
  record = static_cast<std::size_t>(it - k.undo.begin());
  const std::size_t n = a.effects.size();
  const std::vector<Value> values = k.undo_values(record, 3 * n + a.parameters.size());
  const Value* operands = values.data();
  const Value* old = operands + n;
  const Value* written = old + n;
  const Value* params = written + n;
  Decision d;
  d.action = u.action;
  d.cost = u.cost;
  d.emergency = a.emergency;
  for (std::size_t i = 0; i < n; ++i) {
    const Effect& e = a.effects[i];
    const Variable& var = model_->variables[e.variable];
    const Value& now = state_.get(e.variable);
    if (e.mode == EffectMode::increment || e.mode == EffectMode::decrement) {
      // The opposite change by the amount the step applied, whatever came after.
      if (now.kind() != Value::Kind::number)
        throw refuse("`" + var.name + "` is " + now.to_string() + " now, not a number");
      const auto r = e.mode == EffectMode::increment
                         ? checked_sub(now.as_number(), operands[i].as_number())
                         : checked_add(now.as_number(), operands[i].as_number());
      Value v = r ? Value::number(*r) : Value();
      if (!r || !detail::normalise(var.type, v))
        throw refuse("undoing its " + std::string(to_string(e.mode)) + " of `" + var.name +
                     "` overflows");
      d.changes.emplace_back(e.variable, std::move(v));
    } else {
      // Any other effect is undone only where nothing wrote its variable since.
      if (k.last_write[e.variable] != sequence)
        throw refuse("its `" + std::string(to_string(e.mode)) + "` of `" + var.name +
                     "` cannot be inverted: entry " + std::to_string(k.last_write[e.variable]) +
                     " wrote `" + var.name + "` after it");
      CLAMPAI_ALWAYS_ASSERT(now == written[i]);
      d.changes.emplace_back(e.variable, old[i]);
    }
  }
  // The compensated state, checked as a step's post-state is (T3).
  detail::check_post_state(*model_, state_, params, d, k.flat.data());
  if (!d.reasons.empty()) {
    std::string why;
    for (const Reason& r : d.reasons) why += (why.empty() ? "" : "; ") + r.message;
    throw refuse("the compensated state is refused: " + why);
  }
  d.approved = true;
  return d;
}

Outcome SafetyKernel::compensate(std::uint64_t sequence, std::string_view principal) {
  std::string line;
  std::uint64_t at = 0;
  Decision undone;
  std::optional<State> after;
  std::vector<PoolCharge> refunds;  // what the compensation returned to each pool level
  {
    std::lock_guard lock(mutex_);
    Impl& k = *impl_;
    std::size_t record = 0;
    undone = plan_compensation_locked(sequence, record);
    const Action& a = model_->actions[undone.action];
    TraceEntry entry;
    entry.kind = EntryKind::compensated;
    entry.action = a.id;
    entry.principal = std::string(principal);
    entry.params.emplace_back("compensates", Value::integer(static_cast<std::int64_t>(sequence)));
    entry.changes = named(*model_, undone.changes);
    entry.cost = model_->format_amount(undone.cost);
    entry.emergency = a.emergency;
    entry.warnings = undone.warnings;
    State next = state_.with(undone.changes);
    BudgetController budget_after = budget_;
    budget_after.refund(undone.cost);  // once: the record is marked compensated below
    // The refund returns to every pool level, as a rollback's (with the chain held).
    std::optional<PoolTree::Chain> chain;
    if (pool_ && undone.cost > 0) {
      chain.emplace(*options_.pools, *pool_, model_->budget.scale);
      refunds = chain->plan_refund(undone.cost);  // throws with nothing changed
      entry.pools = pool_levels(refunds);
    } else if (resume_pools_ != nullptr) {
      entry.pools = *resume_pools_;
    }
    // Stores the entry's line; may throw with nothing changed.
    append_locked(entry, steps_, emergency_steps_, budget_after, options_.writer ? &line : nullptr);
    at = entry.sequence;

    // Commit: nothing below throws.
    if (chain) chain->apply(refunds);
    budget_ = budget_after;
    completions_[undone.action].store(
        completions_[undone.action].load(std::memory_order_relaxed) - 1,
        std::memory_order_release);  // after the entry
    state_ = std::move(next);
    k.undo[record].compensated_by = at;
    k.barrier = at;
    for (const auto& change : undone.changes) k.last_write[change.first] = at;
    k.trim(options_.trace_window);
    after = state_;
  }
  if (options_.writer) write_line(at, std::move(line));
  return Outcome{std::move(undone), std::nullopt, std::move(*after), std::move(refunds)};
}

namespace {
// Why a rollback in a replayed trace finds no action to undo: none left, or only actions
// older than the undo records kept (`dropped` of them were let go).
std::string rollback_past(std::uint64_t dropped, std::size_t depth) {
  if (dropped == 0) return "a rollback with nothing to roll back";
  return "a rollback of an action older than the last " + std::to_string(depth) +
         " committed actions, whose undo records are all that is kept (the undo depth)";
}

[[noreturn]] void resume_failed(std::size_t entry, const std::string& why) {
  throw InvalidArgument("cannot continue the trace: entry " + std::to_string(entry) + ": " + why);
}
}  // namespace

void SafetyKernel::start_after_spec_change(SpecChange change) {
  if (!change.from) throw InvalidArgument("a spec change needs the spec it changes from");
  auto carried = carry_situation(*change.from, change.situation, *model_);
  if (auto* problems = std::get_if<std::vector<std::string>>(&carried)) {
    std::string why;
    for (const std::string& p : *problems) why += (why.empty() ? "" : "; ") + p;
    throw InvalidArgument("entry " + std::to_string(change.sequence) +
                          ": the spec change cannot carry the state over: " + why);
  }
  Carried& c = std::get<Carried>(carried);
  state_ = std::move(c.situation.state);
  budget_ = c.situation.budget;
  steps_ = c.situation.steps;
  emergency_steps_ = c.situation.emergency_steps;
  for (std::size_t i = 0; i < model_->actions.size(); ++i)
    completions_[i].store(c.situation.completions[i], std::memory_order_relaxed);
  if (change.prev.size() != 64) throw InvalidArgument("a spec change needs the hash it links to");
  // The chain continues: the store starts at the entry's sequence, after the given hash.
  // `published` and `hashed` count lines by sequence number (the ring's places, the lines
  // rendered ahead): they start there too.
  impl_->first_sequence = change.sequence;
  impl_->published.store(change.sequence, std::memory_order_relaxed);
  impl_->hashed.store(change.sequence, std::memory_order_relaxed);
  impl_->seen_hashed = change.sequence;
  std::memcpy(impl_->last_hash, change.prev.data(), 64);
  std::memcpy(impl_->before_first, change.prev.data(), 64);
  TraceEntry entry;
  entry.kind = EntryKind::spec_changed;
  entry.params.emplace_back("from", Value::string(change.from->digest));
  entry.changes = std::move(c.added);
  entry.cost = model_->format_amount(0);
  entry.spec = model_->digest;
  entry.state = state_digest(state_);
  entry.principal = change.principal;
  const bool write = options_.writer && !change.recorded;
  auto clock = options_.clock;
  if (change.recorded) {
    const std::int64_t at = change.recorded->time_us;
    options_.clock = [at] { return at; };
  }
  std::string line;
  {
    std::lock_guard lock(mutex_);
    append_locked(entry, steps_, emergency_steps_, budget_, write ? &line : nullptr);
  }
  options_.clock = std::move(clock);
  if (change.recorded && entry.hash != change.recorded->hash)
    throw InvalidArgument("entry " + std::to_string(change.sequence) +
                          ": the spec change does not replay to the recorded entry (another "
                          "state, spend or spec than recorded)");
  if (write) write_line(change.sequence, std::move(line));
}

void SafetyKernel::resume(const std::function<bool(TraceEntry&)>& next, bool continued) {
  // Continued after a spec change (start_after_spec_change): no genesis; the entries' indices
  // are their sequence numbers.
  const std::size_t first = continued ? impl_->next_sequence() : 1;
  TraceEntry genesis;
  if (!continued) {
    if (!next(genesis)) resume_failed(0, "the trace to continue is empty");
    if (genesis.kind != EntryKind::genesis) resume_failed(0, "not a genesis entry");
    if (genesis.spec != model_->digest) resume_failed(0, "the trace was written for another spec");
    if (genesis.state != state_digest(state_))
      resume_failed(0, "the initial state differs from the spec's");
    if (genesis.prev != kZeroHash || genesis.sequence != 0 ||
        genesis.compute_hash() != genesis.hash)
      resume_failed(0, "the genesis entry is not intact");
  }
  // Replayed without the writer (the entries are in the file already) and without the guard
  // (its vetoes are kept as recorded), under the recorded timestamps: each entry must come out
  // byte for byte as it was written, so the chain continues from the recorded hashes.
  std::shared_ptr<TraceWriter> writer = std::move(options_.writer);
  auto guard = std::move(options_.guard);
  auto commit_gate = std::move(options_.commit_gate);
  auto clock = std::move(options_.clock);
  auto signer = std::move(options_.signer);  // recorded signatures are kept as they are
  options_.signer = nullptr;
  const bool record = options_.record_rejections;
  options_.writer = nullptr;
  options_.guard = nullptr;
  options_.commit_gate = nullptr;
  options_.record_rejections = false;
  std::int64_t now = genesis.time_us;
  options_.clock = [&now] { return now; };
  if (!continued) {
    std::lock_guard lock(mutex_);
    TraceEntry entry = genesis;
    append_locked(entry, 0, 0, budget_, nullptr);
    if (impl_->head_hash() != genesis.hash) resume_failed(0, "the genesis entry is not intact");
  }
  // The receipts of the actions that can still be rolled back (`undo_depth`: older ones can
  // not), most recent last.
  std::deque<Receipt> receipts;
  std::uint64_t dropped = 0;
  TraceEntry e;
  for (std::size_t i = first; next(e); ++i) {
    now = e.time_us;
    std::string bad;
    // An attestation's params are not an action's: its own shape is checked below.
    const std::optional<ParamMap> params =
        e.kind == EntryKind::attested ? ParamMap{} : recorded_params(e, bad);
    if (!params) resume_failed(i, "parameter `" + bad + "` is not a number");
    switch (e.kind) {
      case EntryKind::genesis:
        resume_failed(i, "a second genesis entry");
      case EntryKind::sealed:
        resume_failed(i, "the trace is sealed: nothing may follow a seal (start a new trace)");
      case EntryKind::spec_changed:
        resume_failed(i,
                      "the spec was changed here: a trace spanning several specs is continued "
                      "with all of them (continue_trace)");
      case EntryKind::executed: {
        // A shadow step (`enforced: false`) is followed as it was, whatever the decision.
        auto resolved = kernel::resolve(
            *model_, e.action, *params, e.enforced ? ParamCheck::checked : ParamCheck::fitted);
        if (auto* r = std::get_if<Reason>(&resolved)) resume_failed(i, r->message);
        Proposal& p = std::get<Proposal>(resolved);
        p.principal = e.principal;
        resume_pools_ = &e.pools;  // the pools are not charged on replay: kept as recorded
        const Outcome o = e.enforced ? execute(p) : execute_unenforced(p).outcome;
        resume_pools_ = nullptr;
        if (!o.receipt) resume_failed(i, "`" + e.action + "` is rejected on replay");
        receipts.push_back(*o.receipt);
        if (options_.undo_depth > 0 && receipts.size() > options_.undo_depth) {
          receipts.pop_front();
          ++dropped;
        }
        break;
      }
      case EntryKind::attested:
        if (auto why = malformed_attestation(e)) resume_failed(i, *why);
        [[fallthrough]];
      case EntryKind::checkpoint:
      case EntryKind::approval_requested:
      case EntryKind::approval_granted:
      case EntryKind::approval_denied:
      case EntryKind::approval_expired:
      case EntryKind::rejected: {
        // A rejection (an attestation) changes nothing but the trace: kept as recorded once it
        // links (a shadow step not followed too: `trace verify --spec` checks it could not be).
        std::lock_guard lock(mutex_);
        impl_->settle();
        if (e.sequence != impl_->next_sequence() || e.prev != impl_->head_hash() ||
            e.compute_hash() != e.hash)
          resume_failed(i, "does not link to the entry before");
        TraceEntry kept = e;
        append_locked(kept, steps_, emergency_steps_, budget_, nullptr);
        break;
      }
      case EntryKind::compensated: {
        const std::optional<std::uint64_t> step = compensated_step(e);
        if (!step) resume_failed(i, "a compensation without its step (`compensates`)");
        try {
          resume_pools_ = &e.pools;
          (void)compensate(*step, e.principal);
          resume_pools_ = nullptr;
        } catch (const InvalidArgument& err) {
          resume_pools_ = nullptr;
          resume_failed(i, err.what());
        }
        break;
      }
      case EntryKind::rolled_back:
        if (receipts.empty()) resume_failed(i, rollback_past(dropped, options_.undo_depth));
        try {
          resume_pools_ = &e.pools;
          (void)rollback(receipts.back(), e.principal);
          resume_pools_ = nullptr;
        } catch (const InvalidArgument& err) {
          resume_pools_ = nullptr;
          resume_failed(i, err.what());
        }
        receipts.pop_back();
        break;
    }
    bool same = false;
    {
      std::lock_guard lock(mutex_);
      impl_->settle();
      same = impl_->head_hash() == e.hash;
      impl_->trim(options_.trace_window);
    }
    if (!same) resume_failed(i, "does not replay to the recorded entry");
  }
  options_.writer = std::move(writer);
  options_.guard = std::move(guard);
  options_.commit_gate = std::move(commit_gate);
  options_.clock = std::move(clock);
  options_.signer = std::move(signer);
  options_.record_rejections = record;
}

TraceEntry SafetyKernel::seal() {
  std::string line;
  TraceEntry sealed;
  {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the trace is already sealed");
    TraceEntry entry;
    entry.kind = EntryKind::sealed;
    entry.cost = model_->format_amount(0);
    entry.state = state_digest(state_);
    append_locked(entry, steps_, emergency_steps_, budget_, options_.writer ? &line : nullptr);
    sealed_ = true;
    sealed = std::move(entry);
    impl_->trim(options_.trace_window);
  }
  if (options_.writer) {
    write_line(sealed.sequence, std::move(line));
    options_.writer->close();
  }
  return sealed;
}

State SafetyKernel::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

BudgetController SafetyKernel::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

std::uint64_t SafetyKernel::steps() const {
  std::lock_guard lock(mutex_);
  return steps_;
}

std::uint64_t SafetyKernel::emergency_steps() const {
  std::lock_guard lock(mutex_);
  return emergency_steps_;
}

std::uint64_t SafetyKernel::completions(std::size_t index) const {
  std::lock_guard lock(mutex_);
  if (index >= model_->actions.size())
    throw InvalidArgument("no action with index " + std::to_string(index));
  return completions_[index].load(std::memory_order_relaxed);
}

bool SafetyKernel::goal_reached() const { return model_->goal_holds(state()); }

bool SafetyKernel::is_sealed() const {
  std::lock_guard lock(mutex_);
  return sealed_;
}

std::vector<TraceEntry> SafetyKernel::trace() const {
  std::unique_ptr<Impl::View> view;
  {
    std::lock_guard lock(mutex_);
    view = impl_->view(options_.trace_window);
  }
  std::vector<TraceEntry> out;
  out.reserve(view->size());
  for (std::size_t from = 0; from < view->size(); from += Impl::View::kBatch) {
    view->render(*impl_, from, std::min(view->size(), from + Impl::View::kBatch));
    for (const auto& l : view->lines()) out.push_back(detail::entry_from_line(l.text, "the trace"));
  }
  return out;
}

std::uint64_t SafetyKernel::trace_length() const {
  std::lock_guard lock(mutex_);
  return impl_->next_sequence();
}

std::string SafetyKernel::head_hash() const {
  std::lock_guard lock(mutex_);
  impl_->settle();
  return std::string(impl_->head_hash());
}

TraceCheck SafetyKernel::verify_trace() const {
  std::unique_ptr<Impl::View> view;
  {
    std::lock_guard lock(mutex_);
    view = impl_->view(options_.trace_window);
  }
  return view->verify(*impl_);
}

struct TraceReplay::Impl {
  Impl(std::shared_ptr<const TaskModel> m, std::size_t depth)
      : model(std::move(m)),
        kernel(std::make_unique<SafetyKernel>(model, options(depth))),
        undo_depth(depth) {}

  static KernelOptions options(std::size_t depth) {
    KernelOptions o;
    o.trace_window = 1;  // its own entries are not needed: only its state and counters
    o.undo_depth = depth;
    return o;
  }

  std::shared_ptr<const TaskModel> model;
  std::unique_ptr<SafetyKernel> kernel;  // on `model`
  std::size_t undo_depth;
  std::deque<Receipt> receipts;  // of the actions that can still be rolled back, latest last
  std::uint64_t dropped = 0;     // receipts let go with their undo records
  std::size_t entries = 0;
  SpecsByDigest specs{};  // set_specs
  OpenTickets tickets;    // each answered at most once, across spec changes too
};

TraceReplay::TraceReplay(std::shared_ptr<const TaskModel> model, std::size_t undo_depth)
    : impl_(std::make_unique<Impl>(std::move(model), undo_depth)) {}

TraceReplay::~TraceReplay() = default;

std::size_t TraceReplay::entries() const { return impl_->entries; }

State TraceReplay::state() const { return impl_->kernel->state(); }

void TraceReplay::set_specs(SpecsByDigest specs) { impl_->specs = std::move(specs); }

std::optional<std::string> TraceReplay::add(const TraceEntry& e) {
  const std::size_t i = impl_->entries++;
  if (i == 0 && e.kind == EntryKind::genesis && e.spec != impl_->model->digest && impl_->specs) {
    // A trace spanning several specs starts with the one of its genesis entry.
    if (auto m = impl_->specs(e.spec)) {
      impl_->kernel = std::make_unique<SafetyKernel>(m, Impl::options(impl_->undo_depth));
      impl_->model = std::move(m);
    }
  }
  if (e.kind == EntryKind::spec_changed && i > 0) {
    std::shared_ptr<const TaskModel> next = impl_->specs ? impl_->specs(e.spec) : nullptr;
    if (!next)
      return "the spec was changed here to digest " + e.spec.substr(0, 12) +
             "...: give that spec too (trace verify --spec, repeatable, or a directory)";
    SpecChange change{.from = impl_->model,
                      .situation = impl_->kernel->situation(),
                      .sequence = e.sequence,
                      .prev = e.prev,
                      .principal = e.principal,
                      .recorded = e};
    KernelOptions o = Impl::options(impl_->undo_depth);
    o.spec_change = std::move(change);
    try {
      impl_->kernel = std::make_unique<SafetyKernel>(next, std::move(o));
    } catch (const InvalidArgument& err) {
      return std::string(err.what());
    }
    impl_->model = std::move(next);
    impl_->receipts.clear();  // nothing before a spec change can be rolled back after it
    impl_->dropped = 0;
    return std::nullopt;
  }
  const TaskModel& model = *impl_->model;
  SafetyKernel& kernel = *impl_->kernel;
  if (i == 0) {
    if (e.kind != EntryKind::genesis) return "the trace does not start with a genesis entry";
    if (e.spec != model.digest) {
      return "the trace was written for another spec (digest " + e.spec.substr(0, 12) +
             "..., this spec is " + model.digest.substr(0, 12) + "...)";
    }
    if (e.state != state_digest(kernel.state())) return "the initial state differs from the spec's";
    return std::nullopt;
  }
  auto text = [](const std::vector<std::pair<std::string, Value>>& values) {
    std::vector<std::pair<std::string, Value>> sorted = values;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.first < b.first;
    });
    std::string out;
    for (const auto& [k, v] : sorted) {
      out += k + "=";
      detail::append_value(out, v);
      out += ";";
    }
    return out;
  };
  std::string bad;
  const std::optional<ParamMap> recorded =
      e.kind == EntryKind::attested ? ParamMap{} : recorded_params(e, bad);
  if (!recorded) return "parameter `" + bad + "` is not a number";
  const ParamMap& params = *recorded;
  switch (e.kind) {
    case EntryKind::genesis:
      return "a second genesis entry";
    case EntryKind::executed: {
      // A shadow step (`enforced: false`) is followed whatever the kernel decides; a would-be
      // approval (no reasons recorded) must still be one.
      bool would_approve = true;
      Outcome o = e.enforced ? kernel.execute(e.action, params) : [&] {
        ShadowStep shadow = kernel.execute_unenforced(e.action, params);
        would_approve = shadow.would_be.approved;
        return std::move(shadow.outcome);
      }();
      if (!e.enforced) {
        if (!o.receipt) return "`" + e.action + "` cannot be followed on replay";
        if (e.reasons.empty() && !would_approve)
          return "`" + e.action +
                 "` was recorded as a step the kernel would approve, but it is rejected on "
                 "replay";
      } else if (!o.decision.approved) {
        return "`" + e.action + "` is rejected on replay";
      }
      if (text(e.changes) != text(named(model, o.decision.changes)))
        return "`" + e.action + "` changes other values on replay";
      if (e.cost != model.format_amount(o.decision.cost))
        return "`" + e.action + "` costs " + model.format_amount(o.decision.cost) + " on replay";
      impl_->receipts.push_back(*o.receipt);
      if (impl_->undo_depth > 0 && impl_->receipts.size() > impl_->undo_depth) {
        impl_->receipts.pop_front();
        ++impl_->dropped;
      }
      break;
    }
    case EntryKind::rejected: {
      // A guard's veto (the lookahead) is not the model's verdict: a replaying kernel has no
      // guard, and a rejection changes nothing, so it is accepted as recorded. A budget pool's
      // refusal likewise: the pool is shared with other tasks whose charges the trace does not
      // hold, so a replay never decides a pool check from that partial view.
      if (!e.reasons.empty() &&
          std::all_of(e.reasons.begin(), e.reasons.end(), [](const Reason& r) {
            return is_guard_reason(r.code) || r.subject.rfind("pool:", 0) == 0;
          }))
        break;
      const Decision d = kernel.evaluate(e.action, params);
      if (d.approved)
        return "`" + e.action + "` was recorded as rejected but is approved on replay";
      if (!e.enforced) {
        // A shadow step recorded as not followed: what it does must not compute.
        auto fitted = kernel::resolve(model, e.action, params, ParamCheck::fitted);
        Amount cost = 0;
        Changes changes;
        if (auto* p = std::get_if<Proposal>(&fitted);
            p != nullptr && preview_into(model, kernel.state(), *p, cost, changes) && cost >= 0)
          return "`" + e.action +
                 "` was recorded as a shadow step that could not be followed, but it can on "
                 "replay";
      }
      break;
    }
    case EntryKind::rolled_back: {
      if (impl_->receipts.empty()) return rollback_past(impl_->dropped, impl_->undo_depth);
      try {
        Outcome o = kernel.rollback(impl_->receipts.back(), e.principal);
        if (text(e.changes) != text(named(model, o.decision.changes)))
          return std::string("the rollback restores other values on replay");
      } catch (const InvalidArgument& err) {
        return std::string(err.what());
      }
      impl_->receipts.pop_back();
      break;
    }
    case EntryKind::compensated: {
      const std::optional<std::uint64_t> step = compensated_step(e);
      if (!step) return std::string("a compensation without its step (`compensates`)");
      try {
        Outcome o = kernel.compensate(*step, e.principal);
        if (e.action != model.actions[o.decision.action].id)
          return "the compensation of entry " + std::to_string(*step) + " is of `" +
                 model.actions[o.decision.action].id + "` on replay";
        if (text(e.changes) != text(named(model, o.decision.changes)))
          return std::string("the compensation changes other values on replay");
        if (e.cost != model.format_amount(o.decision.cost))
          return "the compensation refunds " + model.format_amount(o.decision.cost) + " on replay";
      } catch (const InvalidArgument& err) {
        return std::string(err.what());
      }
      break;
    }
    case EntryKind::attested:
      // What an attestor saw is not the model's to decide; the entry changes nothing (the
      // counters below must not move).
      if (auto why = malformed_attestation(e)) return *why;
      if (!e.action.empty() && !model.find_action(e.action))
        return "an attestation of unknown action `" + e.action + "`";
      break;
    case EntryKind::checkpoint:
    case EntryKind::approval_requested:
    case EntryKind::approval_granted:
    case EntryKind::approval_denied:
    case EntryKind::approval_expired:
      // Notes change nothing (the counters below must not move); what they name must exist,
      // and a ticket is answered at most once.
      if (!e.action.empty() && !model.find_action(e.action))
        return "a `" + std::string(to_string(e.kind)) + "` entry of unknown action `" + e.action +
               "`";
      if (std::optional<std::string> refused = impl_->tickets.refusal(e)) return refused;
      impl_->tickets.note(e);
      break;
    case EntryKind::spec_changed:
      return std::string("a spec change at entry 0");
    case EntryKind::sealed:
      if (e.state != state_digest(kernel.state()))
        return std::string("the final state differs from the sealed one");
      break;
  }
  if (e.step != kernel.steps() || e.emergency_steps != kernel.emergency_steps())
    return std::string("step counters differ on replay");
  const BudgetController b = kernel.budget();
  if (e.gross != model.format_amount(b.gross()) || e.net != model.format_amount(b.net()))
    return std::string("budget differs on replay");
  return std::nullopt;
}

std::optional<std::pair<std::size_t, std::string>> replay_trace(
    std::shared_ptr<const TaskModel> model,
    const std::vector<TraceEntry>& entries,
    State* final_state) {
  if (entries.empty())
    return std::pair<std::size_t, std::string>{0, "the trace does not start with a genesis entry"};
  TraceReplay replay(std::move(model), /*undo_depth=*/0);
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (auto why = replay.add(entries[i])) return std::pair<std::size_t, std::string>{i, *why};
  if (final_state != nullptr) *final_state = replay.state();
  return std::nullopt;
}

TraceCheck replay_stream(TraceReader& reader,
                         TraceReplay& replay,
                         const std::function<void(const TraceEntry&, const TraceReplay&)>& visit,
                         bool* mismatched) {
  TraceEntry entry;
  while (reader.next(entry)) {
    if (auto mismatch = replay.add(entry)) {
      const std::size_t at = replay.entries() - 1;
      TraceCheck check;
      check.ok = false;
      check.entries = at;
      check.first_bad = at;
      check.message = "entry " + std::to_string(at) + ": replay: " + *mismatch;
      if (mismatched != nullptr) *mismatched = true;
      return check;
    }
    if (visit) visit(entry, replay);
  }
  return reader.finish();
}

}  // namespace clampai::kernel
