// Proof obligations, solved incrementally: one Z3 context and solver per worker thread, the
// state hypotheses asserted once, one scope per action, one activation literal per invariant.
#include "clampai/verifier/verify.hpp"

#include <z3++.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <optional>
#include <set>

#include "clampai/kernel/file.hpp"
#include "clampai/kernel/parallel.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/verifier/contract.hpp"
#include "reach.hpp"
#include "step.hpp"
#include "watchdog.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier {

using kernel::Action;
using kernel::Enforcement;
using kernel::Expr;
using kernel::Invariant;
using kernel::TaskModel;
using kernel::Value;
using kernel::VarId;

std::string_view to_string(VerdictKind v) {
  static constexpr std::string_view kNames[] = {"proved", "refuted", "unknown"};
  return kNames[static_cast<int>(v)];
}

std::string_view to_string(ObligationKind k) {
  static constexpr std::string_view kNames[] = {
      "base_case", "preservation", "budget", "interface", "lint"};
  return kNames[static_cast<int>(k)];
}

int Report::exit_code(bool fail_on_unknown) const {
  if (refuted > 0) return 1;
  if (unknown > 0) return fail_on_unknown ? 1 : 3;
  return 0;
}

namespace {

void collect_vars(const Expr& e, std::set<VarId>& out) {
  if (e.op == kernel::ExprOp::variable || e.op == kernel::ExprOp::old_variable ||
      e.op == kernel::ExprOp::defined) {
    out.insert(e.index);
  }
  for (const auto& a : e.args) collect_vars(*a, out);
}

std::set<VarId> vars_of(const Expr& e) {
  std::set<VarId> out;
  collect_vars(e, out);
  return out;
}

// ---- base case: the initial state is concrete, so the kernel's own evaluator decides ----

Obligation base_case(const TaskModel& m, const Invariant& inv) {
  Obligation o;
  o.kind = ObligationKind::base_case;
  o.id = "base:" + inv.name;
  o.invariant = inv.name;
  o.loc = inv.loc;
  const kernel::State& s = m.initial_state();
  if (kernel::holds_in(inv, s)) {
    o.verdict = VerdictKind::proved;
    o.reason = "evaluated on the initial state";
    return o;
  }
  o.verdict = VerdictKind::refuted;
  o.reason = "the initial state violates it";
  Counterexample cex;
  if (inv.expr) {
    for (VarId id : vars_of(*inv.expr)) cex.pre.emplace_back(m.variables[id].name, s.get(id));
  }
  o.counterexample = std::move(cex);
  return o;
}

// ---- preservation ----

struct Worker {
  std::shared_ptr<const TaskModel> model;
  const VerifyOptions& options;
  std::vector<Obligation>& results;  // [action * n_invariants + invariant], blocking only
  const std::vector<std::size_t>& blocking;

  void run(std::size_t first, std::size_t stride) {
    const TaskModel& m = *model;
    z3::context ctx;
    // The SMT core directly: the default solver's tactic set-up costs milliseconds per
    // solver, and with assumptions and push/pop the default solver uses this core anyway.
    z3::solver solver(ctx, z3::solver::simple());
    detail::Watchdog watchdog(ctx);
    watchdog_ = &watchdog;
    detail::Encoder enc(ctx, m);
    situation_.emplace(detail::SymSituation::fresh(ctx, m, ""));
    // Its terms belong to `ctx`: they must go before it does, however run() ends.
    struct ResetSituation {
      std::optional<detail::SymSituation>& situation;
      ~ResetSituation() { situation.reset(); }
    } reset_situation{situation_};

    // The state hypotheses, once: bounds of every encodable variable, and every blocking
    // state invariant that can be encoded. Those that cannot are remembered: a satisfying
    // assignment might violate them, so it cannot be reported as a counterexample.
    std::vector<VarId> encodable;
    for (VarId id = 0; id < m.variables.size(); ++id) {
      try {
        solver.add(enc.bounds(id, enc.pre(id)));
        encodable.push_back(id);
      } catch (const detail::Unsupported&) {
      } catch (const z3::exception&) {
      }
    }
    std::vector<bool> hypothesis(m.invariants.size(), false);
    std::vector<std::string> omitted;
    for (std::size_t i : blocking) {
      const Invariant& inv = m.invariants[i];
      if (inv.transition) continue;  // relates two states: not a hypothesis on one
      if (!inv.expr) {
        omitted.push_back(inv.name);
        continue;
      }
      try {
        const z3::expr term = enc.encode_bool(*inv.expr, nullptr, nullptr);
        solver.add(term && enc.take_ranges());  // reachable states evaluate it without error
        hypothesis[i] = true;
      } catch (const detail::Unsupported&) {
        omitted.push_back(inv.name);
      } catch (const z3::exception&) {
        enc.take_ranges();
        omitted.push_back(inv.name);
      }
    }

    for (std::size_t a = first; a < m.actions.size(); a += stride) {
      const unsigned scopes = Z3_solver_get_num_scopes(ctx, solver);
      try {
        run_action(a, ctx, solver, enc, encodable, hypothesis, omitted);
      } catch (const z3::exception& e) {
        // A solver failure decides nothing: this action's open obligations are unknown, and
        // the run goes on.
        while (Z3_solver_get_num_scopes(ctx, solver) > scopes) solver.pop();
        enc.take_ranges();
        for (std::size_t k = 0; k < blocking.size(); ++k) {
          Obligation& o = slot(a, k);
          if (o.verdict != VerdictKind::unknown || !o.reason.empty()) continue;
          o.reason = std::string("the solver failed: ") + e.msg();
        }
      }
    }
  }

  detail::Watchdog* watchdog_ = nullptr;
  std::optional<detail::SymSituation> situation_;  // unconstrained: every situation
  std::atomic<std::size_t>* done_ = nullptr;

  Obligation& slot(std::size_t a, std::size_t k) { return results[a * blocking.size() + k]; }

  void run_action(std::size_t a,
                  z3::context& ctx,
                  z3::solver& solver,
                  detail::Encoder& enc,
                  const std::vector<VarId>& encodable,
                  const std::vector<bool>& hypothesis,
                  const std::vector<std::string>& omitted) {
    const TaskModel& m = *model;
    const Action& action = m.actions[a];
    for (std::size_t k = 0; k < blocking.size(); ++k) {
      Obligation& o = slot(a, k);
      const Invariant& inv = m.invariants[blocking[k]];
      o.kind = ObligationKind::preservation;
      o.id = "preservation:" + action.id + ":" + inv.name;
      o.action = action.id;
      o.invariant = inv.name;
      o.loc = inv.loc;
    }
    solver.push();
    // The kernel's decision on the action from any situation: the budget, step and dependency
    // checks are left to the run (preservation quantifies over every situation); the premise
    // of an obligation is that the kernel evaluates the invariant (parameters within bounds,
    // the cost and every effect computed) with `requires` holding.
    std::optional<detail::SymbolicStep> step;
    enc.reset_nonlinear();
    try {
      step = detail::symbolic_step(enc, *situation_, a);
      solver.add(step->checks_of(kernel::ReasonCode::requires_failed));
    } catch (const detail::Unsupported& u) {
      for (std::size_t k = 0; k < blocking.size(); ++k) {
        slot(a, k).verdict = VerdictKind::unknown;
        slot(a, k).reason = u.reason + " (in action `" + action.id + "`)";
      }
      solver.pop();
      report_progress();
      return;
    }
    const bool action_nonlinear = enc.nonlinear();
    std::set<VarId> written;
    for (const auto& e : action.effects) written.insert(e.variable);

    for (std::size_t k = 0; k < blocking.size(); ++k) {
      Obligation& o = slot(a, k);
      const std::size_t i = blocking[k];
      const Invariant& inv = m.invariants[i];
      if (!inv.expr) {
        o.verdict = VerdictKind::unknown;
        o.reason = inv.opaque_reason.empty()
                       ? "opaque predicate: a native (C++) invariant cannot be reasoned about"
                       : "opaque predicate: " + inv.opaque_reason;
        continue;
      }
      const std::set<VarId> reads = vars_of(*inv.expr);
      // The frame shortcut skips the solver; with --smtlib every obligation is written instead.
      if (options.smtlib_dir.empty() && hypothesis[i] &&
          std::none_of(reads.begin(), reads.end(), [&](VarId v) { return written.count(v) > 0; })) {
        o.verdict = VerdictKind::proved;
        o.reason = "frame: the action writes none of the invariant's variables";
        continue;
      }
      // The kernel's check of the invariant (an overflow fails it closed).
      const detail::Check& check = *step->invariant(inv.name);
      if (!check.unsupported.empty()) {
        o.verdict = VerdictKind::unknown;
        o.reason = check.unsupported;
        continue;
      }
      const bool nonlinear = action_nonlinear;
      const z3::expr act = ctx.bool_const(("check:" + o.id).c_str());
      solver.add(z3::implies(act, check.evaluated && !check.holds));
      z3::expr_vector assumptions(ctx);
      assumptions.push_back(act);
      if (!options.smtlib_dir.empty()) write_smtlib(o.id, solver, act);
      switch (watchdog_->run(options.timeout_ms, [&] { return solver.check(assumptions); })) {
        case z3::unsat:
          o.verdict = VerdictKind::proved;
          o.reason = "inductive: holds after the action whenever the invariants hold before it";
          break;
        case z3::unknown: {
          const std::string why = solver.reason_unknown();
          o.verdict = VerdictKind::unknown;
          if (watchdog_->timed_out() || why.find("timeout") != std::string::npos ||
              why.find("canceled") != std::string::npos) {
            o.reason = "timeout after " + std::to_string(options.timeout_ms) + " ms";
          } else {
            o.reason = nonlinear ? "nonlinear arithmetic (" + why + ")" : why;
          }
          break;
        }
        case z3::sat:
          if (!omitted.empty()) {
            o.verdict = VerdictKind::unknown;
            o.reason = "a counterexample exists if invariant `" + omitted.front() +
                       "` is ignored, and it could not be encoded (opaque or unsupported)";
            break;
          }
          refute(o, action, inv, solver.get_model(), enc, encodable, step->params, written);
          break;
      }
    }
    solver.pop();
    report_progress();
  }

  void report_progress() {
    if (!options.progress) return;
    const std::size_t done = done_->fetch_add(blocking.size()) + blocking.size();
    options.progress(done, results.size());
  }

  // A standalone SMT-LIB 2 file: the current assertions plus the obligation's literal.
  void write_smtlib(const std::string& id, z3::solver& solver, const z3::expr& act) {
    z3::solver alone(solver.ctx());
    for (const auto& a : solver.assertions()) alone.add(a);
    alone.add(act);
    std::string name = id;
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    }
    // Whole or not at all, never through a link (file.hpp); a rerun replaces its own files.
    kernel::write_file_atomically(
        options.smtlib_dir + "/" + name + ".smt2",
        "; clampai obligation " + id + ": unsat means proved\n" + alone.to_smt2(),
        /*replace=*/true,
        "SMT-LIB file");
  }

  // Builds the counterexample and replays it through the kernel before reporting it.
  void refute(Obligation& o,
              const Action& action,
              const Invariant& inv,
              const z3::model& zm,
              detail::Encoder& enc,
              const std::vector<VarId>& encodable,
              const std::vector<z3::expr>& param_symbols,
              const std::set<VarId>& written) {
    const TaskModel& m = *model;
    std::vector<std::pair<VarId, Value>> assignment;
    for (VarId id : encodable)
      assignment.emplace_back(id, enc.value_of(zm, enc.pre(id), m.variables[id].type));
    const kernel::State pre = m.initial_state().with(assignment);
    kernel::Proposal proposal{static_cast<std::size_t>(&action - m.actions.data()), {}};
    Counterexample cex;
    for (std::size_t i = 0; i < action.parameters.size(); ++i) {
      const kernel::Parameter& p = action.parameters[i];
      const Value v =
          Value::number(kernel::Decimal{zm.eval(param_symbols[i], true).get_numeral_int64(),
                                        static_cast<std::uint8_t>(p.type.scale())});
      proposal.params.push_back(v);
      cex.params.emplace_back(p.name, v);
    }
    kernel::KernelOptions replay_options;
    replay_options.check_initial_state = false;
    const kernel::SafetyKernel replay(model, replay_options);
    const kernel::Decision d = replay.evaluate_in(pre, proposal);
    if (!d.has(kernel::ReasonCode::invariant_violated, inv.name)) {
      throw InternalError("verifier: the counterexample for " + o.id +
                          " does not replay through the kernel: the kernel " +
                          (d.approved
                               ? std::string("approves it")
                               : "rejects it for other reasons: " + d.reasons.front().message));
    }
    // The variables that matter: the invariant's, the action's guard and effects, the ones it
    // writes, and those of the hypothesis invariants that share one of them.
    std::set<VarId> shown = vars_of(*inv.expr);
    if (action.guard) collect_vars(*action.guard, shown);
    for (const auto& e : action.effects) {
      shown.insert(e.variable);
      if (e.value) collect_vars(*e.value, shown);
    }
    const std::set<VarId> core = shown;
    for (const auto& other : m.invariants) {
      if (!other.expr || other.enforcement != Enforcement::blocking) continue;
      const std::set<VarId> vs = vars_of(*other.expr);
      if (std::any_of(vs.begin(), vs.end(), [&](VarId v) { return core.count(v) > 0; }))
        shown.insert(vs.begin(), vs.end());
    }
    for (VarId id : shown) {
      cex.pre.emplace_back(m.variables[id].name, pre.get(id));
      Value after = pre.get(id);
      if (written.count(id) > 0) {
        for (const auto& [cid, v] : d.changes) {
          if (cid == id) after = v;
        }
      }
      cex.post.emplace_back(m.variables[id].name, after);
    }
    o.verdict = VerdictKind::refuted;
    o.reason = "the kernel will block `" + action.id + "` in such states";
    o.counterexample = std::move(cex);
  }
};

// ---- lints: properties of the spec itself ----

std::vector<Obligation> lints(const TaskModel& m,
                              const std::vector<std::size_t>& blocking,
                              unsigned timeout_ms) {
  std::vector<Obligation> out;
  z3::context ctx;
  z3::solver solver(ctx, z3::solver::simple());
  detail::Watchdog watchdog(ctx);
  detail::Encoder enc(ctx, m);
  for (VarId id = 0; id < m.variables.size(); ++id) {
    try {
      solver.add(enc.bounds(id, enc.pre(id)));
    } catch (const detail::Unsupported&) {
    }
  }
  // One literal per encodable blocking state invariant: lit -> I, and neg -> !I.
  struct Lit {
    std::string name;
    z3::expr holds, fails;
  };
  std::vector<Lit> lits;
  for (std::size_t i : blocking) {
    const Invariant& inv = m.invariants[i];
    if (!inv.expr || inv.transition) continue;
    try {
      const z3::expr term = enc.encode_bool(*inv.expr, nullptr, nullptr) && enc.take_ranges();
      Lit l{inv.name,
            ctx.bool_const(("holds:" + inv.name).c_str()),
            ctx.bool_const(("fails:" + inv.name).c_str())};
      solver.add(z3::implies(l.holds, term));
      solver.add(z3::implies(l.fails, !term));
      lits.push_back(l);
    } catch (const detail::Unsupported&) {
    }
  }
  auto make = [&](std::string id, std::string action, std::string invariant) {
    Obligation o;
    o.kind = ObligationKind::lint;
    o.id = std::move(id);
    o.action = std::move(action);
    o.invariant = std::move(invariant);
    return o;
  };
  auto unknown = [&](Obligation& o, const std::string& why) {
    o.verdict = VerdictKind::unknown;
    o.reason = why;
  };
  z3::expr_vector all(ctx);
  for (const auto& l : lits) all.push_back(l.holds);

  Obligation consistent = make("lint:consistent", "", "");
  switch (watchdog.run(timeout_ms, [&] { return solver.check(all); })) {
    case z3::sat:
      consistent.verdict = VerdictKind::proved;
      consistent.reason = "some state within the bounds satisfies every blocking invariant";
      break;
    case z3::unsat: {
      consistent.verdict = VerdictKind::refuted;
      std::string names;
      for (const auto& c : solver.unsat_core())
        names += (names.empty() ? "" : ", ") + c.decl().name().str().substr(6);
      consistent.reason = "the blocking invariants are jointly unsatisfiable within the bounds (" +
                          names + "): every check would be vacuous";
      break;
    }
    default:
      unknown(consistent, solver.reason_unknown());
  }
  const bool vacuous = consistent.verdict != VerdictKind::proved;
  out.push_back(consistent);
  if (vacuous) return out;

  for (std::size_t k = 0; k < lits.size(); ++k) {
    Obligation o = make("lint:independent:" + lits[k].name, "", lits[k].name);
    z3::expr_vector assumptions(ctx);
    for (std::size_t j = 0; j < lits.size(); ++j)
      assumptions.push_back(j == k ? lits[j].fails : lits[j].holds);
    switch (watchdog.run(timeout_ms, [&] { return solver.check(assumptions); })) {
      case z3::sat:
        o.verdict = VerdictKind::proved;
        o.reason = "not implied by the other invariants";
        break;
      case z3::unsat: {
        std::string names;
        for (const auto& c : solver.unsat_core()) {
          const std::string n = c.decl().name().str();
          if (n.rfind("holds:", 0) == 0) names += (names.empty() ? "`" : ", `") + n.substr(6) + "`";
        }
        o.verdict = VerdictKind::refuted;
        o.reason = names.empty() ? "redundant: it holds in every state within the bounds"
                                 : "redundant: implied by " + names;
        break;
      }
      default:
        unknown(o, solver.reason_unknown());
    }
    out.push_back(o);
  }

  for (const Action& a : m.actions) {
    Obligation enabled = make("lint:enabled:" + a.id, a.id, "");
    Obligation overflow = make("lint:no-overflow:" + a.id, a.id, "");
    enabled.loc = overflow.loc = a.loc;
    solver.push();
    try {
      // The symbolic step of `a` from any situation: its parameter and `requires` checks enable
      // it, its effects' overflow checks are the lint.
      const detail::SymbolicStep step =
          detail::symbolic_step(enc,
                                detail::SymSituation::fresh(ctx, m, ""),
                                static_cast<std::size_t>(&a - &m.actions[0]));
      solver.add(step.checks_of(kernel::ReasonCode::invalid_parameter) &&
                 step.checks_of(kernel::ReasonCode::requires_failed));
      switch (watchdog.run(timeout_ms, [&] { return solver.check(all); })) {
        case z3::sat:
          enabled.verdict = VerdictKind::proved;
          enabled.reason = "enabled in some state that satisfies the invariants";
          break;
        case z3::unsat:
          enabled.verdict = VerdictKind::refuted;
          enabled.reason =
              "dead action: `requires` can never hold in a state that satisfies the invariants";
          break;
        default:
          unknown(enabled, solver.reason_unknown());
      }
      z3::expr in_range = ctx.bool_val(true);
      for (const detail::Check& c : step.checks) {
        if (c.code == kernel::ReasonCode::overflow && c.subject != a.id)
          in_range = in_range && c.holds;
      }
      if (a.effects.empty()) {
        overflow.verdict = VerdictKind::proved;
        overflow.reason = "no numeric effect";
      } else {
        const z3::expr lit = ctx.bool_const(("overflow:" + a.id).c_str());
        solver.add(z3::implies(lit, !in_range));
        z3::expr_vector assumptions = all;
        assumptions.push_back(lit);
        switch (watchdog.run(timeout_ms, [&] { return solver.check(assumptions); })) {
          case z3::unsat:
            overflow.verdict = VerdictKind::proved;
            overflow.reason = "every written value stays within int64";
            break;
          case z3::sat:
            overflow.verdict = VerdictKind::refuted;
            overflow.reason = "an effect can overflow int64 in some state: the kernel rejects `" +
                              a.id + "` there with `overflow` (add bounds)";
            break;
          default:
            unknown(overflow, solver.reason_unknown());
        }
      }
    } catch (const detail::Unsupported& u) {
      enc.take_ranges();
      if (enabled.verdict != VerdictKind::proved && enabled.verdict != VerdictKind::refuted)
        unknown(enabled, u.reason);
      unknown(overflow, u.reason);
    }
    solver.pop();
    out.push_back(enabled);
    out.push_back(overflow);
  }
  return out;
}

}  // namespace

Report verify(std::shared_ptr<const TaskModel> model, const VerifyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const TaskModel& m = *model;
  Report report;
  std::vector<std::size_t> blocking;
  for (std::size_t i = 0; i < m.invariants.size(); ++i) {
    if (m.invariants[i].enforcement == Enforcement::blocking) blocking.push_back(i);
  }

  for (std::size_t i : blocking) report.obligations.push_back(base_case(m, m.invariants[i]));
  // T1, T2 and T4 do not depend on the spec: facts of the kernel, by construction.
  report.facts.push_back(Fact{"budget:t1",
                              "T1: net spend stays within [0, " + m.format_amount(m.budget.total) +
                                  "]: every charge is guarded by BudgetController::can_afford"});
  report.facts.push_back(Fact{"budget:t2",
                              "T2: at most " + std::to_string(m.budget.step_limit) +
                                  " non-emergency steps (floor(" + m.format_amount(m.budget.total) +
                                  " / " + m.format_amount(m.budget.min_action_cost) + ")" +
                                  (m.budget.declared_max_steps ? ", capped by max_steps" : "") +
                                  "): the kernel's step-limit check"});
  report.facts.push_back(
      Fact{"budget:t4", "T4: gross spend never decreases: a refund lowers net spend only"});

  std::vector<Obligation> preservation(m.actions.size() * blocking.size());
  const unsigned jobs = std::max(
      1U,
      std::min<unsigned>(options.jobs,
                         static_cast<unsigned>(std::max<std::size_t>(1, m.actions.size()))));
  std::atomic<std::size_t> done{0};
  // One worker (and Z3 context) per job, each taking every jobs-th action.
  kernel::parallel_for(jobs, jobs, [&](std::size_t t, unsigned) {
    Worker worker{model, options, preservation, blocking, {}, {}, {}};
    worker.done_ = &done;
    worker.run(static_cast<unsigned>(t), jobs);
  });
  if (options.depth > 0)
    detail::check_reachability(model, preservation, options.depth, options.timeout_ms);
  for (auto& o : preservation) report.obligations.push_back(std::move(o));
  try {
    for (auto& o : lints(m, blocking, options.timeout_ms))
      report.obligations.push_back(std::move(o));
  } catch (const z3::exception& e) {
    Obligation o;
    o.kind = ObligationKind::lint;
    o.id = "lint:consistent";
    o.reason = std::string("the solver failed: ") + e.msg();
    report.obligations.push_back(std::move(o));
  }
  for (auto& o : interface_obligations(model, options.timeout_ms))
    report.obligations.push_back(std::move(o));

  for (auto& o : report.obligations) {
    o.loc = location_of(m, o);
    if (o.kind == ObligationKind::lint) {
      report.warnings += o.verdict != VerdictKind::proved;
      continue;
    }
    switch (o.verdict) {
      case VerdictKind::proved:
        ++report.proved;
        break;
      case VerdictKind::refuted:
        ++report.refuted;
        break;
      case VerdictKind::unknown:
        ++report.unknown;
        break;
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

kernel::SourceLoc location_of(const TaskModel& model, const Obligation& o) {
  if (!o.invariant.empty()) {
    for (const auto& inv : model.invariants)
      if (inv.name == o.invariant) return inv.loc;
  }
  if (!o.action.empty()) {
    if (const auto a = model.find_action(o.action)) return model.actions[*a].loc;
  }
  if (o.id.rfind("interface:", 0) == 0 || o.id == "lint:assumes-consistent")
    return model.interface.loc;
  return {};
}

}  // namespace clampai::verifier
