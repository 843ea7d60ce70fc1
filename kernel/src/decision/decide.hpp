// The decision's private interface (internal to the kernel library): decide_at, the one
// concrete decision (decision/decide.cpp), and what SafetyKernel shares with it.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "numeric_program.hpp"

namespace clampai::kernel::detail {

inline Reason reason(ReasonCode code, std::string subject, std::string message) {
  return Reason{code, std::move(subject), std::move(message)};
}

// Normalises a computed value to a variable's type (numbers to its scale). False on overflow.
bool normalise_slow(const Type& type, Value& v);
inline bool normalise(const Type& type, Value& v) {
  // The common case inline: a number already at its variable's scale, nothing to do.
  if (v.kind() == Value::Kind::number && type.is_numeric() && v.as_number().scale == type.scale())
    return true;
  return normalise_slow(type, v);
}

// Checks one parameter value against its declaration; returns the normalised value. Without
// `bounds`, only that it is a number that fits its type (ParamCheck::fitted).
std::optional<Reason> check_param(const Parameter& p, Value& v, bool bounds = true);

// `preview_into`, also keeping each effect's evaluated value in `operands` (if given; the undo
// record's, as `decide_at` keeps them).
bool preview_at(const TaskModel& model,
                const State& state,
                const Proposal& p,
                Amount& cost,
                Changes& changes,
                std::vector<Value>* operands);

// Completion counts per action: a situation's, or the kernel's (read without its lock).
struct CompletionsRef {
  const std::uint64_t* plain = nullptr;
  const std::atomic<std::uint64_t>* shared = nullptr;
  std::uint64_t operator[](std::size_t i) const {
    // Acquire: a count newer than a snapshot comes with the entry that moved the head.
    return plain != nullptr ? plain[i] : shared[i].load(std::memory_order_acquire);
  }
};

// Every check of SafetyKernel::evaluate, on an explicit situation (T1, T2, T3, T8).
void decide_at(const TaskModel& model,
               const State& state,
               const BudgetController& budget,
               std::uint64_t steps,
               CompletionsRef completions,
               const Proposal& p,
               Decision& d,
               std::vector<Value>* operands = nullptr,
               const detail::FlatComparison* flat = nullptr);

// Checks 9 and 10 (declared bounds, invariants) of the post-state `state` patched by
// `d.changes`, `old(x)` reading `state` and expressions reading `params` (the action's
// parameter values; may be null if none): adds a reason per bound or blocking invariant broken
// and a warning per monitoring invariant. `decide_at`'s, and a compensation's.
void check_post_state(const TaskModel& model,
                      const State& state,
                      const Value* params,
                      Decision& d,
                      const detail::FlatComparison* flat = nullptr);

// Check 4b, pools (decision/pools.cpp): with the task's pool chain held, the rejection naming
// the first level, from the task's own pool up to the root, that cannot take `cost`
// (`budget_exceeded`, subject `pool:NAME`); nullopt if every level can. The kernel asks it of
// every approved decision that costs something, and again at commit with the chain held until
// the charge is applied, so the check and the charge are one atomic step at every level.
std::optional<Reason> pool_check(const TaskModel& model, const PoolTree::Chain& chain, Amount cost);
// The rejection `pool_check` gives when pool `name` (remaining budget and total as decimal
// text) cannot take `cost`: also the shared ledger's (ledger.cpp), whose pools are rows.
Reason pool_refusal(const TaskModel& model,
                    const std::string& name,
                    Amount cost,
                    const std::string& remaining,
                    const std::string& total);

}  // namespace clampai::kernel::detail
