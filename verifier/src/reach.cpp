// Bounded model checking: K copies of the state, each step one action the kernel could
// approve (guard, parameter bounds, bounds and blocking invariants after it, no overflow) or a
// stutter; then, for each refuted pair, "the action's guard holds and the invariant fails after
// it" on the last state. Witnesses are replayed through a kernel before they are reported.
#include "reach.hpp"

#include <z3++.h>

#include "clampai/kernel/safety_kernel.hpp"
#include "watchdog.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier::detail {

using kernel::Action;
using kernel::TaskModel;
using kernel::Value;
using kernel::VarId;

namespace {

struct Unrolling {
  z3::context& ctx;
  const TaskModel& m;
  std::vector<std::unique_ptr<Encoder>> states;  // states[i] encodes s_i
  std::vector<z3::expr> selectors;               // sel_i: the action of step i, or -1 to stutter

  // Equates every encodable variable of s_{i+1} with its value after `post` (or s_i's).
  z3::expr next_state(std::size_t i, const std::vector<std::pair<VarId, z3::expr>>& post) {
    z3::expr all = ctx.bool_val(true);
    for (VarId id = 0; id < m.variables.size(); ++id) {
      z3::expr value = states[i]->pre(id);
      for (const auto& [pid, term] : post) {
        if (pid == id) value = term;
      }
      all = all && states[i + 1]->pre(id) == value;
    }
    return all;
  }

  // What the kernel checks of one step of `action` from s_i, with its effects in `post`.
  z3::expr approvable(std::size_t i,
                      const Action& action,
                      std::vector<std::pair<VarId, z3::expr>>& post) {
    Encoder& enc = *states[i];
    z3::expr ok = ctx.bool_val(true);
    for (std::size_t p = 0; p < action.parameters.size(); ++p)
      ok = ok && enc.param_bounds(action.parameters[p], enc.param(action, p));
    if (action.guard)
      ok = ok && enc.encode_bool(*action.guard, nullptr, &action) && enc.take_ranges();
    z3::expr_vector side(ctx);
    post = enc.effects(action, side);
    for (const auto& c : side) ok = ok && c;
    for (const auto& inv : m.invariants) {
      if (inv.enforcement != kernel::Enforcement::blocking) continue;
      if (!inv.expr) throw Unsupported{"opaque predicate: a native (C++) invariant"};
      ok = ok && enc.encode_bool(*inv.expr, &post, &action) && enc.take_ranges();
    }
    return ok;
  }
};

}  // namespace

void check_reachability(const std::shared_ptr<const TaskModel>& model,
                        std::vector<Obligation>& obligations,
                        unsigned depth,
                        unsigned timeout_ms) {
  const TaskModel& m = *model;
  std::vector<Obligation*> refuted;
  for (auto& o : obligations) {
    if (o.kind == ObligationKind::preservation && o.verdict == VerdictKind::refuted)
      refuted.push_back(&o);
  }
  if (refuted.empty() || depth == 0) return;
  auto give_up = [&](const std::string& why) {
    for (Obligation* o : refuted)
      o->reachability =
          Reachability{Reachability::Status::unknown, depth, {}, "reachability unknown: " + why};
  };

  z3::context ctx;
  z3::solver solver(ctx);
  Watchdog watchdog(ctx);
  Unrolling u{ctx, m, {}, {}};
  try {
    for (unsigned i = 0; i <= depth; ++i)
      u.states.push_back(std::make_unique<Encoder>(ctx, m, "s" + std::to_string(i) + "."));
    // s_0 is the initial state.
    const kernel::State& init = m.initial_state();
    for (VarId id = 0; id < m.variables.size(); ++id) {
      const z3::expr x = u.states[0]->pre(id);
      const Value& v = init.get(id);
      switch (v.kind()) {
        case Value::Kind::boolean:
          solver.add(x == ctx.bool_val(v.as_bool()));
          break;
        case Value::Kind::number:
          solver.add(x == ctx.int_val(v.as_number().units));
          break;
        case Value::Kind::string:
          if (m.variables[id].type.kind() == kernel::Type::Kind::enumeration) {
            const auto& vs = m.variables[id].type.enum_values();
            solver.add(x == ctx.int_val(static_cast<std::int64_t>(
                                std::find(vs.begin(), vs.end(), v.as_string()) - vs.begin())));
          } else {
            solver.add(x == ctx.string_val(v.as_string()));
          }
          break;
        case Value::Kind::list: {
          const auto& el = *m.variables[id].type.element();
          z3::expr_vector units(ctx);
          for (const Value& item : v.as_list()) {
            if (item.kind() == Value::Kind::number) {
              units.push_back(ctx.int_val(item.as_number().rescaled(el.scale())->units).unit());
            } else if (item.kind() == Value::Kind::boolean) {
              units.push_back(ctx.bool_val(item.as_bool()).unit());
            } else {
              units.push_back(ctx.string_val(item.as_string()).unit());
            }
          }
          solver.add(units.empty() ? x.length() == 0
                                   : x == (units.size() == 1 ? units[0] : z3::concat(units)));
          break;
        }
        case Value::Kind::undefined:
          throw Unsupported{"unsupported construct: an undefined initial value"};
      }
    }
    // Steps: sel_i selects an action, or -1 to stutter (so shorter sequences are found too).
    for (unsigned i = 0; i < depth; ++i) {
      const z3::expr sel = ctx.int_const(("sel" + std::to_string(i)).c_str());
      u.selectors.push_back(sel);
      std::vector<std::pair<VarId, z3::expr>> none;
      z3::expr step = sel == -1 && u.next_state(i, none);
      for (std::size_t a = 0; a < m.actions.size(); ++a) {
        std::vector<std::pair<VarId, z3::expr>> post;
        const z3::expr ok = u.approvable(i, m.actions[a], post);
        step = step || (sel == static_cast<int>(a) && ok && u.next_state(i, post));
      }
      solver.add(step);
    }
  } catch (const Unsupported& e) {
    give_up(e.reason);
    return;
  }

  Encoder& last = *u.states[depth];
  for (Obligation* o : refuted) {
    const std::size_t a = *m.find_action(o->action);
    const Action& action = m.actions[a];
    const kernel::Invariant* found = nullptr;
    for (const auto& candidate : m.invariants) {
      if (candidate.name == o->invariant) found = &candidate;
    }
    const kernel::Invariant& inv = *found;  // a refuted pair names a declared invariant
    Reachability r{Reachability::Status::unknown, depth, {}, ""};
    try {
      z3::expr bad = ctx.bool_val(true);
      for (std::size_t p = 0; p < action.parameters.size(); ++p)
        bad = bad && last.param_bounds(action.parameters[p], last.param(action, p));
      if (action.guard)
        bad = bad && last.encode_bool(*action.guard, nullptr, &action) && last.take_ranges();
      z3::expr_vector side(ctx);
      const auto post = last.effects(action, side);
      for (const auto& c : side) bad = bad && c;
      const z3::expr holds = last.encode_bool(*inv.expr, &post, &action) && last.take_ranges();
      bad = bad && !holds;
      const z3::expr lit = ctx.bool_const(("bad:" + o->id).c_str());
      solver.add(z3::implies(lit, bad));
      z3::expr_vector assumptions(ctx);
      assumptions.push_back(lit);
      switch (watchdog.run(timeout_ms, [&] { return solver.check(assumptions); })) {
        case z3::unsat:
          r.status = Reachability::Status::unreachable;
          r.reason = "not reachable within " + std::to_string(depth) +
                     " steps from the initial state: safe in practice so far, but the invariant is "
                     "not inductive (strengthen it, or the action's `requires`)";
          break;
        case z3::unknown:
          r.reason =
              "reachability unknown: " +
              (watchdog.timed_out() ? "timeout after " + std::to_string(timeout_ms) + " ms"
                                    : "the solver gave up (" + solver.reason_unknown() + ")");
          break;
        case z3::sat: {
          const z3::model zm = solver.get_model();
          kernel::SafetyKernel replay(model);
          bool replays = true;
          for (unsigned i = 0; i < depth && replays; ++i) {
            const std::int64_t s = zm.eval(u.selectors[i], true).get_numeral_int64();
            if (s < 0) continue;
            const Action& step = m.actions[static_cast<std::size_t>(s)];
            kernel::Proposal p{static_cast<std::size_t>(s), {}};
            std::vector<std::pair<std::string, Value>> shown;
            for (std::size_t k = 0; k < step.parameters.size(); ++k) {
              const Value v = Value::number(
                  kernel::Decimal{zm.eval(u.states[i]->param(step, k), true).get_numeral_int64(),
                                  static_cast<std::uint8_t>(step.parameters[k].type.scale())});
              p.params.push_back(v);
              shown.emplace_back(step.parameters[k].name, v);
            }
            replays = replay.execute(p).decision.approved;
            r.witness.emplace_back(step.id, std::move(shown));
          }
          kernel::Proposal last_p{a, {}};
          for (std::size_t k = 0; k < action.parameters.size(); ++k) {
            last_p.params.push_back(Value::number(
                kernel::Decimal{zm.eval(last.param(action, k), true).get_numeral_int64(),
                                static_cast<std::uint8_t>(action.parameters[k].type.scale())}));
          }
          if (replays &&
              replay.evaluate(last_p).has(kernel::ReasonCode::invariant_violated, inv.name)) {
            r.status = Reachability::Status::reachable;
            r.reason = "reachable in " + std::to_string(r.witness.size()) + " step" +
                       (r.witness.size() == 1 ? "" : "s") + " from the initial state";
          } else {
            r.witness.clear();
            r.reason =
                "a path exists in the model, but the kernel does not approve it (budget, step "
                "limit or dependencies, which the search does not model)";
          }
          break;
        }
      }
    } catch (const Unsupported& e) {
      last.take_ranges();
      r.reason = "reachability unknown: " + e.reason;
    }
    o->reachability = std::move(r);
  }
}

}  // namespace clampai::verifier::detail
