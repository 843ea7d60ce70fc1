// Proof obligations. The preservation obligations of each action are checked in a fresh Z3
// context of their own (solving.hpp), one after the other in spec order: the state hypotheses
// and the action's step, then each negated invariant under its own literal; so that what they
// report does not depend on the job count nor on other actions (a check that failed leaves the
// next obligation a fresh context).
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
#include "solving.hpp"
#include "step.hpp"
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

// What every preservation obligation of one action starts from, in a fresh context: the state
// hypotheses (bounds of every encodable variable, every blocking state invariant that can be
// encoded) and the kernel's decision on the action from any situation. Each obligation that
// reaches the solver gets its own, so its verdict and counterexample depend on it alone (not
// on what else a worker solved before it, nor on an earlier check that failed).
struct ActionContext {
  detail::Session session;
  z3::solver solver;
  detail::Encoder enc;
  std::vector<VarId> encodable{};
  std::vector<bool> hypothesis{};
  std::vector<std::string> omitted{};  // blocking invariants that could not be encoded
  std::optional<detail::SymbolicStep> step{};
  bool nonlinear = false;   // the action's step multiplies non-constant terms
  std::string unsupported;  // why the action cannot be encoded, if it cannot

  ActionContext(const TaskModel& m, bool alone)
      // The SMT core directly: the default solver's tactic set-up costs milliseconds per
      // solver, and with assumptions the default solver uses this core anyway.
      : session(alone), solver(session.ctx(), z3::solver::simple()), enc(session.ctx(), m) {}

  // @throws z3::exception
  void prepare(const TaskModel& m, const std::vector<std::size_t>& blocking, std::size_t a) {
    for (VarId id = 0; id < m.variables.size(); ++id) {
      try {
        solver.add(enc.bounds(id, enc.pre(id)));
        encodable.push_back(id);
      } catch (const detail::Unsupported&) {
      } catch (const z3::exception&) {
        if (session.out_of_memory()) throw;
      }
    }
    // Those that cannot be encoded are remembered: a satisfying assignment might violate them,
    // so it cannot be reported as a counterexample.
    hypothesis.assign(m.invariants.size(), false);
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
        if (session.out_of_memory()) throw;
        enc.take_ranges();
        omitted.push_back(inv.name);
      }
    }
    // The kernel's decision on the action from any situation: the budget, step and dependency
    // checks are left to the run (preservation quantifies over every situation); the premise
    // of an obligation is that the kernel evaluates the invariant (parameters within bounds,
    // the cost and every effect computed) with `requires` holding.
    enc.reset_nonlinear();
    try {
      const detail::SymSituation situation = detail::SymSituation::fresh(session.ctx(), m, "");
      step = detail::symbolic_step(enc, situation, a);
      solver.add(step->checks_of(kernel::ReasonCode::requires_failed));
    } catch (const detail::Unsupported& u) {
      unsupported = u.reason + " (in action `" + m.actions[a].id + "`)";
    }
    nonlinear = enc.nonlinear();
  }
};

struct Worker {
  std::shared_ptr<const TaskModel> model;
  const VerifyOptions& options;
  const detail::Limits& limits;
  std::vector<Obligation>& results;  // [action * n_invariants + invariant], blocking only
  const std::vector<std::size_t>& blocking;
  std::atomic<std::size_t>* done_ = nullptr;

  void run(std::size_t first, std::size_t stride) {
    for (std::size_t a = first; a < model->actions.size(); a += stride) {
      detail::run_unit([&](bool alone) { run_action(a, alone); });
      report_progress();
    }
  }

  Obligation& slot(std::size_t a, std::size_t k) { return results[a * blocking.size() + k]; }

  // A fresh context for action `a`, prepared; null with `why` if that failed.
  // @throws detail::OutOfMemory (see detail::Session)
  std::unique_ptr<ActionContext> open(std::size_t a, bool alone, std::string& why) {
    std::unique_ptr<ActionContext> ac;
    try {
      ac = std::make_unique<ActionContext>(*model, alone);
    } catch (const z3::exception& e) {
      why = detail::Session::not_created(e, alone);
      return nullptr;
    }
    try {
      ac->prepare(*model, blocking, a);
    } catch (const z3::exception& e) {
      why = ac->session.failure(e);
      return nullptr;
    }
    return ac;
  }

  // Every obligation of action `a`, from scratch (a unit: run again alone if Z3 ran out of
  // memory beside other units).
  void run_action(std::size_t a, bool alone) {
    const TaskModel& m = *model;
    const Action& action = m.actions[a];
    for (std::size_t k = 0; k < blocking.size(); ++k) {
      Obligation& o = slot(a, k);
      const Invariant& inv = m.invariants[blocking[k]];
      o = Obligation{};
      o.kind = ObligationKind::preservation;
      o.id = "preservation:" + action.id + ":" + inv.name;
      o.action = action.id;
      o.invariant = inv.name;
      o.loc = inv.loc;
    }
    auto all_unknown = [&](const std::string& why) {
      for (std::size_t k = 0; k < blocking.size(); ++k) slot(a, k).reason = why;
    };
    if (limits.deadline.passed()) return all_unknown(limits.deadline.not_reached());
    std::string why;
    std::unique_ptr<ActionContext> ac = open(a, alone, why);
    if (!ac) return all_unknown(why);
    if (!ac->unsupported.empty()) return all_unknown(ac->unsupported);
    // The action's obligations are checked one after the other in one context, in spec order,
    // whatever the job count (so the models do not depend on it); a check that failed may have
    // left the context damaged: the next obligation gets a fresh one, prepared as the first.
    bool damaged = false;
    std::set<VarId> written;
    for (const auto& e : action.effects) written.insert(e.variable);

    for (std::size_t k = 0; k < blocking.size(); ++k) {
      Obligation& o = slot(a, k);
      const std::size_t i = blocking[k];
      const Invariant& inv = m.invariants[i];
      if (!inv.expr) {
        o.reason = inv.opaque_reason.empty()
                       ? "opaque predicate: a native (C++) invariant cannot be reasoned about"
                       : "opaque predicate: " + inv.opaque_reason;
        continue;
      }
      const std::set<VarId> reads = vars_of(*inv.expr);
      // The frame shortcut skips the solver; with --smtlib every obligation is written instead.
      if (options.smtlib_dir.empty() && ac->hypothesis[i] &&
          std::none_of(reads.begin(), reads.end(), [&](VarId v) { return written.count(v) > 0; })) {
        o.verdict = VerdictKind::proved;
        o.reason = "frame: the action writes none of the invariant's variables";
        continue;
      }
      // The kernel's check of the invariant (an overflow fails it closed).
      if (const std::string& u = ac->step->invariant(inv.name)->unsupported; !u.empty()) {
        o.reason = u;
        continue;
      }
      if (limits.deadline.passed()) {
        o.reason = limits.deadline.not_reached();
        continue;
      }
      if (damaged) {
        ac.reset();                // first: Z3's memory limit counts every context alive
        ac = open(a, alone, why);  // prepared as the first was
        if (!ac) {
          o.reason = why;
          continue;
        }
        damaged = false;
      }
      try {
        damaged = decide(o, action, inv, *ac, written);
      } catch (const z3::exception& e) {
        o.verdict = VerdictKind::unknown;
        o.counterexample.reset();
        o.reason = ac->session.failure(e);
        damaged = true;
      }
    }
  }

  // One obligation, in the action's context; true iff the check failed (the context may be
  // damaged). @throws z3::exception
  bool decide(Obligation& o,
              const Action& action,
              const Invariant& inv,
              ActionContext& ac,
              const std::set<VarId>& written) {
    z3::context& ctx = ac.session.ctx();
    const detail::Check& check = *ac.step->invariant(inv.name);
    const z3::expr act = ctx.bool_const(("check:" + o.id).c_str());
    ac.solver.add(z3::implies(act, check.evaluated && !check.holds));
    z3::expr_vector assumptions(ctx);
    assumptions.push_back(act);
    if (!options.smtlib_dir.empty()) write_smtlib(o.id, ac.solver, act);
    const detail::Outcome r = ac.session.check(ac.solver, assumptions, limits, ac.nonlinear);
    switch (r.result) {
      case z3::unsat:
        o.verdict = VerdictKind::proved;
        o.reason = "inductive: holds after the action whenever the invariants hold before it";
        break;
      case z3::unknown:
        o.reason = r.reason;
        break;
      case z3::sat:
        if (!ac.omitted.empty()) {
          o.reason = "a counterexample exists if invariant `" + ac.omitted.front() +
                     "` is ignored, and it could not be encoded (opaque or unsupported)";
          break;
        }
        refute(
            o, action, inv, ac.solver.get_model(), ac.enc, ac.encodable, ac.step->params, written);
        break;
    }
    return r.failed;
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

// The lints' context: the bounds, and one literal per encodable blocking state invariant
// (holds -> I, fails -> !I).
struct LintContext {
  struct Lit {
    std::string name;
    z3::expr holds, fails;
  };
  detail::Session session;
  z3::solver solver;
  detail::Encoder enc;
  std::vector<Lit> lits{};
  z3::expr_vector all;  // every `holds`
  // Blocking state invariants left out (opaque, or not encodable): a state or step the solver
  // finds may violate them, so a lint that needs one to exist is unknown, never proved.
  std::vector<std::string> omitted{};

  // `o` was decided by a state the solver found: without every invariant, it is unknown.
  bool found_without_all(Obligation& o) const {
    if (omitted.empty()) return false;
    o.verdict = VerdictKind::unknown;
    o.reason = "found in a state that satisfies every invariant but `" + omitted.front() +
               "`, which could not be encoded (opaque or unsupported)";
    return true;
  }

  LintContext(const TaskModel& m, bool alone)
      : session(alone),
        solver(session.ctx(), z3::solver::simple()),
        enc(session.ctx(), m),
        all(session.ctx()) {}

  // @throws z3::exception
  void prepare(const TaskModel& m, const std::vector<std::size_t>& blocking) {
    z3::context& ctx = session.ctx();
    for (VarId id = 0; id < m.variables.size(); ++id) {
      try {
        solver.add(enc.bounds(id, enc.pre(id)));
      } catch (const detail::Unsupported&) {
      }
    }
    for (std::size_t i : blocking) {
      const Invariant& inv = m.invariants[i];
      if (inv.transition) continue;
      if (!inv.expr) {
        omitted.push_back(inv.name);
        continue;
      }
      try {
        const z3::expr term = enc.encode_bool(*inv.expr, nullptr, nullptr) && enc.take_ranges();
        Lit l{inv.name,
              ctx.bool_const(("holds:" + inv.name).c_str()),
              ctx.bool_const(("fails:" + inv.name).c_str())};
        solver.add(z3::implies(l.holds, term));
        solver.add(z3::implies(l.fails, !term));
        lits.push_back(l);
        all.push_back(l.holds);
      } catch (const detail::Unsupported&) {
        omitted.push_back(inv.name);
      }
    }
  }
};

// Every lint, each query in a context where no earlier query failed: after a failure (which
// may leave a context damaged) the next lint gets a fresh one.
std::vector<Obligation> lints(const TaskModel& m,
                              const std::vector<std::size_t>& blocking,
                              const detail::Limits& limits,
                              bool alone) {
  std::vector<Obligation> out;
  std::unique_ptr<LintContext> lc;
  std::string why;  // why the last context could not be prepared
  auto ready = [&]() -> bool {
    if (lc) return true;
    try {
      lc = std::make_unique<LintContext>(m, alone);
    } catch (const z3::exception& e) {
      why = detail::Session::not_created(e, alone);
      return false;
    }
    try {
      lc->prepare(m, blocking);
      return true;
    } catch (const z3::exception& e) {
      why = lc->session.failure(e);
      lc.reset();
      return false;
    }
  };
  auto unknown = [&](Obligation& o, const std::string& reason) {
    o.verdict = VerdictKind::unknown;
    o.reason = reason;
  };
  // Runs `body` (which fills `o`, and `also` if given) on a ready context; a failure leaves
  // them unknown.
  auto lint = [&](Obligation& o, Obligation* also, auto&& body) {
    if (limits.deadline.passed()) {
      unknown(o, limits.deadline.not_reached());
      if (also) unknown(*also, limits.deadline.not_reached());
      return;
    }
    if (!ready()) {
      unknown(o, why);
      if (also) unknown(*also, why);
      return;
    }
    try {
      if (!body(*lc)) lc.reset();
    } catch (const z3::exception& e) {
      const std::string reason = lc->session.failure(e);
      if (o.reason.empty()) unknown(o, reason);
      if (also && also->reason.empty()) unknown(*also, reason);
      lc.reset();
    }
  };
  auto make = [&](std::string id, std::string action, std::string invariant) {
    Obligation o;
    o.kind = ObligationKind::lint;
    o.id = std::move(id);
    o.action = std::move(action);
    o.invariant = std::move(invariant);
    return o;
  };
  auto check = [&](LintContext& c, const z3::expr_vector& assumptions) {
    return c.session.check(c.solver, assumptions, limits);
  };

  Obligation consistent = make("lint:consistent", "", "");
  lint(consistent, nullptr, [&](LintContext& c) {
    const detail::Outcome r = check(c, c.all);
    switch (r.result) {
      case z3::sat:
        if (c.found_without_all(consistent)) break;
        consistent.verdict = VerdictKind::proved;
        consistent.reason = "some state within the bounds satisfies every blocking invariant";
        break;
      case z3::unsat: {
        consistent.verdict = VerdictKind::refuted;
        std::string names;
        for (const auto& core : c.solver.unsat_core())
          names += (names.empty() ? "" : ", ") + core.decl().name().str().substr(6);
        consistent.reason =
            "the blocking invariants are jointly unsatisfiable within the bounds (" + names +
            "): every check would be vacuous";
        break;
      }
      default:
        unknown(consistent, r.reason);
    }
    return !r.failed;
  });
  // Vacuous: refuted, or undecided with every invariant encoded (then nothing else is known).
  const bool vacuous = consistent.verdict == VerdictKind::refuted ||
                       (consistent.verdict == VerdictKind::unknown && (!lc || lc->omitted.empty()));
  out.push_back(consistent);
  if (vacuous || !lc) return out;
  const std::vector<std::string> names = [&] {
    std::vector<std::string> v;
    for (const auto& l : lc->lits) v.push_back(l.name);
    return v;
  }();

  for (std::size_t k = 0; k < names.size(); ++k) {
    Obligation o = make("lint:independent:" + names[k], "", names[k]);
    lint(o, nullptr, [&](LintContext& c) {
      z3::expr_vector assumptions(c.session.ctx());
      for (std::size_t j = 0; j < c.lits.size(); ++j)
        assumptions.push_back(j == k ? c.lits[j].fails : c.lits[j].holds);
      const detail::Outcome r = check(c, assumptions);
      switch (r.result) {
        case z3::sat:
          if (c.found_without_all(o)) break;
          o.verdict = VerdictKind::proved;
          o.reason = "not implied by the other invariants";
          break;
        case z3::unsat: {
          std::string implied;
          for (const auto& core : c.solver.unsat_core()) {
            const std::string n = core.decl().name().str();
            if (n.rfind("holds:", 0) == 0)
              implied += (implied.empty() ? "`" : ", `") + n.substr(6) + "`";
          }
          o.verdict = VerdictKind::refuted;
          o.reason = implied.empty() ? "redundant: it holds in every state within the bounds"
                                     : "redundant: implied by " + implied;
          break;
        }
        default:
          unknown(o, r.reason);
      }
      return !r.failed;
    });
    out.push_back(o);
  }

  for (const Action& a : m.actions) {
    Obligation enabled = make("lint:enabled:" + a.id, a.id, "");
    Obligation overflow = make("lint:no-overflow:" + a.id, a.id, "");
    enabled.loc = overflow.loc = a.loc;
    lint(enabled, &overflow, [&](LintContext& c) {
      z3::context& ctx = c.session.ctx();
      c.solver.push();
      bool usable = true;
      try {
        // The symbolic step of `a` from any situation: its parameter and `requires` checks
        // enable it, its effects' overflow checks are the lint.
        const detail::SymbolicStep step =
            detail::symbolic_step(c.enc,
                                  detail::SymSituation::fresh(ctx, m, ""),
                                  static_cast<std::size_t>(&a - &m.actions[0]));
        c.solver.add(step.checks_of(kernel::ReasonCode::invalid_parameter) &&
                     step.checks_of(kernel::ReasonCode::requires_failed));
        const detail::Outcome r = check(c, c.all);
        usable = !r.failed;
        switch (r.result) {
          case z3::sat:
            if (c.found_without_all(enabled)) break;
            enabled.verdict = VerdictKind::proved;
            enabled.reason = "enabled in some state that satisfies the invariants";
            break;
          case z3::unsat:
            enabled.verdict = VerdictKind::refuted;
            enabled.reason =
                "dead action: `requires` can never hold in a state that satisfies the invariants";
            break;
          default:
            unknown(enabled, r.reason);
        }
        z3::expr in_range = ctx.bool_val(true);
        for (const detail::Check& ch : step.checks) {
          if (ch.code == kernel::ReasonCode::overflow && ch.subject != a.id)
            in_range = in_range && ch.holds;
        }
        if (a.effects.empty()) {
          overflow.verdict = VerdictKind::proved;
          overflow.reason = "no numeric effect";
        } else if (!usable) {
          unknown(overflow, r.reason);
        } else if (limits.deadline.passed()) {
          unknown(overflow, limits.deadline.not_reached());
        } else {
          const z3::expr lit = ctx.bool_const(("overflow:" + a.id).c_str());
          c.solver.add(z3::implies(lit, !in_range));
          z3::expr_vector assumptions = c.all;
          assumptions.push_back(lit);
          const detail::Outcome o = check(c, assumptions);
          usable = !o.failed;
          switch (o.result) {
            case z3::unsat:
              overflow.verdict = VerdictKind::proved;
              overflow.reason = "every written value stays within int64";
              break;
            case z3::sat:
              if (c.found_without_all(overflow)) break;
              overflow.verdict = VerdictKind::refuted;
              overflow.reason = "an effect can overflow int64 in some state: the kernel rejects `" +
                                a.id + "` there with `overflow` (add bounds)";
              break;
            default:
              unknown(overflow, o.reason);
          }
        }
      } catch (const detail::Unsupported& u) {
        c.enc.take_ranges();
        if (enabled.verdict != VerdictKind::proved && enabled.verdict != VerdictKind::refuted)
          unknown(enabled, u.reason);
        unknown(overflow, u.reason);
      }
      if (usable) c.solver.pop();
      return usable;
    });
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

  const detail::Limits limits{options.timeout_ms, options.deadline};
  std::vector<Obligation> preservation(m.actions.size() * blocking.size());
  const unsigned jobs = std::max(
      1U,
      std::min<unsigned>(options.jobs,
                         static_cast<unsigned>(std::max<std::size_t>(1, m.actions.size()))));
  std::atomic<std::size_t> done{0};
  // One worker per job, each taking every jobs-th action; each obligation that reaches the
  // solver has a fresh context, so what it reports does not depend on the job count.
  kernel::parallel_for(jobs, jobs, [&](std::size_t t, unsigned) {
    Worker worker{model, options, limits, preservation, blocking, &done};
    worker.run(static_cast<unsigned>(t), jobs);
  });
  if (options.depth > 0) detail::check_reachability(model, preservation, options.depth, limits);
  for (auto& o : preservation) report.obligations.push_back(std::move(o));
  std::vector<Obligation> lint_results;
  detail::run_unit([&](bool alone) { lint_results = lints(m, blocking, limits, alone); });
  for (auto& o : lint_results) report.obligations.push_back(std::move(o));
  for (auto& o : interface_obligations(model, options.timeout_ms, options.deadline))
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
