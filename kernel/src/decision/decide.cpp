// The decision: decide_at, every check of SafetyKernel::evaluate on an explicit situation, and
// the public functions that decide without a kernel (decide, decide_into, preview_into,
// advance).
#include "decide.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "clampai/kernel/error.hpp"

namespace clampai::kernel {

using detail::check_param;
using detail::decide_at;
using detail::normalise;
using detail::reason;

namespace {

const char* eval_error_text(EvalError e) {
  return e == EvalError::overflow ? "arithmetic overflow" : "an undefined variable was read";
}

}  // namespace

bool detail::normalise_slow(const Type& type, Value& v) {
  if (v.kind() == Value::Kind::number && type.is_numeric()) {
    if (v.as_number().scale == type.scale()) return true;
    auto r = v.as_number().rescaled(type.scale());
    if (!r) return false;
    v = Value::number(*r);
  } else if (v.kind() == Value::Kind::list && type.element() != nullptr &&
             type.element()->is_numeric()) {
    Value::List items = v.as_list();
    for (auto& item : items) {
      if (!normalise(*type.element(), item)) return false;
    }
    v = Value::list(std::move(items));
  }
  return true;
}

// Checks one parameter value against its declaration; returns the normalised value.
std::optional<Reason> detail::check_param(const Parameter& p, Value& v, bool bounds) {
  if (v.kind() != Value::Kind::number) {
    return reason(ReasonCode::invalid_parameter,
                  p.name,
                  "parameter `" + p.name + "` must be a number, got " + v.to_string());
  }
  auto r = v.as_number().rescaled(p.type.scale());
  if (!r) {
    return reason(
        ReasonCode::invalid_parameter,
        p.name,
        "parameter `" + p.name + "` = " + v.to_string() + " does not fit " + p.type.to_string());
  }
  if (bounds && p.min && *r < *p.min) {
    return reason(ReasonCode::invalid_parameter,
                  p.name,
                  "parameter `" + p.name + "` = " + r->to_string() + " is below its minimum " +
                      p.min->to_string());
  }
  if (bounds && p.max && *r > *p.max) {
    return reason(ReasonCode::invalid_parameter,
                  p.name,
                  "parameter `" + p.name + "` = " + r->to_string() + " is above its maximum " +
                      p.max->to_string());
  }
  v = Value::number(*r);
  return std::nullopt;
}

namespace {

// Why effect `e` cannot be computed: `err` on its variable.
[[gnu::noinline]] Reason effect_failure(const TaskModel& m, const Effect& e, EvalError err) {
  const Variable& var = m.variables[e.variable];
  return reason(err == EvalError::overflow ? ReasonCode::overflow : ReasonCode::undefined_value,
                var.name,
                "effect `" + std::string(to_string(e.mode)) + "` on `" + var.name +
                    "`: " + eval_error_text(err));
}

// Every effect but a numeric set, increment, decrement or multiply (`apply_effect`'s general
// path, out of line).
[[gnu::noinline]] std::optional<Reason> apply_general_effect(
    const TaskModel& m, const Effect& e, const EvalEnv& pre, Value& out, Value* operand) {
  const Variable& var = m.variables[e.variable];
  const Value& old = pre.state->get(e.variable);
  if (e.mode == EffectMode::del) {
    out = Value();
    return std::nullopt;
  }
  EvalResult r = kernel::evaluate(*e.value, pre);
  if (!r.ok()) return effect_failure(m, e, r.error);
  if (operand != nullptr) *operand = r.value;
  if (e.mode != EffectMode::set && !old.is_defined())
    return effect_failure(m, e, EvalError::undefined);
  switch (e.mode) {
    case EffectMode::set:
      out = std::move(r.value);
      break;
    case EffectMode::increment:
    case EffectMode::decrement:
    case EffectMode::multiply: {
      const Decimal& a = old.as_number();
      const Decimal& b = r.value.as_number();
      const auto n = e.mode == EffectMode::increment   ? checked_add(a, b)
                     : e.mode == EffectMode::decrement ? checked_sub(a, b)
                                                       : checked_mul(a, b);
      if (!n) return effect_failure(m, e, EvalError::overflow);
      out = Value::number(*n);
      break;
    }
    case EffectMode::append: {
      Value::List items = old.as_list();
      items.push_back(std::move(r.value));
      out = Value::list(std::move(items));
      break;
    }
    case EffectMode::remove: {
      Value::List items = old.as_list();
      const auto it = std::find(items.begin(), items.end(), r.value);
      if (it != items.end()) items.erase(it);
      out = Value::list(std::move(items));
      break;
    }
    case EffectMode::del:
      break;
  }
  if (!normalise(var.type, out)) return effect_failure(m, e, EvalError::overflow);
  return std::nullopt;
}

// Effect application on the pre-action state (a parallel assignment). Fills `out` with the new
// value, or returns the reason it cannot be computed. The numeric path (nearly every effect)
// is inline in both of its callers (a decision and a preview); the rest is out of line.
[[gnu::always_inline]] inline std::optional<Reason> apply_effect(
    const TaskModel& m, const Effect& e, const EvalEnv& pre, Value& out, Value* operand) {
  // `operand`, when asked for, gets the effect's evaluated value (what rollback inverts).
  // Numeric effects (the common case) compute their operand without a `Value` per node; the
  // result and the errors are those of the general path, in the same order.
  if (e.mode == EffectMode::del || !e.value->type.is_numeric() ||
      (e.mode != EffectMode::set && e.mode != EffectMode::increment &&
       e.mode != EffectMode::decrement && e.mode != EffectMode::multiply))
    return apply_general_effect(m, e, pre, out, operand);
  const Variable& var = m.variables[e.variable];
  const Value& old = pre.state->get(e.variable);
  // A literal operand (`+ 1`, the usual effect) is read where the parser put it: through a
  // copy just written, the CPU would stall reading back its one-byte scale.
  Decimal computed;
  const Decimal* operand_value = &computed;
  if (e.value->op == ExprOp::literal) {
    operand_value = &e.value->literal.as_number();
  } else if (const EvalError err = evaluate_number(*e.value, pre, computed);
             err != EvalError::none) {
    return effect_failure(m, e, err);
  }
  const Decimal& b = *operand_value;
  if (operand != nullptr) *operand = Value::number(b);
  if (e.mode == EffectMode::set) {
    out = Value::number(b);
  } else {
    if (!old.is_defined()) return effect_failure(m, e, EvalError::undefined);
    const Decimal& a = old.as_number();
    const auto n = e.mode == EffectMode::increment   ? checked_add(a, b)
                   : e.mode == EffectMode::decrement ? checked_sub(a, b)
                                                     : checked_mul(a, b);
    if (!n) return effect_failure(m, e, EvalError::overflow);
    out = Value::number(*n);
  }
  if (!normalise(var.type, out)) return effect_failure(m, e, EvalError::overflow);
  return std::nullopt;
}

}  // namespace

namespace {

// The cost of an action with a cost expression, evaluated in `pre`, at the budget's scale:
// false if that overflows or cannot be evaluated (out of line: most costs are constants).
[[gnu::noinline]] bool evaluated_cost(const TaskModel& model,
                                      const Action& a,
                                      const EvalEnv& pre,
                                      Amount& cost) {
  const EvalResult r = kernel::evaluate(*a.cost_expr, pre);
  std::optional<Decimal> scaled;
  if (r.ok()) scaled = r.value.as_number().rescaled(model.budget.scale);
  if (!scaled) return false;
  cost = scaled->units;
  return true;
}

// The cost of action `a` in `pre` at the budget's scale (its constant, or its expression
// evaluated): false if that overflows or cannot be evaluated.
[[gnu::always_inline]] inline bool action_cost(const TaskModel& model,
                                               const Action& a,
                                               const EvalEnv& pre,
                                               Amount& cost) {
  cost = a.cost;
  return !a.cost_expr || evaluated_cost(model, a, pre, cost);
}

// The end of check 10 for invariant `inv`, which did not hold as an expression (`err`: why it
// could not be evaluated) or is a native predicate: the predicate is called on the post-state
// (built once, in `post_state`), and a failure is added to `d` (a blocking invariant's as a
// reason, a monitoring one's as a warning). Out of line: the loop over the invariants that
// hold keeps its registers.
[[gnu::noinline]] void invariant_failure(const Invariant& inv,
                                         EvalError err,
                                         const State& state,
                                         std::optional<State>& post_state,
                                         Decision& d) {
  bool holds = false;
  bool raised = false;  // a native predicate threw: `invariant_error`
  std::string why;
  if (inv.expr) {
    if (err != EvalError::none) why = std::string(" (") + eval_error_text(err) + ")";
  } else {
    if (!post_state) post_state = state.with(d.changes);
    try {
      holds = inv.predicate(*post_state);
    } catch (const std::exception& e) {
      raised = true;
      why = std::string(" (the predicate threw: ") + e.what() + ")";
    } catch (...) {
      raised = true;
      why = " (the predicate threw)";
    }
  }
  if (holds) return;
  std::string message = "invariant `" + inv.name + "` would be violated" + why;
  if (!inv.description.empty()) message += ": " + inv.description;
  if (!inv.suggestion.empty()) message += " (suggestion: " + inv.suggestion + ")";
  if (inv.enforcement == Enforcement::blocking) {
    d.reasons.push_back(
        reason(raised ? ReasonCode::invariant_error : ReasonCode::invariant_violated,
               inv.name,
               std::move(message)));
  } else {
    d.warnings.push_back(
        reason(raised ? ReasonCode::invariant_error : ReasonCode::monitoring_violated,
               inv.name,
               std::move(message)));
  }
}

}  // namespace

// Checks 9 and 10 of the decision on the post-state `state` patched by `d.changes` (`old(x)`
// reads `state`): a reason per bound or blocking invariant broken, a warning per monitoring
// invariant. The decision's, and a compensation's (SafetyKernel::compensate) on its inverse.
void detail::check_post_state(const TaskModel& model,
                              const State& state,
                              const Value* params,
                              Decision& d,
                              const detail::FlatComparison* flat) {
  // 9. Declared bounds of each written variable (T3): min or max, or max_length; one reason
  //    per variable at most (step.cpp 9, `declared_bounds`).
  for (const auto& [id, v] : d.changes) {
    const Variable& var = model.variables[id];
    if (v.kind() == Value::Kind::number) {
      if (var.min && v.as_number() < *var.min) {
        d.reasons.push_back(reason(ReasonCode::bound_violated,
                                   var.name,
                                   "`" + var.name + "` would be " + v.to_string() +
                                       ", below its minimum " + var.min->to_string()));
      } else if (var.max && v.as_number() > *var.max) {
        d.reasons.push_back(reason(ReasonCode::bound_violated,
                                   var.name,
                                   "`" + var.name + "` would be " + v.to_string() +
                                       ", above its maximum " + var.max->to_string()));
      }
    } else if (v.kind() == Value::Kind::list && var.max_length &&
               static_cast<std::int64_t>(v.as_list().size()) > *var.max_length) {
      d.reasons.push_back(
          reason(ReasonCode::bound_violated,
                 var.name,
                 "`" + var.name + "` would have " + std::to_string(v.as_list().size()) +
                     " items, more than its maximum length " + std::to_string(*var.max_length)));
    }
  }
  // 10. Invariants on the simulated post-state (T3), in the model's order; a blocking one
  //     that fails is a reason, a monitoring one a warning (step.cpp 10). Expressions read
  //     the pre-state patched by the changes, so no state is built unless a native predicate
  //     needs one.
  const EvalEnv post{&state, d.changes, &state, params};
  std::optional<State> post_state;
  const std::size_t invariants = model.invariants.size();
  for (std::size_t i = 0; i < invariants; ++i) {
    // With `flat` (a kernel's: one per invariant), a simple comparison is read from that
    // contiguous array: no pointer followed for an invariant that holds.
    if (flat != nullptr && flat[i].shape != detail::NumericProgram::Shape::general) {
      bool value = false;
      if (detail::evaluate_flat(flat[i], post, value) == EvalError::none && value) [[likely]]
        continue;
    }
    const Invariant& inv = model.invariants[i];
    EvalError err = EvalError::none;
    if (inv.expr) {
      // The common case first, with nothing to build: an expression that holds.
      bool value = false;
      err = evaluate_bool(*inv.expr, post, value);
      if (err == EvalError::none && value) [[likely]]
        continue;
    }
    invariant_failure(inv, err, state, post_state, d);
  }
}

// Every check of SafetyKernel::evaluate, on an explicit situation (T1, T2, T3, T8).
//
// The checks in order, each with its theorem and its twin in verifier/src/step.cpp
// (`symbolic_step`: the same checks as labelled Z3 terms, in the same order; the numbers
// label the same sections in both files). Every failing check adds a reason, in this order:
//
//   #   check                                 reason code            theorem
//   -   the action index, the parameter count unknown_action,        (structural, no twin)
//                                             invalid_parameter
//   1   parameters (the first bad one stops)  invalid_parameter
//   2   the cost (stops if not computable)    overflow
//   3   minimum cost ("check 0")              below_min_cost         T2's precondition; T8
//   4   budget ("check 1")                    budget_exceeded        T1
//   5   step limit ("check 2")                step_limit             T2; T8
//   6   dependencies                          dependency_unmet       T8
//   7   `requires` on the pre-state           requires_failed
//   8   effects on the pre-state              overflow, undefined_value
//   9   declared bounds of the post-state     bound_violated         T3
//   10  invariants of the post-state          invariant_violated,    T3
//                                             invariant_error (warnings: monitoring_violated)
//
// Emergency actions are exempt from 3, 5 and 6 (T8), in both. A failed 8 skips 9 and 10
// (the twin's `gate`). Where the twin differs: it has no counterpart of the first line (its
// action and parameters are the model's own); its parameters are integers at their declared
// scale, so 1 is their range and bounds only; a constant cost cannot fail 2; a failed effect
// is labelled `overflow` whatever its cause (the kernel says `undefined_value` for a read of a
// deleted variable); a native (C++) invariant is opaque to it (`unsupported`), where the
// kernel evaluates it and says `invariant_error` if it throws. Budget pools (4b: every level
// of the task's pool tree, `budget_exceeded` with subject `pool:NAME`) are not decide_at's
// either: a pool is shared with other kernels, so SafetyKernel checks it (`pool_check`,
// decision/pools.cpp) on an approved decision with the pool chain locked, and again at commit
// with the chain held until the charge; the twin treats a pool as a budget that may refuse any
// charge (it has no pool), so every preservation proof holds whatever the pools. The guard's veto
// (KernelOptions::guard, the lookahead) and the commit gate are not decide_at's: SafetyKernel
// adds them after it, and the twin has none. decide_at only fills `d`: a rejection changes
// nothing (T5); advance() below is the twin's `next`.
void detail::decide_at(const TaskModel& model,
                       const State& state,
                       const BudgetController& budget,
                       std::uint64_t steps,
                       CompletionsRef completions,
                       const Proposal& p,
                       Decision& d,
                       std::vector<Value>* operands,
                       const detail::FlatComparison* flat) {
  const TaskModel* model_ = &model;
  // Everything reset, the vectors' capacity kept (a search decides many times into one).
  d.approved = false;
  d.reasons.clear();
  d.warnings.clear();
  d.action = 0;
  d.cost = 0;
  d.emergency = false;
  d.changes.clear();
  // -  The action and the parameter count (no twin: structural).
  if (p.action >= model_->actions.size()) {
    d.reasons.push_back(
        reason(ReasonCode::unknown_action, "", "no action with index " + std::to_string(p.action)));
    return;
  }
  const Action& a = model_->actions[p.action];
  d.action = p.action;
  d.emergency = a.emergency;
  if (p.params.size() != a.parameters.size()) {
    d.reasons.push_back(reason(ReasonCode::invalid_parameter,
                               a.id,
                               "action `" + a.id + "` takes " +
                                   std::to_string(a.parameters.size()) + " parameters, got " +
                                   std::to_string(p.params.size())));
    return;
  }
  // 1. Parameters: the first out of its declaration stops (step.cpp 1).
  for (std::size_t i = 0; i < p.params.size(); ++i) {
    Value v = p.params[i];
    if (auto bad = check_param(a.parameters[i], v)) {
      d.reasons.push_back(std::move(*bad));
      return;
    }
  }
  const EvalEnv pre{&state, {}, &state, p.params.data()};

  // 2. Cost (a parameter-dependent cost is evaluated first: every budget check needs it);
  //    one that cannot be computed stops (step.cpp 2).
  Amount cost = 0;
  if (!action_cost(*model_, a, pre, cost)) {
    d.reasons.push_back(reason(ReasonCode::overflow, a.id, "the cost of `" + a.id + "` overflows"));
    return;
  }
  d.cost = cost;

  // 3. Check 0: minimum cost (T2's precondition); emergency actions are exempt (T8)
  //    (step.cpp 3).
  if (!a.emergency && cost < model_->budget.min_action_cost) {
    d.reasons.push_back(reason(ReasonCode::below_min_cost,
                               a.id,
                               "cost " + model_->format_amount(cost) +
                                   " is below the minimum action cost " +
                                   model_->format_amount(model_->budget.min_action_cost)));
  }
  // 4. Check 1: budget (T1); emergency actions too (step.cpp 4).
  if (!budget.can_afford(cost)) {
    d.reasons.push_back(reason(ReasonCode::budget_exceeded,
                               a.id,
                               "cost " + model_->format_amount(cost) +
                                   " exceeds the remaining budget " +
                                   model_->format_amount(budget.remaining())));
  }
  // 5. Check 2: step limit (T2); emergency actions are exempt (T8) (step.cpp 5).
  if (!a.emergency && steps >= static_cast<std::uint64_t>(model_->budget.step_limit)) {
    d.reasons.push_back(
        reason(ReasonCode::step_limit,
               a.id,
               "the step limit " + std::to_string(model_->budget.step_limit) + " is reached"));
  }
  // 6. Dependencies; emergency actions are exempt (T8) (step.cpp 6).
  if (!a.emergency) {
    for (auto dep : a.dependencies) {
      if (completions[dep] == 0) {
        d.reasons.push_back(reason(ReasonCode::dependency_unmet,
                                   model_->actions[dep].id,
                                   "`" + a.id + "` depends on `" + model_->actions[dep].id +
                                       "`, which has not completed"));
      }
    }
  }
  // 7. The guard (`requires`), on the pre-action state; an evaluation error fails it
  //    (step.cpp 7).
  if (a.guard) {
    bool value = false;
    const EvalError err = evaluate_bool(*a.guard, pre, value);
    if (err != EvalError::none) {
      d.reasons.push_back(
          reason(ReasonCode::requires_failed,
                 a.id,
                 "`requires` of `" + a.id + "` could not be evaluated: " + eval_error_text(err)));
    } else if (!value) {
      d.reasons.push_back(reason(ReasonCode::requires_failed,
                                 a.id,
                                 "`requires` of `" + a.id + "` is false: " + to_source(*a.guard)));
    }
  }
  // 8. Simulate: every effect reads the pre-action state; nothing is committed (step.cpp 8).
  //    One that cannot be computed is a reason, and skips 9 and 10 (the twin's `gate`).
  // With `operands`, each effect's evaluated value is kept for the undo record, from this one
  // pass (execute does not evaluate the effects a second time).
  bool simulated = true;
  if (d.changes.capacity() < a.effects.size()) d.changes.reserve(a.effects.size());
  if (operands != nullptr) operands->clear();
  for (const Effect& e : a.effects) {
    Value out;
    Value* operand = nullptr;
    if (operands != nullptr) operand = &operands->emplace_back();
    if (auto bad = apply_effect(*model_, e, pre, out, operand)) {
      d.reasons.push_back(std::move(*bad));
      simulated = false;
      continue;
    }
    d.changes.emplace_back(e.variable, std::move(out));
  }
  if (simulated) check_post_state(*model_, state, p.params.data(), d, flat);
  d.approved = d.reasons.empty();
  return;
}

Situation Situation::initial(const TaskModel& model) {
  return Situation{model.initial_state(),
                   BudgetController(model.budget.total),
                   0,
                   0,
                   std::vector<std::uint64_t>(model.actions.size(), 0)};
}

Decision decide(const TaskModel& model, const Situation& s, const Proposal& proposal) {
  Decision d;
  decide_into(model, s, proposal, d);
  return d;
}

void decide_into(const TaskModel& model,
                 const Situation& s,
                 const Proposal& proposal,
                 Decision& out) {
  if (s.completions.size() != model.actions.size())
    throw InvalidArgument("decide: the situation does not count the model's actions");
  decide_at(model, s.state, s.budget, s.steps, {s.completions.data(), nullptr}, proposal, out);
}

bool preview_into(
    const TaskModel& model, const State& state, const Proposal& p, Amount& cost, Changes& changes) {
  return detail::preview_at(model, state, p, cost, changes, nullptr);
}

bool detail::preview_at(const TaskModel& model,
                        const State& state,
                        const Proposal& p,
                        Amount& cost,
                        Changes& changes,
                        std::vector<Value>* operands) {
  // `decide_at`'s computation of `d.cost` and `d.changes`, without its checks.
  if (p.action >= model.actions.size()) return false;
  const Action& a = model.actions[p.action];
  if (p.params.size() != a.parameters.size()) return false;
  const EvalEnv pre{&state, {}, &state, p.params.data()};
  if (!action_cost(model, a, pre, cost)) return false;
  changes.clear();
  if (operands != nullptr) operands->clear();
  for (const Effect& e : a.effects) {
    Value out;
    Value* operand = operands != nullptr ? &operands->emplace_back() : nullptr;
    if (apply_effect(model, e, pre, out, operand)) return false;
    changes.emplace_back(e.variable, std::move(out));
  }
  return true;
}

void decide_into(const TaskModel& model,
                 const State& state,
                 const BudgetController& budget,
                 std::uint64_t steps,
                 const std::uint64_t* completions,
                 const Proposal& proposal,
                 Decision& out) {
  decide_at(model, state, budget, steps, {completions, nullptr}, proposal, out);
}

Situation advance(const TaskModel& model, const Situation& s, const Decision& d) {
  if (!d.approved) throw InvalidArgument("advance: the decision is a rejection");
  Situation next{s.state.with(d.changes), s.budget, s.steps, s.emergency_steps, s.completions};
  next.budget.charge(d.cost);
  if (model.actions.at(d.action).emergency) {
    ++next.emergency_steps;
  } else {
    ++next.steps;
  }
  ++next.completions.at(d.action);
  return next;
}

}  // namespace clampai::kernel
