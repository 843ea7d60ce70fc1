// Obligations between tasks, and a task's obligations to its own interface. Every formula is
// encoded with the same Encoder as the verifier's preservation checks, in one context where
// variables of different models with the same name are the same Z3 constant.
#include "clampai/verifier/contract.hpp"

#include <z3++.h>

#include <algorithm>
#include <map>
#include <set>

#include "clampai/kernel/safety_kernel.hpp"
#include "solving.hpp"
#include "step.hpp"
#include "z3_encoder.hpp"

namespace clampai::verifier {

using kernel::Enforcement;
using kernel::State;
using kernel::TaskModel;
using kernel::Value;
using kernel::VarId;

Formula Formula::of(std::shared_ptr<const TaskModel> model,
                    kernel::ExprPtr expr,
                    std::string label) {
  Formula f;
  f.kind = Kind::expr;
  f.model = std::move(model);
  f.expr = std::move(expr);
  f.label = std::move(label);
  return f;
}

Formula Formula::all(std::vector<Formula> parts, std::string label) {
  Formula f;
  f.kind = Kind::all_of;
  f.parts = std::move(parts);
  f.label = std::move(label);
  return f;
}

Formula Formula::any(std::vector<Formula> parts, std::string label) {
  Formula f = all(std::move(parts), std::move(label));
  f.kind = Kind::any_of;
  return f;
}

Formula Formula::negate(Formula inner) {
  Formula f;
  f.kind = Kind::negation;
  f.label = "not " + inner.label;
  f.parts.push_back(std::move(inner));
  return f;
}

namespace {

void models_of(const Formula& f, std::vector<std::shared_ptr<const TaskModel>>& out) {
  if (f.model && std::find(out.begin(), out.end(), f.model) == out.end()) out.push_back(f.model);
  for (const Formula& p : f.parts) models_of(p, out);
}

void collect_names(const Formula& f, std::set<std::string>& out) {
  if (f.expr) {
    std::vector<bool> seen;
    kernel::collect_variables(*f.expr, seen);
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i]) out.insert(f.model->variables[i].name);
  }
  for (const Formula& p : f.parts) collect_names(p, out);
}

// The states of one counterexample, one per model, and the step's post-states with an actor.
struct Replay {
  std::map<const TaskModel*, State> pre, post;
  bool stepped = false;
};

// The kernel's reading of a formula: an expression holds iff it evaluates without error to
// true (blocking checks fail closed).
bool holds(const Formula& f, const Replay& r) {
  switch (f.kind) {
    case Formula::Kind::expr: {
      const State& pre = r.pre.at(f.model.get());
      const State& now = r.stepped ? r.post.at(f.model.get()) : pre;
      const kernel::EvalResult v =
          kernel::evaluate(*f.expr, kernel::EvalEnv{&now, {}, &pre, nullptr});
      return v.ok() && v.value.as_bool();
    }
    case Formula::Kind::all_of:
      return std::all_of(
          f.parts.begin(), f.parts.end(), [&](const Formula& p) { return holds(p, r); });
    case Formula::Kind::any_of:
      return std::any_of(
          f.parts.begin(), f.parts.end(), [&](const Formula& p) { return holds(p, r); });
    case Formula::Kind::negation:
      return !holds(f.parts.front(), r);
  }
  return false;
}

// The reasons a step's replay must not have: the solver modelled these checks, so a replay
// rejected for one of them means the encoding and the kernel disagree.
bool modelled(kernel::ReasonCode c) {
  using kernel::ReasonCode;
  return c == ReasonCode::requires_failed || c == ReasonCode::invariant_violated ||
         c == ReasonCode::bound_violated || c == ReasonCode::invalid_parameter;
}

// Rejections the checks do not model (an overflowing cost expression, an undefined value):
// such a step does not happen, so the candidate is not a counterexample either.
bool unmodelled(kernel::ReasonCode c) {
  using kernel::ReasonCode;
  return c == ReasonCode::overflow || c == ReasonCode::undefined_value;
}

}  // namespace

std::set<std::string> variables_of(const Formula& f) {
  std::set<std::string> out;
  collect_names(f, out);
  return out;
}

struct ContractChecker::Impl {
  Impl(const detail::Limits& l, bool alone)
      : limits(l), session(alone), ctx(session.ctx()), solver(ctx, z3::solver::simple()) {}

  detail::Limits limits;
  detail::Session session;
  z3::context& ctx;
  // One solver for every check, each inside push/pop: creating a default solver costs
  // milliseconds, a push microseconds.
  z3::solver solver;
  bool damaged = false;                                // a check failed in this context
  std::vector<std::shared_ptr<const TaskModel>> keep;  // models the encoders point into
  std::map<const TaskModel*, std::unique_ptr<detail::Encoder>> encoders;
  // One table of enumeration codes: variables of several tasks meet in one formula.
  std::shared_ptr<detail::EnumCodes> codes = std::make_shared<detail::EnumCodes>();

  detail::Encoder& encoder(const std::shared_ptr<const TaskModel>& m) {
    auto& slot = encoders[m.get()];
    if (!slot) {
      keep.push_back(m);
      slot = std::make_unique<detail::Encoder>(ctx, *m, "", codes);
    }
    return *slot;
  }

  // The post terms of the actor's step, by variable name.
  std::map<std::string, z3::expr> actor_post;

  std::vector<std::pair<VarId, z3::expr>> post_for(const TaskModel& m) {
    std::vector<std::pair<VarId, z3::expr>> out;
    for (const auto& [name, term] : actor_post) {
      if (auto id = m.schema->find(name)) out.emplace_back(*id, term);
    }
    return out;
  }

  // @throws detail::Unsupported
  z3::expr encode(const Formula& f, bool after) {
    switch (f.kind) {
      case Formula::Kind::expr: {
        detail::Encoder& enc = encoder(f.model);
        const auto post = after ? post_for(*f.model) : std::vector<std::pair<VarId, z3::expr>>{};
        const z3::expr e = enc.encode_bool(*f.expr, after ? &post : nullptr, nullptr);
        return e && enc.take_ranges();
      }
      case Formula::Kind::all_of:
      case Formula::Kind::any_of: {
        const bool conj = f.kind == Formula::Kind::all_of;
        z3::expr acc = ctx.bool_val(conj);
        for (const Formula& p : f.parts)
          acc = conj ? (acc && encode(p, after)) : (acc || encode(p, after));
        return acc;
      }
      case Formula::Kind::negation:
        return !encode(f.parts.front(), after);
    }
    return ctx.bool_val(true);
  }

  ContractOutcome run(const ContractCheck& c);
  ContractOutcome refute(const ContractCheck& c,
                         const z3::model& zm,
                         const std::vector<std::shared_ptr<const TaskModel>>& models,
                         const std::vector<z3::expr>& params,
                         bool dropped);
};

ContractChecker::ContractChecker(unsigned timeout_ms, Deadline deadline)
    : timeout_ms_(timeout_ms), deadline_(deadline) {}
ContractChecker::~ContractChecker() = default;

ContractOutcome ContractChecker::check(const ContractCheck& c) {
  ContractOutcome out;
  if (deadline_.passed()) {
    out.reason = deadline_.not_reached();
    return out;
  }
  detail::run_unit([&](bool alone) {
    // A context is reused until a check fails in it (a failure may leave it damaged), and a
    // check run alone has its own.
    if (!impl_ || alone || impl_->session.alone()) {
      impl_.reset();  // first: Z3's memory limit counts every context alive
      try {
        impl_ = std::make_unique<Impl>(detail::Limits{timeout_ms_, deadline_}, alone);
      } catch (const z3::exception& e) {
        out = ContractOutcome{};
        out.reason = detail::Session::not_created(e, alone);
        return;
      }
    }
    try {
      out = impl_->run(c);
      if (impl_->damaged) impl_.reset();
    } catch (const z3::exception& e) {
      out = ContractOutcome{};  // unknown: a solver failure decides nothing, the run goes on
      out.reason = impl_->session.failure(e);
      impl_.reset();
    }
  });
  return out;
}

ContractOutcome ContractChecker::Impl::run(const ContractCheck& c) {
  ContractOutcome out;
  std::vector<std::shared_ptr<const TaskModel>> models;
  if (c.actor) models.push_back(c.actor);
  for (const Formula& p : c.premises) models_of(p, models);
  models_of(c.conclusion, models);

  struct Scope {
    z3::solver& s;
    explicit Scope(z3::solver& solver) : s(solver) { s.push(); }
    ~Scope() { s.pop(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  } scope(solver);
  for (const auto& m : models) {
    detail::Encoder& enc = encoder(m);
    enc.take_ranges();  // nothing left over from an earlier check
    for (VarId id = 0; id < m->variables.size(); ++id) {
      try {
        solver.add(enc.bounds(id, enc.pre(id)));
      } catch (const detail::Unsupported&) {
      }
    }
  }
  // A premise that cannot be encoded is left out: that only weakens the hypotheses, so a proof
  // stands; a satisfying assignment is then reported only if the kernel confirms every premise.
  bool dropped = false;
  for (const Formula& p : c.premises) {
    try {
      solver.add(encode(p, false));
    } catch (const detail::Unsupported&) {
      dropped = true;
    }
  }
  actor_post.clear();
  std::vector<z3::expr> params;
  if (c.actor) {
    const kernel::Action& a = c.actor->actions.at(c.action);
    detail::Encoder& enc = encoder(c.actor);
    try {
      // The kernel's decision from some situation (any budget spent, any steps and
      // completions the kernel can have): every check, the cost included; a blocking
      // invariant that cannot be encoded is left out (`dropped`).
      const detail::SymSituation situation = detail::SymSituation::fresh(ctx, *c.actor, "");
      solver.add(situation.well_formed(*c.actor));
      const detail::SymbolicStep step = detail::symbolic_step(enc, situation, c.action);
      params = step.params;
      solver.add(step.approved_except({kernel::ReasonCode::invariant_violated}));
      for (const detail::Check& check : step.checks) {
        if (check.code != kernel::ReasonCode::invariant_violated) continue;
        if (check.unsupported.empty()) {
          solver.add(check.holds);
        } else {
          dropped = true;
        }
      }
      for (const auto& [id, term] : step.post) {
        solver.add(enc.bounds(id, term));  // enumeration values stay declared ones
        actor_post.insert_or_assign(c.actor->variables[id].name, term);
      }
    } catch (const detail::Unsupported& u) {
      out.reason = u.reason + " (in action `" + a.id + "`)";
      return out;
    }
  }
  try {
    solver.add(!encode(c.conclusion, c.actor != nullptr));
  } catch (const detail::Unsupported& u) {
    out.reason = u.reason;
    return out;
  }
  const detail::Outcome r = session.check(solver, z3::expr_vector(ctx), limits);
  damaged = r.failed;
  switch (r.result) {
    case z3::unsat:
      out.verdict = VerdictKind::proved;
      out.reason = c.actor ? "preserved: holds after the action whenever the premises hold before"
                           : "implied by the premises";
      return out;
    case z3::unknown:
      out.reason = r.reason;
      return out;
    case z3::sat:
      break;
  }
  return refute(c, solver.get_model(), models, params, dropped);
}

ContractOutcome ContractChecker::Impl::refute(
    const ContractCheck& c,
    const z3::model& zm,
    const std::vector<std::shared_ptr<const TaskModel>>& models,
    const std::vector<z3::expr>& params,
    bool dropped) {
  ContractOutcome out;
  Replay r;
  std::map<std::string, Value> values;
  for (const auto& m : models) {
    detail::Encoder& enc = encoder(m);
    std::vector<std::pair<VarId, Value>> assignment;
    for (VarId id = 0; id < m->variables.size(); ++id) {
      try {
        const Value v = enc.value_of(zm, enc.pre(id), m->variables[id].type);
        assignment.emplace_back(id, v);
        values.emplace(m->variables[id].name, v);
      } catch (const detail::Unsupported&) {
      }
    }
    r.pre.emplace(m.get(), m->initial_state().with(assignment));
  }
  Counterexample cex;
  std::set<std::string> shown = variables_of(c.conclusion);
  if (c.actor) {
    const kernel::Action& a = c.actor->actions.at(c.action);
    kernel::Proposal proposal{c.action, {}};
    for (std::size_t i = 0; i < a.parameters.size(); ++i) {
      const Value v =
          Value::number(kernel::Decimal{zm.eval(params[i], true).get_numeral_int64(),
                                        static_cast<std::uint8_t>(a.parameters[i].type.scale())});
      proposal.params.push_back(v);
      cex.params.emplace_back(a.parameters[i].name, v);
    }
    kernel::KernelOptions options;
    options.check_initial_state = false;
    const kernel::SafetyKernel actor(c.actor, options);
    const kernel::Decision d = actor.evaluate_in(r.pre.at(c.actor.get()), proposal);
    for (const auto& reason : d.reasons) {
      if (unmodelled(reason.code)) {
        out.reason = "the only candidate step found is one the kernel rejects (" +
                     std::string(kernel::to_string(reason.code)) + ": " + reason.message + ")";
        return out;
      }
      if (!modelled(reason.code)) continue;  // budget, steps, dependencies: not about the state
      if (dropped) {
        out.reason = "a counterexample exists if a premise that could not be encoded is ignored";
        return out;
      }
      throw InternalError("verifier: the counterexample for " + c.id +
                          " does not replay: the kernel of `" + c.actor->name +
                          "` rejects the step: " + reason.message);
    }
    std::map<std::string, Value> changed;
    for (const auto& [id, v] : d.changes) {
      changed.emplace(c.actor->variables[id].name, v);
      shown.insert(c.actor->variables[id].name);
    }
    if (a.guard) {
      std::vector<bool> seen;
      kernel::collect_variables(*a.guard, seen);
      for (std::size_t i = 0; i < seen.size(); ++i)
        if (seen[i]) shown.insert(c.actor->variables[i].name);
    }
    for (const auto& m : models) {
      std::vector<std::pair<VarId, Value>> assignment;
      for (const auto& [name, v] : changed) {
        if (auto id = m->schema->find(name)) assignment.emplace_back(*id, v);
      }
      r.post.emplace(m.get(), r.pre.at(m.get()).with(assignment));
    }
  }
  // The premises read the pre-state; the conclusion the post-state (after the step, if any).
  const bool stepped = c.actor != nullptr;
  for (const Formula& p : c.premises) {
    if (holds(p, r)) continue;
    if (dropped) {
      out.reason = "a counterexample exists if a premise that could not be encoded is ignored";
      return out;
    }
    throw InternalError("verifier: the counterexample for " + c.id + " does not satisfy " +
                        (p.label.empty() ? "a premise" : p.label) + " when replayed");
  }
  r.stepped = stepped;
  if (holds(c.conclusion, r)) {
    throw InternalError("verifier: the counterexample for " + c.id + " satisfies " +
                        (c.conclusion.label.empty() ? "the conclusion" : c.conclusion.label) +
                        " when replayed");
  }
  // Premise variables that share one with what is shown, so the state explains itself.
  const std::set<std::string> core = shown;
  for (const Formula& p : c.premises) {
    const std::set<std::string> vs = variables_of(p);
    if (std::any_of(vs.begin(), vs.end(), [&](const std::string& v) { return core.count(v) > 0; }))
      shown.insert(vs.begin(), vs.end());
  }
  for (const std::string& name : shown) {
    auto it = values.find(name);
    if (it == values.end()) continue;
    cex.pre.emplace_back(name, it->second);
    if (stepped) {
      Value after = it->second;
      for (const auto& [m, s] : r.post) {
        if (auto id = m->schema->find(name)) after = s.get(*id);
      }
      cex.post.emplace_back(name, after);
    }
  }
  out.assignment.assign(values.begin(), values.end());
  out.verdict = VerdictKind::refuted;
  out.reason = c.actor ? "`" + c.actor->actions.at(c.action).id + "` of `" + c.actor->name +
                             "` can falsify " + c.conclusion.label
                       : c.conclusion.label + " is not implied by the premises";
  out.counterexample = std::move(cex);
  return out;
}

std::vector<Obligation> interface_obligations(std::shared_ptr<const TaskModel> model,
                                              unsigned timeout_ms,
                                              Deadline deadline) {
  const TaskModel& m = *model;
  const kernel::Interface& itf = m.interface;
  std::vector<Obligation> out;
  if (!itf.declared) return out;
  auto make = [&](std::string id, ObligationKind kind = ObligationKind::interface) {
    Obligation o;
    o.kind = kind;
    o.id = std::move(id);
    o.loc = itf.loc;
    o.verdict = VerdictKind::proved;
    return o;
  };
  auto listed = [](const std::vector<VarId>& ids, VarId id) {
    return std::binary_search(ids.begin(), ids.end(), id);
  };

  Obligation writes = make("interface:writes");
  Obligation forbidden = make("interface:forbidden");
  writes.reason = "every effect writes a variable the interface lists in `writes`";
  forbidden.reason = "no effect writes a forbidden variable";
  for (const kernel::Action& a : m.actions) {
    for (const kernel::Effect& e : a.effects) {
      const std::string& name = m.variables[e.variable].name;
      if (writes.verdict == VerdictKind::proved && !listed(itf.writes, e.variable)) {
        writes.verdict = VerdictKind::refuted;
        writes.action = a.id;
        writes.loc = a.loc;
        writes.reason =
            "action `" + a.id + "` writes `" + name + "`, which `interface.writes` does not list";
      }
      if (forbidden.verdict == VerdictKind::proved && listed(itf.forbidden, e.variable)) {
        forbidden.verdict = VerdictKind::refuted;
        forbidden.action = a.id;
        forbidden.loc = a.loc;
        forbidden.reason =
            "action `" + a.id + "` writes `" + name + "`, which the interface forbids";
      }
    }
  }
  Obligation reads = make("interface:reads");
  std::string unlisted;
  for (VarId id : itf.actual_reads) {
    if (!listed(itf.reads, id) && !listed(itf.writes, id))
      unlisted += (unlisted.empty() ? "`" : ", `") + m.variables[id].name + "`";
  }
  if (unlisted.empty()) {
    reads.reason = "every variable the task reads is in `reads` or `writes`";
  } else {
    reads.verdict = VerdictKind::refuted;
    reads.reason = "the task reads " + unlisted + ", not listed in `interface.reads` or `writes`";
  }

  std::vector<Formula> state_invariants;
  for (const auto& inv : m.invariants) {
    if (inv.enforcement == Enforcement::blocking && inv.expr && !inv.transition)
      state_invariants.push_back(Formula::of(model, inv.expr, "invariant `" + inv.name + "`"));
  }
  ContractChecker checker(timeout_ms, deadline);
  Obligation guarantees = make("interface:guarantees");
  if (!itf.guarantees) {
    guarantees.reason = "no guarantees declared";
  } else {
    ContractCheck c;
    c.id = guarantees.id;
    c.premises = state_invariants;
    if (m.goal) c.premises.push_back(Formula::of(model, m.goal, "the goal"));
    c.conclusion = Formula::of(model, itf.guarantees, "the guarantees");
    const ContractOutcome r = checker.check(c);
    guarantees.verdict = r.verdict;
    guarantees.counterexample = r.counterexample;
    guarantees.reason =
        r.verdict == VerdictKind::proved
            ? (m.goal ? "the goal and the blocking invariants imply the guarantees"
                      : "the blocking invariants imply the guarantees (the task has no goal)")
        : r.verdict == VerdictKind::refuted
            ? std::string("a state that satisfies ") + (m.goal ? "the goal and " : "") +
                  "the blocking invariants but not the guarantees"
            : r.reason;
  }
  Obligation assumes = make("lint:assumes-consistent", ObligationKind::lint);
  if (!itf.assumes) {
    assumes.reason = "no assumptions declared";
  } else {
    ContractCheck c;
    c.id = assumes.id;
    c.premises = state_invariants;
    c.premises.push_back(Formula::of(model, itf.assumes, "the assumes"));
    c.conclusion = Formula::negate(Formula::all({}, "true"));
    const ContractOutcome r = checker.check(c);
    switch (r.verdict) {
      case VerdictKind::refuted:  // a state satisfies them all
        assumes.reason = "some state satisfies the assumes and the blocking invariants";
        break;
      case VerdictKind::proved:
        assumes.verdict = VerdictKind::refuted;
        assumes.reason =
            "no state satisfies the assumes together with the blocking invariants: the task can "
            "never start";
        break;
      case VerdictKind::unknown:
        assumes.verdict = VerdictKind::unknown;
        assumes.reason = r.reason;
        break;
    }
  }
  out.push_back(std::move(writes));
  out.push_back(std::move(forbidden));
  out.push_back(std::move(reads));
  out.push_back(std::move(guarantees));
  out.push_back(std::move(assumes));
  return out;
}

}  // namespace clampai::verifier
