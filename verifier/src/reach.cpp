// Bounded model checking: K copies of the situation (state, net spend, steps, completions),
// each step one action the kernel approves (the symbolic step: every check of the kernel's
// decision) or a stutter; then, for each refuted pair, "the action's guard holds and the
// invariant fails after it" on the last situation. Witnesses are replayed through the kernel's
// decision before they are reported.
#include "reach.hpp"

#include <z3++.h>

#include <optional>

#include "clampai/kernel/safety_kernel.hpp"
#include "solving.hpp"
#include "step.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier::detail {

using kernel::Action;
using kernel::TaskModel;
using kernel::Value;
using kernel::VarId;

namespace {

struct Unrolling {
  std::vector<std::unique_ptr<Encoder>> states;  // states[i] encodes s_i
  std::vector<SymSituation> situations;          // the counters of s_i
  std::vector<z3::expr> selectors;               // sel_i: the action of step i, or -1 to stutter
  std::vector<std::vector<SymbolicStep>> steps;  // steps[i][a]: action a from s_i
};

}  // namespace

namespace {

// The search for `refuted`. With `relax_lists`, the steps leave out the kernel's max_length
// checks of lists (APPROXIMATION, docs/VERIFY.md): Z3's sequence theory often gives up on them
// across steps; without them the search allows more paths, so `unreachable` stays sound, and a
// `reachable` path is still replayed through the kernel.
//
// Decides `refuted` in order, in one fresh context; returns how many it decided: all, or up to
// and including the first whose query failed (a failure may leave the context damaged, so the
// caller goes on with the rest in a fresh one).
std::size_t search_once(const std::shared_ptr<const TaskModel>& model,
                        const std::vector<Obligation*>& refuted,
                        unsigned depth,
                        const Limits& limits,
                        bool relax_lists,
                        bool alone) {
  const TaskModel& m = *model;
  auto approval = [&](const SymbolicStep& st) {
    if (!relax_lists) return st.approved();
    z3::expr all = st.cost.ctx().bool_val(true);
    for (const Check& c : st.checks) {
      const bool list_length =
          c.code == kernel::ReasonCode::bound_violated &&
          m.variables[*m.schema->find(c.subject)].type.kind() == kernel::Type::Kind::list;
      if (list_length) continue;
      if (!c.unsupported.empty()) throw Unsupported{c.unsupported};
      all = all && c.holds;
    }
    return all;
  };
  auto give_up = [&](const std::string& why) {
    for (Obligation* o : refuted)
      o->reachability =
          Reachability{Reachability::Status::unknown, depth, {}, "reachability unknown: " + why};
  };

  std::optional<Session> created;
  try {
    created.emplace(alone);
  } catch (const z3::exception& e) {
    give_up(Session::not_created(e, alone));
    return refuted.size();
  }
  Session& session = *created;
  z3::context& ctx = session.ctx();
  z3::solver solver(ctx, z3::solver::simple());
  Unrolling u;
  try {
    for (unsigned i = 0; i <= depth; ++i) {
      const std::string prefix = "s" + std::to_string(i) + ".";
      u.states.push_back(
          std::make_unique<Encoder>(ctx, m, prefix, i == 0 ? nullptr : u.states.front()->codes()));
      u.situations.push_back(SymSituation::fresh(ctx, m, prefix));
    }
    // s_0 is the initial situation: the initial state, nothing spent, no steps.
    const kernel::Situation init = kernel::Situation::initial(m);
    for (VarId id = 0; id < m.variables.size(); ++id) {
      const Value& v = init.state.get(id);
      if (!v.is_defined()) throw Unsupported{"unsupported construct: an undefined initial value"};
      solver.add(u.states[0]->pre(id) == u.states[0]->constant(v, m.variables[id].type));
    }
    const SymSituation start = SymSituation::of(ctx, init);
    solver.add(u.situations[0].net == start.net && u.situations[0].steps == start.steps);
    for (std::size_t a = 0; a < m.actions.size(); ++a)
      solver.add(u.situations[0].done[a] == start.done[a]);
    // Steps: sel_i selects an action, or -1 to stutter (so shorter sequences are found too).
    for (unsigned i = 0; i < depth; ++i) {
      if (limits.deadline.passed()) {  // the unrolling itself takes long at a great depth
        give_up(limits.deadline.not_reached());
        return refuted.size();
      }
      const z3::expr sel = ctx.int_const(("sel" + std::to_string(i)).c_str());
      u.selectors.push_back(sel);
      Encoder& here = *u.states[i];
      Encoder& next = *u.states[i + 1];
      z3::expr step = sel == -1 && unchanged(here, u.situations[i], next, u.situations[i + 1]);
      u.steps.emplace_back();
      for (std::size_t a = 0; a < m.actions.size(); ++a) {
        u.steps[i].push_back(symbolic_step(here, u.situations[i], a));
        const SymbolicStep& st = u.steps[i].back();
        step = step || (sel == static_cast<int>(a) && approval(st) &&
                        successor(here, st, next, u.situations[i + 1]));
      }
      solver.add(step);
    }
  } catch (const Unsupported& e) {
    give_up(e.reason);
    return refuted.size();
  } catch (const z3::exception& e) {
    give_up(session.failure(e));
    return refuted.size();
  }

  Encoder& last = *u.states[depth];
  for (std::size_t n = 0; n < refuted.size(); ++n) {
    Obligation* o = refuted[n];
    if (limits.deadline.passed()) {
      o->reachability = Reachability{Reachability::Status::unknown,
                                     depth,
                                     {},
                                     "reachability unknown: " + limits.deadline.not_reached()};
      continue;
    }
    const std::size_t a = *m.find_action(o->action);
    const Action& action = m.actions[a];
    Reachability r{Reachability::Status::unknown, depth, {}, ""};
    try {
      // The kernel would block the action there for the invariant, its `requires` holding.
      const SymbolicStep st = symbolic_step(last, u.situations[depth], a);
      const Check* blocks = st.invariant(o->invariant);  // a refuted pair names a blocking one
      if (!blocks->unsupported.empty()) throw Unsupported{blocks->unsupported};
      const z3::expr bad =
          st.checks_of(kernel::ReasonCode::requires_failed) && blocks->evaluated && !blocks->holds;
      const z3::expr lit = ctx.bool_const(("bad:" + o->id).c_str());
      solver.add(z3::implies(lit, bad));
      z3::expr_vector assumptions(ctx);
      assumptions.push_back(lit);
      const Outcome outcome = session.check(solver, assumptions, limits);
      if (outcome.failed) {
        o->reachability = Reachability{
            Reachability::Status::unknown, depth, {}, "reachability unknown: " + outcome.reason};
        return n + 1;
      }
      switch (outcome.result) {
        case z3::unsat:
          r.status = Reachability::Status::unreachable;
          r.reason = "not reachable within " + std::to_string(depth) +
                     " steps from the initial state" +
                     (relax_lists ? " (searched without the lists' max_length, which only adds "
                                    "paths)"
                                  : "") +
                     ": safe in practice so far, but the invariant is not inductive (strengthen "
                     "it, or the action's `requires`)";
          break;
        case z3::unknown:
          r.reason = "reachability unknown: " + outcome.reason;
          break;
        case z3::sat: {
          const z3::model zm = solver.get_model();
          // The replay is the kernel's decision itself (not a SafetyKernel, which would refuse
          // an initial state that breaks a blocking invariant).
          kernel::Situation replay = kernel::Situation::initial(m);
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
            const kernel::Decision d = kernel::decide(m, replay, p);
            replays = d.approved;
            if (replays) replay = kernel::advance(m, replay, d);
            r.witness.emplace_back(step.id, std::move(shown));
          }
          kernel::Proposal last_p{a, {}};
          for (std::size_t k = 0; k < action.parameters.size(); ++k) {
            last_p.params.push_back(Value::number(
                kernel::Decimal{zm.eval(last.param(action, k), true).get_numeral_int64(),
                                static_cast<std::uint8_t>(action.parameters[k].type.scale())}));
          }
          if (replays && kernel::decide(m, replay, last_p)
                             .has(kernel::ReasonCode::invariant_violated, o->invariant)) {
            r.status = Reachability::Status::reachable;
            r.reason = "reachable in " + std::to_string(r.witness.size()) + " step" +
                       (r.witness.size() == 1 ? "" : "s") + " from the initial state";
          } else {
            r.witness.clear();
            r.reason =
                "reachability unknown: the kernel does not confirm the solver's path (a "
                "disagreement between the symbolic step and the kernel; please report it)";
          }
          break;
        }
      }
    } catch (const Unsupported& e) {
      last.take_ranges();
      r.reason = "reachability unknown: " + e.reason;
    } catch (const z3::exception& e) {
      o->reachability = Reachability{
          Reachability::Status::unknown, depth, {}, "reachability unknown: " + session.failure(e)};
      return n + 1;
    }
    o->reachability = std::move(r);
  }
  return refuted.size();
}

void search(const std::shared_ptr<const TaskModel>& model,
            const std::vector<Obligation*>& refuted,
            unsigned depth,
            const Limits& limits,
            bool relax_lists,
            bool alone) {
  for (std::size_t done = 0; done < refuted.size();) {
    const std::vector<Obligation*> rest(refuted.begin() + static_cast<std::ptrdiff_t>(done),
                                        refuted.end());
    done += search_once(model, rest, depth, limits, relax_lists, alone);
  }
}

}  // namespace

void check_reachability(const std::shared_ptr<const TaskModel>& model,
                        std::vector<Obligation>& obligations,
                        unsigned depth,
                        const Limits& limits) {
  std::vector<Obligation*> refuted;
  for (auto& o : obligations) {
    if (o.kind == ObligationKind::preservation && o.verdict == VerdictKind::refuted)
      refuted.push_back(&o);
  }
  if (refuted.empty() || depth == 0) return;
  run_unit([&](bool alone) {
    search(model, refuted, depth, limits, false, alone);
    std::vector<Obligation*> again;
    for (Obligation* o : refuted) {
      if (o->reachability.status == Reachability::Status::unknown &&
          o->reachability.reason.find("incomplete (theory seq)") != std::string::npos)
        again.push_back(o);
    }
    if (!again.empty()) search(model, again, depth, limits, true, alone);
  });
}

}  // namespace clampai::verifier::detail
