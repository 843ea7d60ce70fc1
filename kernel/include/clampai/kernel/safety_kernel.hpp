// The safety kernel (Layer 0): decides whether each proposed action may execute, and commits
// approved ones atomically, with an integer budget, invariants and a hash-chained trace.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/mutex.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/kernel/trace_reader.hpp"

namespace clampai::kernel {

/// Parameter values by name, as an agent proposes them.
using ParamMap = std::vector<std::pair<std::string, Value>>;

/// A resolved proposal: an action index and one value per declared parameter, normalised.
struct Proposal {
  std::size_t action = 0;
  std::vector<Value> params{};
  /// Who proposes it (a server's principal), recorded in the trace entries it causes; empty:
  /// nobody named (the entries have no `principal` member). Never part of the decision.
  std::string principal{};
};

/// Where a kernel stands, or a search imagines one to stand: the state and the counters every
/// check reads. A value: copying it is cheap (the state is persistent).
struct Situation {
  State state;
  BudgetController budget;
  std::uint64_t steps = 0;
  std::uint64_t emergency_steps = 0;
  std::vector<std::uint64_t> completions{};  // per action: executions minus undone ones

  /// A fresh kernel's situation: the initial state, nothing spent, no steps.
  static Situation initial(const TaskModel& model);
};

/// A situation carried from one spec to another (a reload behind proofs, docs/SERVE.md): each
/// variable of the new spec that the old one declares with the same type keeps its value, one
/// the new spec adds starts at its initial value, one it drops is dropped; the spend, the step
/// counters and each action's completions (by id) carry over.
struct Carried {
  Situation situation;                                 // in the new spec's terms
  std::vector<std::pair<std::string, Value>> added{};  // the variables added, at their initial
  std::vector<std::string> dropped{};                  // the variables dropped
};

/// Carries `situation`, a situation of `from`, over to `to`; else says why it cannot, one line
/// per problem: a variable whose type changes, a value outside the new bounds (or deleted
/// where the new spec does not allow it), a blocking invariant of `to` the carried state
/// violates (naming it), a spend the new budget cannot hold (or at another scale), more steps
/// than the new step limit, a budget pool on either side (not carried yet).
[[nodiscard]] std::variant<Carried, std::vector<std::string>> carry_situation(
    const TaskModel& from, const Situation& situation, const TaskModel& to);

/// Where a kernel continues another kernel's chain with another spec (KernelOptions::
/// spec_change): instead of a genesis entry, its first entry is a `spec_changed` entry
/// (docs/SPEC.md, 13) that links to the entry before, and its situation is `situation` carried
/// over (`carry_situation`). Undo records do not carry over: nothing committed before a spec
/// change can be rolled back after it.
struct SpecChange {
  std::shared_ptr<const TaskModel> from{};  // the spec in force before
  Situation situation;                      // where its kernel stood
  std::uint64_t sequence = 0;               // the `spec_changed` entry's
  std::string prev{};                       // the hash of the entry before it
  std::string principal{};                  // who changed the spec (recorded)
  /// When a trace is continued: the entry as recorded, which the kernel's must equal byte for
  /// byte (it is not written again); empty: a new entry, written to the writer.
  std::optional<TraceEntry> recorded{};
};

/// Options of a kernel.
struct KernelOptions {
  /// Append rejected proposals passed to `execute` to the trace (they change nothing else).
  bool record_rejections = false;
  /// Microseconds since the epoch, for trace timestamps; defaults to the system clock.
  std::function<std::int64_t()> clock;
  /// Refuse to start from an initial state that violates a blocking invariant or a bound
  /// (T3's base case). Only tools that evaluate arbitrary states (the verifier's counterexample
  /// replay) turn this off; such a kernel is not for running tasks.
  bool check_initial_state = true;
  /// Where to persist the trace as it grows (JSON Lines); may be null.
  std::shared_ptr<TraceWriter> writer{};
  /// How many trace entries the kernel keeps in memory (0: all of them, the default). With a
  /// window of W, `trace()` and `verify_trace()` see only the last W entries (so no genesis
  /// once more than W entries exist, and `replay_trace` needs the writer's file); the chain
  /// itself is unbroken (every new entry links to the hash of the one before). Meant for long
  /// runs that persist the trace through `writer`: memory then stays bounded.
  std::size_t trace_window = 0;
  /// How many committed actions `rollback` can undo, most recent first (0: all of them, the
  /// default). What rollback needs is kept per committed action: the values of the variables
  /// it wrote before and after it, and its effects' operands; older records are dropped, and
  /// rolling back past them is an InvalidArgument naming this limit. Bounds memory on long runs
  /// together with `trace_window`.
  std::size_t undo_depth = 0;
  /// A trace to continue instead of starting one (an unsealed trace of this model, e.g. read
  /// with `read_trace_file` and checked with `verify_chain`): the kernel replays it with its
  /// recorded timestamps to its last state and counters (and undo records), keeps its entries,
  /// and hands `writer` only the entries after them (open it with `TraceOpen::append` and
  /// `continue_from(resume.size())`). Empty: start with a genesis entry.
  std::vector<TraceEntry> resume{};
  /// The same as `resume`, one entry at a time (used when `resume` is empty): each call fills
  /// the next entry of the trace to continue and returns true, or returns false after the last
  /// (a `TraceReader`'s `next`, clampai/kernel/trace_reader.hpp): a trace of any length is
  /// continued in the memory `trace_window` and `undo_depth` bound. What it throws leaves the
  /// constructor. Empty: start with a genesis entry (unless `resume` is set).
  std::function<bool(TraceEntry&)> resume_from{};
  /// Continue another kernel's chain with this kernel's spec (a reload): see `SpecChange`.
  /// With `resume_from`, the entries after the `spec_changed` one are then replayed. Not with
  /// `resume`.
  std::optional<SpecChange> spec_change{};
  /// Hash the entries `execute` appends after the call returns, in order, on a background
  /// thread the kernel starts when entries wait (true, the default), or by the threads that
  /// call `execute` (false: after its commit, outside the kernel's lock, each hashes the entries
  /// that wait, its own among them, unless another thread is at it, which then hashes them or
  /// leaves the ones published meanwhile to the next call; so threads sharing a kernel commit
  /// while one hashes, and a single thread's entry is hashed before `execute` returns). The
  /// chain is the same byte for byte (T6):
  /// everything that reads the trace (`trace`, `verify_trace`, `seal`, every other entry)
  /// first waits until every entry before it is hashed. With a `writer`, entries are always
  /// hashed before `execute` returns (the writer gets complete lines).
  bool defer_hash = true;
  /// Consulted, under the kernel's lock, after every decision that approves a non-emergency
  /// action (by `evaluate`, `evaluate_in` and `execute`); a returned reason turns the decision
  /// into a rejection with that reason, so `execute` stays atomic (T5). Rollbacks, compensations
  /// and emergency actions are never vetoed. `driver::lookahead_guard` is one (driver library).
  /// Must not call back into the kernel. May be empty.
  std::function<std::optional<Reason>(const Situation&, const Proposal&, const Decision&)> guard;
  /// Consulted only by `execute`, under the kernel's lock, when it would commit a non-emergency
  /// action (after `guard`, on the same situation). Unlike `guard` it may act on the world: the
  /// reference monitor runs the action's attestations here. Each record it adds to `records`
  /// is appended to the trace as an `attested` entry (`attestation_entry`) before the
  /// decision's own entry, whether it vetoes or not (they change nothing else). A returned
  /// reason turns the decision into a rejection, as for `guard`. Not consulted on resume, by
  /// `evaluate` or by a shared ledger's commit. Must not call back into the kernel. May be empty.
  std::function<std::optional<Reason>(
      const Situation&, const Proposal&, const Decision&, std::vector<AttestationRecord>& records)>
      commit_gate;
  /// The pools of this process (clampai/kernel/pools.hpp), shared by every kernel whose model's
  /// budget names one of them (`Budget::pool`): such a kernel binds itself to its pool when it
  /// is made, and then commits a charge only if it fits its own budget and every level from its
  /// pool up to the root (rejected otherwise: `budget_exceeded` with subject `pool:NAME`); a
  /// rollback refunds every level. Ignored when the model names no pool; a model that names
  /// one is run without pool checks when this is null (the CLI refuses that).
  std::shared_ptr<PoolTree> pools{};
  /// Signs the seal and every `checkpoint` entry as it is appended: given the entry's
  /// `signed_bytes()` (its canonical JSON without `hash` and `signature`), returns the
  /// signature (hex) that becomes its `signature` member. Called under the kernel's lock; a
  /// throw leaves the trace as it was. Empty: entries are not signed. Not called on resume.
  std::function<std::string(std::string_view)> signer{};
};

/// What `resolve` checks of the values given: `checked`, what a decision requires (each a
/// number that fits its type's scale and lies within its bounds; normalised to that scale),
/// `as_given`, nothing (`clampai repair`: out-of-bounds values are what a repair is for), or
/// `fitted`, each a number that fits its type's scale (normalised), its bounds not checked
/// (shadow mode, `SafetyKernel::execute_unenforced`: a step out of bounds is still followed).
enum class ParamCheck : std::uint8_t { checked, as_given, fitted };
/// Resolves an action id and named parameters on `model` (defaults fill missing ones). Returns
/// the reason it cannot instead: an unknown action, an unknown or missing parameter, and when
/// `checked`, an invalid value. `SafetyKernel::resolve` is this, checked.
[[nodiscard]] std::variant<Proposal, Reason> resolve(const TaskModel& model,
                                                     std::string_view action_id,
                                                     const ParamMap& params = {},
                                                     ParamCheck check = ParamCheck::checked);

/// The kernel's decision on `proposal` in `situation`: exactly the checks of
/// `SafetyKernel::evaluate`, in the same order. No side effects.
[[nodiscard]] Decision decide(const TaskModel& model,
                              const Situation& situation,
                              const Proposal& proposal);
/// The same decision into `out` (every field replaced), reusing its vectors' capacity: for
/// searches that decide many times, without an allocation per decision.
void decide_into(const TaskModel& model,
                 const Situation& situation,
                 const Proposal& proposal,
                 Decision& out);
/// The same decision on a situation given by its parts (`completions`: one count per action of
/// the model), for searches that keep their situations in their own storage.
void decide_into(const TaskModel& model,
                 const State& state,
                 const BudgetController& budget,
                 std::uint64_t steps,
                 const std::uint64_t* completions,
                 const Proposal& proposal,
                 Decision& out);

/// Where `proposal` would lead from `state` if the kernel approved it: the cost and the changes
/// that `decide_into` would put in `Decision::cost` and `Decision::changes`, computed the same
/// way (the same code) but without a single check (no budget, parameter bound, guard, variable
/// bound or invariant is looked at), for a search that needs to know whether an approved step
/// would lead somewhere it has already been. False when they cannot be computed (an unknown
/// action, the wrong number of parameters, a cost or an effect that cannot be evaluated: the
/// kernel would reject the proposal); then `cost` and `changes` are unspecified. It says
/// nothing of whether the proposal is approved.
bool preview_into(const TaskModel& model,
                  const State& state,
                  const Proposal& proposal,
                  Amount& cost,
                  Changes& changes);

/// The situation after committing an approved decision: its changes applied, its cost charged,
/// the step (or emergency step) and the completion counted, as `SafetyKernel::execute` does.
/// @throws InvalidArgument if `decision` is not approved.
[[nodiscard]] Situation advance(const TaskModel& model,
                                const Situation& situation,
                                const Decision& decision);

/// Proof that an action was committed; pass it to `rollback`.
struct Receipt {
  std::uint64_t sequence = 0;  // the trace entry of the execution
  std::size_t action = 0;
  Amount cost = 0;
};

/// What `execute` and `rollback` did.
struct Outcome {
  Decision decision{};               // for rollback: approved, with the restored variables
  std::optional<Receipt> receipt{};  // set iff something was committed by `execute`
  State state;                       // the kernel's state afterwards
  /// What the commit (the rollback) charged (refunded) at each level of the task's pool, from
  /// its own pool up to the root; empty without pools or for a cost of 0.
  std::vector<PoolCharge> pools{};
};

/// What `SafetyKernel::execute_unenforced` did (shadow mode).
struct ShadowStep {
  /// What `execute` would have decided on the same call, on the same state.
  Decision would_be{};
  /// What was done: when committed (`receipt` set), an approved decision with the cost charged
  /// and the changes applied (the would-be warnings kept); otherwise `would_be` (nothing
  /// changed: what the step does could not be computed).
  Outcome outcome;
};

class SafetyKernel;

/// A kernel's decision on a proposal together with the head it was made on
/// (`SafetyKernel::decide`): `SafetyKernel::execute(Decided)` commits it as decided while that
/// head is still the kernel's, and decides afresh only if the head moved, so a chooser's
/// decision is not made twice. Read-only: only the kernel that made it can commit it.
class Decided {
 public:
  [[nodiscard]] const Proposal& proposal() const noexcept { return proposal_; }
  [[nodiscard]] const Decision& decision() const noexcept { return decision_; }

 private:
  friend class SafetyKernel;
  Decided(const SafetyKernel* kernel, Proposal proposal, State state)
      : kernel_(kernel), proposal_(std::move(proposal)), state_(std::move(state)) {}
  const SafetyKernel* kernel_ = nullptr;  // the kernel that decided
  Proposal proposal_;
  Decision decision_;
  State state_;                    // the state decided on
  std::uint64_t head_ = 0;         // the trace's next sequence number then
  std::uint64_t guard_epoch_ = 0;  // the guard consulted (SafetyKernel::set_guard counts)
  std::vector<Value> operands_{};  // the effects' values (the undo record's)
};

/// The runtime safety kernel. Owns the current state, the budget ledger, the step counters and
/// the trace. Thread-safe: every public member takes one internal lock. `execute` is optimistic,
/// as a database commits: it takes a snapshot of the head (state, counters, trace position)
/// under the lock, decides on it without the lock, and commits under the lock if the head is
/// still the one it decided on, deciding again under the lock on the current head otherwise; so
/// what it commits was decided on the state it changes (T5), and threads decide in parallel. The
/// lock is not held while the trace file is written. A kernel made before a `fork()` must not
/// be used in the child: its background hasher thread (KernelOptions::defer_hash) is not copied.
///
/// Guarantees (docs/THEOREMS.md): T1 net spend <= budget; T2 at most `step_limit()` non-emergency
/// steps; T3 blocking invariants hold in every reached state; T4 gross spend never decreases;
/// T5 a rejected action changes nothing; T6 the trace is hash-chained; T7 rollback restores the
/// exact pre-action state; T8 emergency actions pass the min-cost and step-limit checks.
class SafetyKernel {
 public:
  /// Starts a kernel in the model's initial state and writes the genesis trace entry.
  /// @throws InvalidArgument if the initial state violates a blocking invariant or a bound
  /// (T3's base case), naming it; nothing is written then. With `options.resume`: also if the
  /// trace is sealed, or written for another model, or an entry does not replay to itself byte
  /// for byte, naming the entry.
  explicit SafetyKernel(std::shared_ptr<const TaskModel> model, KernelOptions options = {});
  ~SafetyKernel();
  SafetyKernel(const SafetyKernel&) = delete;
  SafetyKernel& operator=(const SafetyKernel&) = delete;

  /// Resolves an action id and named parameters (defaults fill missing ones).
  /// Returns the reason it cannot (unknown action, invalid parameter) instead.
  [[nodiscard]] std::variant<Proposal, Reason> resolve(std::string_view action_id,
                                                       const ParamMap& params = {}) const;

  /// Decides whether the proposal may execute now. No side effects.
  /// Checks, in order: min cost, budget, step limit, dependencies, `requires`, effects
  /// (overflow, undefined reads), bounds, invariants; every failing check is listed.
  [[nodiscard]] Decision evaluate(const Proposal& proposal) const;
  /// The same, by id; an unknown id or bad parameter is a rejection, not an exception.
  [[nodiscard]] Decision evaluate(std::string_view action_id, const ParamMap& params = {}) const;
  /// The same checks against `state` instead of the current state (budget, steps and
  /// dependencies are the kernel's). Requires `state` to have the model's schema.
  [[nodiscard]] Decision evaluate_in(const State& state, const Proposal& proposal) const;

  /// Evaluates and, if approved, commits atomically under one lock: charges the cost, counts
  /// the step, appends the trace entry and moves to the new state (T5). A rejection changes
  /// nothing (it is traced when `record_rejections`).
  /// @throws TraceError if the trace file cannot be written (the commit has happened).
  /// @throws InvalidArgument, with nothing changed, if the approved cost would take gross spend
  /// out of the int64 range (`BudgetController::charge`; only after rollbacks near the limit).
  Outcome execute(const Proposal& proposal);
  /// The same, by id.
  Outcome execute(std::string_view action_id, const ParamMap& params = {});
  /// `evaluate`, keeping the head the decision is made on, for `execute(Decided)`.
  [[nodiscard]] Decided decide(const Proposal& proposal) const;
  /// `execute` of a decision this kernel made (`decide`): if nothing was appended to the trace
  /// since (the head is unchanged) and the guard was not replaced, commits it without deciding
  /// again (the commit gate is still consulted); else decides afresh on the current head, as
  /// `execute` does. A decision of another kernel is decided afresh.
  Outcome execute(Decided decided);
  /// True iff `decided` was made by this kernel on its current head with its current guard:
  /// `execute(decided)` would commit it as decided (for a `SharedKernel` over its replica).
  [[nodiscard]] bool is_current(const Decided& decided) const;
  /// Shadow mode: decides `proposal` exactly as `execute` would (the guard and the pools
  /// consulted, the commit gate not: it may act on the world) and commits what the proposal
  /// does whatever the decision: its effects applied, its cost charged even past the budget,
  /// the step counted even past the step limit, the state left as it is even if it breaks a
  /// blocking invariant or a bound. The theorems T1-T3 are not enforced for such a step (T4-T7
  /// still hold; T8 is moot); its trace entry, `executed`, carries `enforced: false` and the
  /// would-be rejection's reasons in `reasons`. When what it does cannot be computed (its cost
  /// or an effect overflows or reads an undefined value, or the cost is negative), nothing is
  /// committed and a `rejected` entry with `enforced: false` records it. Always traced (record
  /// or not). The result says what would have been decided, and what was done (a receipt
  /// `rollback` takes as any other). Not on a kernel bound to a budget
  /// pool (it would overdraw the tasks that share it). The one decision is `decide_at`'s.
  /// @throws InvalidArgument if the kernel is sealed or bound to a pool; TraceError as `execute`.
  ShadowStep execute_unenforced(const Proposal& proposal);
  /// The same by id, its parameters resolved `ParamCheck::fitted` (a parameter out of its
  /// bounds is followed; a would-be rejection says so); what does not resolve (an unknown
  /// action or parameter, a value that does not fit) is a `rejected` entry with `enforced:
  /// false`, nothing committed.
  ShadowStep execute_unenforced(std::string_view action_id, const ParamMap& params = {});
  /// For drivers that screen proposals with `evaluate`: evaluates `proposal` and, if it is
  /// rejected and the kernel records rejections, appends the rejected entry as `execute` would.
  /// Never commits anything. Returns the decision.
  /// @throws TraceError if the trace file cannot be written.
  Decision record_rejection(const Proposal& proposal);
  /// Replaces the guard (`KernelOptions::guard`; an empty function removes it): decisions
  /// made after this returns consult the new one. Takes the kernel's lock. For host programs
  /// that add checks to a running kernel (the Python bindings' `add_precondition`); a kernel
  /// without a guard decides without building the guard's Situation.
  void set_guard(decltype(KernelOptions::guard) guard);
  /// True iff rejected proposals are traced (`KernelOptions::record_rejections`).
  [[nodiscard]] bool records_rejections() const noexcept { return options_.record_rejections; }

  /// Appends `entry`, an `attested` entry (`attestation_entry`), with the kernel's counters,
  /// budget and time: an attestation's result (the goal's, or one replayed from a ledger).
  /// Changes nothing but the trace. Returns the entry as appended.
  /// @throws InvalidArgument if `entry` is not a well-formed attested entry (naming what is
  /// wrong) or the kernel is sealed; TraceError if the trace file cannot be written.
  TraceEntry record_attested(TraceEntry entry);

  /// Appends `entry`, an entry that changes nothing but the trace (`is_note`: `attested`,
  /// `checkpoint`, `approval_*`), with the kernel's counters, budget and time. Keeps its
  /// `action` (empty, or an action of the model), `params`, `reasons`, `principal` and
  /// `ticket`; a `checkpoint` is signed by `KernelOptions::signer` if there is one. Returns the
  /// entry as appended.
  /// @throws InvalidArgument if `entry` is of another kind, names an unknown action, is a
  /// malformed attestation, or the kernel is sealed; TraceError if the trace cannot be written.
  TraceEntry record_note(TraceEntry entry);

  /// Undoes the most recent committed action (T7): restores the exact pre-action state,
  /// computed both by the algebraic inverse of the declared effects and by the state
  /// difference (they must agree), refunds that action's cost once, and appends a trace entry.
  /// Step counters are not decreased (T2 is not loosened).
  /// @throws InvalidArgument if `receipt` is not the most recent committed action still in
  /// effect (the state is not the one that action produced), or the action is not reversible.
  /// `principal`: who asks (a server's principal), recorded in the entry; empty: nobody named.
  Outcome rollback(const Receipt& receipt, std::string_view principal = {});

  /// Compensation (docs/THEOREMS.md, "Compensation"): undoes the committed action of trace
  /// entry `sequence`, which need not be the latest, by the exact inverse of its effects applied
  /// to the current state, and appends a `compensated` entry naming it. The exact inverse, per
  /// effect: an `increment`/`decrement` by the amount the step applied is undone by the opposite
  /// change of that amount, whatever came after; any other effect (`set`, `multiply`, `append`,
  /// `remove`, `delete`) only if no later entry wrote its variable (even one rolled back since),
  /// which then returns to its value before the step. The compensated state is checked as a
  /// step's post-state is (bounds, invariants; `old(x)` reads the state before the
  /// compensation). Refunds the step's cost once (net spend down, gross kept; every level of
  /// the task's pool, as rollback does); decreases the action's completions; step counters are
  /// not decreased (T2 is not loosened). A step is compensated at most once, never after it
  /// was rolled back; and once a compensation is appended, nothing committed before it can be
  /// rolled back (the state is no longer the one those actions produced). Emergency actions
  /// are compensated as any other (their cost is 0); non-reversible ones never.
  /// @throws InvalidArgument, with nothing changed, naming why when the step cannot be
  /// compensated: the kernel is sealed; the entry is not a committed action in effect (never
  /// one, rolled back, already compensated, or its undo record dropped: `undo_depth`); the
  /// action is irreversible; an effect is not invertible (naming the variable and the later
  /// entry that wrote it); the inverse overflows or reads an undefined value; the compensated
  /// state would break a bound or a blocking invariant (naming it).
  Outcome compensate(std::uint64_t sequence, std::string_view principal = {});
  /// The same for `receipt`'s step.
  Outcome compensate(const Receipt& receipt, std::string_view principal = {}) {
    return compensate(receipt.sequence, principal);
  }
  /// What `compensate(sequence)` would do now, without doing it: an approved decision with the
  /// step's action, its cost (the refund), and the inverse changes (the variables' values
  /// after), with the monitoring invariants it would break as warnings. For a `SharedKernel`,
  /// which commits the entry to its ledger. @throws InvalidArgument as `compensate` does.
  [[nodiscard]] Decision plan_compensation(std::uint64_t sequence) const;

  /// Appends the seal entry (final state digest). Nothing can be executed afterwards.
  /// @throws InvalidArgument if already sealed.
  TraceEntry seal();

  [[nodiscard]] const TaskModel& model() const noexcept { return *model_; }
  [[nodiscard]] const std::shared_ptr<const TaskModel>& model_ptr() const noexcept {
    return model_;
  }
  [[nodiscard]] State state() const;
  /// The state and every counter, taken together under the lock.
  [[nodiscard]] Situation situation() const;
  [[nodiscard]] BudgetController budget() const;
  [[nodiscard]] std::uint64_t steps() const;
  [[nodiscard]] std::uint64_t emergency_steps() const;
  [[nodiscard]] std::int64_t step_limit() const noexcept { return model_->budget.step_limit; }
  /// How many times action `index` has completed (executions minus rollbacks and
  /// compensations).
  [[nodiscard]] std::uint64_t completions(std::size_t index) const;
  /// True iff the model has a goal and the current state satisfies it.
  [[nodiscard]] bool goal_reached() const;
  [[nodiscard]] bool is_sealed() const;
  /// A copy of the trace so far (the last `trace_window` entries when that option is set),
  /// parsed back from the canonical lines the kernel keeps (an executed entry's rendered from
  /// its compact record): values read as from a trace file (`read_trace_file`), so a
  /// non-integral decimal comes back as its decimal text.
  [[nodiscard]] std::vector<TraceEntry> trace() const;
  /// The number of entries appended so far (including any dropped from memory by the window).
  [[nodiscard]] std::uint64_t trace_length() const;
  /// The hash of the last entry appended (what the next one links to).
  [[nodiscard]] std::string head_hash() const;
  /// Verifies the in-memory trace (an unsealed trace is accepted): each kept line's SHA-256
  /// (an executed entry's line rendered from its compact record, with the hash stored for it
  /// and the one before as `prev`) against its stored hash, the links and the sequence. With a
  /// window, from its first entry.
  [[nodiscard]] TraceCheck verify_trace() const;

 private:
  struct Undo;
  struct Impl;
  /// The head a decision is made on: the state and counters, and the trace's next sequence
  /// number, which every change of any of them moves (each appends an entry).
  struct Snapshot {
    State state;
    BudgetController budget;
    std::uint64_t steps = 0;
    std::uint64_t head = 0;
  };
  // Under the lock: the head as it is now.
  [[nodiscard]] Snapshot snapshot_locked() const;
  // Under the lock: `plan_compensation`, and the index of the step's undo record in `record`.
  [[nodiscard]] Decision plan_compensation_locked(std::uint64_t sequence,
                                                  std::size_t& record) const;
  // The one commit path of `execute` (optimistic, as a database's compare-and-set on its head):
  // under the lock, if the head is still `at`'s (nothing was appended since the snapshot that
  // `decision` was made on), consults the guard, appends the entry and commits an approval
  // (or traces a rejection); if the head moved, decides again under the lock on the current
  // head and commits that (a retry on a fresh snapshot would meet the same race). `operands`
  // are the effects' values from the decision (the undo record's).
  // `guarded`: the guard epoch at which `decision` consulted the guard (decide), if it did;
  // then, on an unchanged head and guard, the guard is not consulted again.
  Outcome commit_if_head_unchanged(const Snapshot& at,
                                   const Proposal& proposal,
                                   Decision&& decision,
                                   std::vector<Value>& operands,
                                   std::optional<std::uint64_t> guarded = std::nullopt);
  // `evaluate` under the lock; `operands`, if given, gets the effects' values (`decide`).
  Decision evaluate_locked(const State& state,
                           const Proposal& proposal,
                           std::vector<Value>* operands = nullptr) const;
  // Completes `entry` (sequence, link, the given counters, time), hashes it and appends its
  // canonical line to the in-memory log (may throw before anything changes: T5). If `line`,
  // it gets the line for the writer.
  void append_locked(TraceEntry& entry,
                     std::uint64_t steps,
                     std::uint64_t emergency_steps,
                     const BudgetController& budget,
                     std::string* line);
  // Appends `bytes`, a canonical line without its hash member, as a line of the chain, hashed
  // before it returns. If `line`, it gets the whole line for the writer.
  void store_line_locked(EntryKind kind,
                         std::string_view bytes,
                         std::size_t hash_at,
                         std::size_t prev_at,
                         std::string* line);
  // If `line` (which has room for it): the last line published, hashed first.
  void copy_last_line_locked(std::string* line) noexcept;
  void write_line(std::uint64_t sequence, std::string line);
  // Appends a `rejected` entry with `enforced: false` (shadow mode: the step could not be
  // followed) and returns the step. Requires the lock; `line` as append_locked.
  ShadowStep unenforced_rejection_locked(TraceEntry entry, Decision&& decision, std::string* line);
  // The commit of a step of action `action` whose entry is appended: the budget, the step
  // counters, the completions, the state, the undo window. Never throws. Requires the lock.
  void commit_step_locked(std::uint64_t sequence,
                          std::size_t action,
                          bool emergency,
                          const BudgetController& budget_after,
                          const Changes& changes,
                          State&& next) noexcept;
  // Replays the entries `next` gives (KernelOptions::resume, resume_from) into this fresh
  // kernel; `continued`: after a spec change (no genesis entry).
  void resume(const std::function<bool(TraceEntry&)>& next, bool continued = false);
  // Carries `change.situation` over and appends (or replays) the `spec_changed` entry that
  // continues the chain (KernelOptions::spec_change).
  void start_after_spec_change(SpecChange change);

  std::shared_ptr<const TaskModel> model_;
  KernelOptions options_;
  mutable Mutex mutex_;  // spins briefly, then sleeps: commits are short
  // INVARIANT (state-valid): state_ satisfies every bound and blocking invariant (T3).
  State state_;
  // INVARIANT (budget-safe): see BudgetController (T1, T4).
  BudgetController budget_;
  std::uint64_t steps_ = 0;  // INVARIANT (step-bound): steps_ <= model_->budget.step_limit (T2)
  std::uint64_t emergency_steps_ = 0;
  // Per action; written under the lock, read without it by decisions on a snapshot (a read
  // newer than the snapshot moves the head, so such a decision is never committed).
  std::unique_ptr<std::atomic<std::uint64_t>[]> completions_;
  // The trace (executed entries as compact records, other entries as their canonical lines)
  // and the undo records in chunked, reused storage, and the buffers every step reuses.
  // INVARIANT (chain): each line's `prev` is the hash of the line before (T6).
  std::unique_ptr<Impl> impl_;
  bool sealed_ = false;
  std::uint64_t guard_epoch_ = 0;  // under the lock: how many times set_guard replaced the guard
  // The pool the kernel is bound to in `options_.pools` (none: no pool checks).
  std::optional<std::size_t> pool_{};
  // While `resume` replays an entry: the pool figures it recorded, kept in the entry it makes.
  const std::vector<PoolLevel>* resume_pools_ = nullptr;
};

/// Checks that `entries` replay through a fresh kernel for `model`: every executed entry is
/// approved again with the same changes and cost, every rollback applies, every recorded
/// rejection is rejected again, and the seal's state digest matches (`TraceReplay`, with every
/// undo record kept). Returns the index and reason of the first mismatch, or nullopt;
/// `final_state` gets the state reached.
std::optional<std::pair<std::size_t, std::string>> replay_trace(
    std::shared_ptr<const TaskModel> model,
    const std::vector<TraceEntry>& entries,
    State* final_state = nullptr);

/// The specs a trace spanning several may need, by digest (SHA-256 hex of the model): null
/// when there is none of that digest.
using SpecsByDigest = std::function<std::shared_ptr<const TaskModel>(std::string_view digest)>;

/// Continues a trace that may span several specs (KernelOptions::resume_from gives its
/// entries): a kernel for the spec of its genesis entry (`specs`), then at each `spec_changed`
/// entry a kernel for the new spec continuing from the one before (`SpecChange`, recorded),
/// each replaying its entries. `visit`, if set, sees each entry before it is replayed, with
/// the spec in force after it. Returns the last kernel (on the spec in force at the end), with
/// `options` (its writer gets the entries appended after the trace).
/// @throws InvalidArgument naming the entry if a spec is not found, or an entry does not
/// replay (as `SafetyKernel`'s constructor).
std::unique_ptr<SafetyKernel> continue_trace(
    const SpecsByDigest& specs,
    KernelOptions options,
    const std::function<void(const TaskModel&, const TraceEntry&)>& visit = {});

/// The undo records a `TraceReplay` keeps by default: those of the last 1024 committed
/// actions, as many as `clampai run` and the server keep for rollback.
inline constexpr std::size_t default_replay_undo_depth = 1024;

/// `replay_trace` entry by entry, for a trace read as it streams: keeps a kernel's state and
/// counters and the undo records of the last `undo_depth` committed actions (0: all of them),
/// and no entry, so its memory is of the order of the largest state plus that depth, whatever
/// the trace's length. A rollback of an older action is a mismatch naming the depth.
class TraceReplay {
 public:
  /// @throws InvalidArgument if the model's initial state breaks a blocking invariant.
  explicit TraceReplay(std::shared_ptr<const TaskModel> model,
                       std::size_t undo_depth = default_replay_undo_depth);
  ~TraceReplay();
  TraceReplay(const TraceReplay&) = delete;
  TraceReplay& operator=(const TraceReplay&) = delete;
  /// Replays the next entry (entry number `entries()`, from 0): nullopt if it replays, else
  /// why not (then nothing more should be added).
  std::optional<std::string> add(const TraceEntry& entry);
  /// Replays a trace spanning several specs: at a `spec_changed` entry, the replay continues
  /// with the spec of its digest (`carry_situation`); without `specs` (or a spec of that
  /// digest) such an entry is a mismatch naming the digest. At the genesis entry, a spec of
  /// its digest from `specs` is taken if the one given is another.
  void set_specs(SpecsByDigest specs);
  /// How many entries were added.
  [[nodiscard]] std::size_t entries() const;
  /// The state reached.
  [[nodiscard]] State state() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Replays what `reader` hands out, entry by entry, through `replay` (as `clampai trace verify
/// --spec` does, for a file or a ledger): the one loop over a streamed trace and its replay.
/// After each entry replays, `visit` (if any) sees it with the replay (whose state is then the
/// state after it). Stops at the first mismatch: the verdict is then not ok, `first_bad` the
/// entry and the message `entry N: replay: WHY`, and `*mismatched` (if given) is set; else the
/// verdict is the reader's (`finish`: the chain, read to its end).
/// @throws TraceError if the trace cannot be read (as `TraceReader` does).
TraceCheck replay_stream(
    TraceReader& reader,
    TraceReplay& replay,
    const std::function<void(const TraceEntry&, const TraceReplay&)>& visit = {},
    bool* mismatched = nullptr);

/// The SHA-256 (hex) of a state's canonical JSON: an object from variable name to value.
std::string state_digest(const State& state);

}  // namespace clampai::kernel
