// The symbolic lookahead: one copy of the situation per step, the step's action a choice among
// the model's actions with symbolic parameters, each the symbolic step (the kernel's decision,
// step.hpp); then one query per depth for each of the four answers.
#include "clampai/verifier/lookahead.hpp"

#include <z3++.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "step.hpp"
#include "watchdog.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier {

using driver::LookaheadResult;
using driver::Plan;
using driver::PlannedStep;
using kernel::Action;
using kernel::Situation;
using kernel::TaskModel;
using kernel::Value;
using kernel::VarId;

namespace {

struct Unsupported {
  std::string reason;
};

// The kernel does not confirm a witness the solver found (a modelling gap): the answer is
// marked incomplete rather than reported.
struct Disagreement {
  std::string reason;
};

class Bmc {
 public:
  Bmc(const TaskModel& m, const Situation& root, unsigned depth, unsigned timeout_ms)
      : m_(m), timeout_ms_(timeout_ms), solver_(ctx_) {
    for (unsigned t = 0; t <= depth; ++t) build_step(t, root);
    // The root: the concrete situation after the proposal (its counters are constants).
    for (VarId id = 0; id < m.variables.size(); ++id) {
      if (m.variables[id].optional)
        throw Unsupported{"optional variable `" + m.variables[id].name + "`"};
      solver_.add(state(0, id) == enc_[0]->constant(root.state.get(id), m.variables[id].type));
    }
    for (unsigned t = 0; t < depth; ++t) link(t);
  }

  // A path of t steps from the root, each step approvable, expanding only states the explicit
  // search expands (not the goal; not a basin after the root).
  z3::expr path_to(unsigned t) {
    z3::expr all = ctx_.bool_val(true);
    for (unsigned s = 0; s < t; ++s)
      all = all && taken_[s] && !goal_[s] && (s == 0 ? ctx_.bool_val(true) : !basin_[s]);
    return all;
  }

  z3::expr goal(unsigned t) { return goal_[t]; }
  z3::expr basin(unsigned t) { return basin_[t]; }
  z3::expr spent(unsigned t) { return sit_[t].net; }

  // No non-emergency action is approvable at step t, whatever its parameters.
  z3::expr stuck(unsigned t) {
    z3::expr all = ctx_.bool_val(true);
    for (std::size_t a = 0; a < m_.actions.size(); ++a) {
      if (m_.actions[a].emergency) continue;
      const detail::SymbolicStep& mv = moves_[t][a];
      if (mv.params.empty()) {
        all = all && !mv.approved();
      } else {
        z3::expr_vector vars(ctx_);
        for (const auto& p : mv.params) vars.push_back(p);
        all = all && z3::forall(vars, !mv.approved());
      }
    }
    return all;
  }

  z3::check_result check(const z3::expr& query) {
    solver_.push();
    solver_.add(query);
    const z3::check_result r = watchdog_.run(timeout_ms_, [&] { return solver_.check(); });
    if (r == z3::sat) model_ = solver_.get_model();
    solver_.pop();
    return r;
  }

  // The cheapest path to the goal at exactly step t, or nullopt (unsat); throws on unknown.
  std::optional<z3::model> cheapest(unsigned t, bool* unknown) {
    z3::optimize opt(ctx_);
    for (const auto& a : solver_.assertions()) opt.add(a);
    opt.add(path_to(t) && goal_[t]);
    opt.minimize(sit_[t].net);
    const z3::check_result r = watchdog_.run(timeout_ms_, [&] { return opt.check(); });
    *unknown = r == z3::unknown;
    if (r != z3::sat) return std::nullopt;
    return opt.get_model();
  }

  [[nodiscard]] const z3::model& model() const { return *model_; }

  // The first t steps chosen in `model`.
  Plan plan(const z3::model& model, unsigned t) {
    Plan out;
    for (unsigned s = 0; s < t; ++s) {
      const auto a = static_cast<std::size_t>(model.eval(choice_[s], true).get_numeral_int64());
      PlannedStep step{a, {}, 0};
      const Action& act = m_.actions.at(a);
      for (std::size_t i = 0; i < act.parameters.size(); ++i)
        step.params.push_back(Value::number(
            kernel::Decimal{model.eval(moves_[s][a].params[i], true).get_numeral_int64(),
                            static_cast<std::uint8_t>(act.parameters[i].type.scale())}));
      out.push_back(std::move(step));
    }
    return out;
  }

 private:
  z3::context ctx_;
  const TaskModel& m_;
  unsigned timeout_ms_;
  detail::Watchdog watchdog_{ctx_};  // deadlines (Z3's own `timeout` races in 4.8.12)
  z3::solver solver_;
  std::optional<z3::model> model_;
  std::vector<std::unique_ptr<detail::Encoder>> enc_;
  std::vector<detail::SymSituation> sit_;  // net spend, steps and completions at each step
  std::vector<z3::expr> goal_, basin_, choice_, taken_;
  std::vector<std::vector<detail::SymbolicStep>> moves_;  // moves_[t][a]: action a at step t

  z3::expr state(unsigned t, VarId id) { return enc_[t]->pre(id); }

  void build_step(unsigned t, const Situation& root) {
    const std::string prefix = "s" + std::to_string(t) + ".";
    enc_.push_back(std::make_unique<detail::Encoder>(
        ctx_, m_, prefix, t == 0 ? nullptr : enc_.front()->codes()));
    detail::Encoder& enc = *enc_.back();
    sit_.push_back(t == 0 ? detail::SymSituation::of(ctx_, root)
                          : detail::SymSituation::fresh(ctx_, m_, prefix));
    try {
      goal_.push_back(m_.goal ? enc.encode_bool(*m_.goal, nullptr, nullptr) : ctx_.bool_val(false));
      // An evaluation error in a goal makes it false; in a basin, true (fail closed): the
      // encoder's range conditions say when there is none.
      goal_.back() = goal_.back() && enc.take_ranges();
      z3::expr in_basin = ctx_.bool_val(false);
      for (const kernel::CaptureBasin& b : m_.basins) {
        const z3::expr e = enc.encode_bool(*b.expr, nullptr, nullptr);
        in_basin = in_basin || e || !enc.take_ranges();
      }
      basin_.push_back(in_basin);
      // Each action: the kernel's decision (the symbolic step), every check exact.
      moves_.emplace_back();
      for (std::size_t a = 0; a < m_.actions.size(); ++a) {
        moves_.back().push_back(detail::symbolic_step(enc, sit_[t], a));
        (void)moves_.back().back().approved();  // throws if a check could not be encoded
      }
    } catch (const detail::Unsupported& u) {
      throw Unsupported{u.reason};
    }
    choice_.push_back(ctx_.int_const((prefix + "$action").c_str()));
  }

  // Step t -> t + 1: the chosen action is approved and the next situation is its successor.
  void link(unsigned t) {
    z3::expr any = ctx_.bool_val(false);
    for (std::size_t a = 0; a < m_.actions.size(); ++a) {
      const detail::SymbolicStep& mv = moves_[t][a];
      const z3::expr next =
          mv.approved() && detail::successor(*enc_[t], mv, *enc_[t + 1], sit_[t + 1]);
      any = any || (choice_[t] == ctx_.int_val(static_cast<std::int64_t>(a)) && next);
    }
    taken_.push_back(any);
  }
};

enum class End : std::uint8_t { basin, dead_end, goal };

// The kernel's replay of a witness from `root`: every step approved (its cost filled in), every
// state before the last one that the search would expand (not the goal; not a basin after the
// root), and the last one what the witness claims. Returns why not, or nothing; `last` gets
// the final situation.
std::optional<std::string> replay(
    const TaskModel& m, Situation s, Plan& plan, End end, Situation* last) {
  for (std::size_t j = 0; j < plan.size(); ++j) {
    if (m.goal_holds(s.state) || (j > 0 && m.basin_of(s.state) != nullptr))
      return "the witness passes through a state where the search stops";
    PlannedStep& step = plan[j];
    const kernel::Decision d = kernel::decide(m, s, kernel::Proposal{step.action, step.params});
    if (!d.approved) return "the kernel rejects `" + m.actions[step.action].id + "` in the witness";
    step.cost = d.cost;
    s = kernel::advance(m, s, d);
  }
  const bool goal = m.goal_holds(s.state);
  bool ok = false;
  switch (end) {
    case End::goal:
      ok = goal;
      break;
    case End::basin:
      ok = !goal && m.basin_of(s.state) != nullptr;
      break;
    case End::dead_end:
      ok = !goal && (plan.empty() || m.basin_of(s.state) == nullptr);
      // Actions without parameters can be checked here; the rest is the solver's ∀.
      for (std::size_t a = 0; ok && a < m.actions.size(); ++a) {
        if (!m.actions[a].emergency && m.actions[a].parameters.empty())
          ok = !kernel::decide(m, s, kernel::Proposal{a, {}}).approved;
      }
      break;
  }
  if (!ok) return "the kernel does not confirm the end of the witness";
  if (last != nullptr) *last = std::move(s);
  return std::nullopt;
}

}  // namespace

LookaheadResult symbolic_lookahead(const TaskModel& model,
                                   const Situation& situation,
                                   const kernel::Proposal& proposal,
                                   const driver::LookaheadOptions& options,
                                   unsigned timeout_ms) {
  LookaheadResult out;
  out.situations = 0;
  out.decision = kernel::decide(model, situation, proposal);
  if (!out.decision.approved) return out;
  const Situation root = kernel::advance(model, situation, out.decision);
  out.entered = driver::basins_entered(model, root.state);
  auto incomplete = [&](std::string why) {
    if (out.complete) out.incomplete_reason = std::move(why);
    out.complete = false;
  };
  auto solver_timeout = [&](std::string why) {
    incomplete(std::move(why));
    out.timed_out = true;
  };
  try {
    Bmc bmc(model, root, options.depth, timeout_ms);
    const unsigned k = options.depth;
    // (2) the shortest path into a basin (a goal state is not a trap: the task ends there).
    for (unsigned t = 1; t <= k && !out.reachable_basin; ++t) {
      const z3::check_result r = bmc.check(bmc.path_to(t) && !bmc.goal(t) && bmc.basin(t));
      if (r == z3::unknown) solver_timeout("Z3 could not decide a basin query within the timeout");
      if (r != z3::sat) continue;
      Plan p = bmc.plan(bmc.model(), t);
      Situation end = root;
      if (auto why = replay(model, root, p, End::basin, &end)) throw Disagreement{*why};
      out.reachable_basin = model.basin_of(end.state)->name;  // replay confirmed one
      out.basin_witness = std::move(p);
    }
    // (3) the shortest path to a dead end.
    for (unsigned t = 0; t <= k && !out.dead_end; ++t) {
      const z3::expr stop = t == 0 ? bmc.goal(t) : (bmc.goal(t) || bmc.basin(t));
      const z3::check_result r = bmc.check(bmc.path_to(t) && !stop && bmc.stuck(t));
      if (r == z3::unknown)
        solver_timeout("Z3 could not decide a dead-end query within the timeout");
      if (r != z3::sat) continue;
      Plan p = bmc.plan(bmc.model(), t);
      if (auto why = replay(model, root, p, End::dead_end, nullptr)) throw Disagreement{*why};
      out.dead_end = true;
      out.dead_end_witness = std::move(p);
    }
    // (4) the cheapest path to the goal, over every length.
    std::optional<kernel::Amount> best;
    for (unsigned t = 0; t <= k; ++t) {
      bool unknown = false;
      const auto z = bmc.cheapest(t, &unknown);
      if (unknown) solver_timeout("Z3 could not decide a goal query within the timeout");
      if (!z) continue;
      Plan p = bmc.plan(*z, t);
      if (auto why = replay(model, root, p, End::goal, nullptr)) throw Disagreement{*why};
      kernel::Amount cost = 0;
      for (const auto& s : p) cost += s.cost;
      if (!best || cost < *best) {
        best = cost;
        out.cheapest_plan = std::move(p);
      }
    }
    if (best) {
      out.goal_reachable = true;
      out.cheapest_cost = *best;
    }
  } catch (const Unsupported& u) {
    incomplete("outside what the symbolic engine models: " + u.reason);
    out.unsupported = true;
  } catch (const detail::Unsupported& u) {
    incomplete("outside what the symbolic engine models: " + u.reason);
    out.unsupported = true;
  } catch (const Disagreement& d) {
    incomplete("the kernel does not confirm the solver's witness: " + d.reason);
  } catch (const z3::exception& e) {
    incomplete(std::string("Z3: ") + e.msg());
  }
  return out;
}

}  // namespace clampai::verifier
