// White-box: the symbolic step (verifier/src/step.hpp) and the kernel's decision agree on
// random (model, situation, action, parameters): the same approval, the same reasons (codes and
// subjects), the same warnings, the same post-state and the same spend. The step of each action
// is built once per model and evaluated on each concrete input by model evaluation (no solver
// call per input).
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <sstream>

#include "../../../verifier/src/step.hpp"
#include "clampai/kernel.hpp"
#include "clampai/kernel/error.hpp"
#include "random_kernel_spec.hpp"

using namespace clampai::kernel;
using clampai::verifier::detail::Encoder;
using clampai::verifier::detail::SymbolicStep;
using clampai::verifier::detail::SymSituation;
using clampai::verifier::detail::Unsupported;

namespace {

std::string describe(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return "[" + out + "]";
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> reasons_of(const std::vector<Reason>& rs) {
  std::vector<std::string> out;
  for (const Reason& r : rs) out.push_back(std::string(to_string(r.code)) + ":" + r.subject);
  return sorted(out);
}

std::string source_of(const TaskModel& m) {
  std::string out;
  for (const Action& a : m.actions) {
    out += a.id + ": cost " + (a.cost_expr ? to_source(*a.cost_expr) : std::to_string(a.cost));
    if (a.guard) out += ", requires " + to_source(*a.guard);
    for (const Effect& e : a.effects)
      out += "; " + m.variables[e.variable].name + " " + std::string(to_string(e.mode)) + " " +
             (e.value ? to_source(*e.value) : "");
    out += "\n";
  }
  for (const Invariant& inv : m.invariants) out += inv.name + ": " + to_source(*inv.expr) + "\n";
  return out;
}

struct Agreement {
  std::size_t triples = 0, approved = 0, rejected = 0;
  std::map<std::string, std::size_t> codes;  // how often each reason code was seen
};

// Compares the kernel and the step on one input; returns a description of the first
// difference, or empty.
std::string compare(const TaskModel& m,
                    Encoder& enc,
                    const SymbolicStep& st,
                    const SymSituation& sym,
                    const Situation& s,
                    const Proposal& p,
                    z3::solver& ground,
                    Agreement& stats) {
  z3::context& ctx = enc.ctx();
  z3::model zm(ctx);
  auto bind = [&](const z3::expr& symbol, z3::expr value) {
    z3::func_decl decl = symbol.decl();
    zm.add_const_interp(decl, value);
  };
  for (VarId id = 0; id < m.variables.size(); ++id)
    bind(enc.pre(id), enc.constant(s.state.get(id), m.variables[id].type));
  for (std::size_t i = 0; i < p.params.size(); ++i)
    bind(st.params[i], ctx.int_val(p.params[i].as_number().units));
  bind(sym.net, ctx.int_val(s.budget.net()));
  bind(sym.steps, ctx.int_val(static_cast<std::int64_t>(s.steps)));
  for (std::size_t a = 0; a < m.actions.size(); ++a)
    bind(sym.done[a], ctx.int_val(static_cast<std::int64_t>(s.completions[a])));
  // Model evaluation leaves some sequence terms (indexof, extract) and the encoder's recursive
  // functions over lists unreduced (without model completion, which would give those functions
  // arbitrary values): simplify, and as a last resort ask a solver for the ground term's value.
  auto value = [&](const z3::expr& e) {
    z3::expr v = zm.eval(e, false);
    if (v.is_numeral() || v.is_true() || v.is_false()) return v;
    v = v.simplify();
    if (v.is_numeral() || v.is_true() || v.is_false()) return v;
    ground.push();
    const z3::expr x = ctx.constant("ground", v.get_sort());
    ground.add(x == v);
    REQUIRE(ground.check() == z3::sat);
    const z3::expr r = ground.get_model().eval(x, true);
    ground.pop();
    return r;
  };
  auto truth = [&](const z3::expr& e) { return value(e).is_true(); };

  const Decision d = decide(m, s, p);
  std::vector<std::string> sym_reasons, sym_warnings;
  bool cost_ok = true, simulated = true;
  for (const auto& c : st.checks) {
    if (!truth(c.evaluated) || truth(c.holds)) continue;
    sym_reasons.push_back(std::string(to_string(c.code)) + ":" + c.subject);
    if (c.code == ReasonCode::overflow && c.subject == m.actions[p.action].id) cost_ok = false;
    if (c.code == ReasonCode::overflow && c.subject != m.actions[p.action].id) simulated = false;
  }
  for (const auto& c : st.warnings) {
    if (truth(c.evaluated) && !truth(c.holds))
      sym_warnings.push_back(std::string(to_string(c.code)) + ":" + c.subject);
  }
  sym_reasons = sorted(sym_reasons);
  sym_warnings = sorted(sym_warnings);
  const bool sym_approved = truth(st.approved());
  ++stats.triples;
  ++(d.approved ? stats.approved : stats.rejected);
  for (const Reason& r : d.reasons) ++stats.codes[std::string(to_string(r.code))];

  std::ostringstream why;
  if (d.approved != sym_approved)
    why << "approval: kernel " << d.approved << ", step " << sym_approved << "; ";
  if (reasons_of(d.reasons) != sym_reasons)
    why << "reasons: kernel " << describe(reasons_of(d.reasons)) << ", step "
        << describe(sym_reasons) << "; ";
  if (reasons_of(d.warnings) != sym_warnings)
    why << "warnings: kernel " << describe(reasons_of(d.warnings)) << ", step "
        << describe(sym_warnings) << "; ";
  const bool params_ok =
      d.reasons.empty() || d.reasons.front().code != ReasonCode::invalid_parameter;
  if (params_ok && cost_ok && value(st.cost).get_numeral_int64() != d.cost)
    why << "spend: kernel " << d.cost << ", step " << value(st.cost) << "; ";
  if (params_ok && cost_ok && simulated && d.changes.size() == st.post.size()) {
    for (std::size_t i = 0; i < st.post.size(); ++i) {
      const Type& type = m.variables[st.post[i].first].type;
      Value v;
      if (type.kind() == Type::Kind::list) {  // ground sequence terms: reduced by a solver
        ground.push();
        const z3::expr x = ctx.constant("ground", st.post[i].second.get_sort());
        ground.add(x == zm.eval(st.post[i].second, false));
        REQUIRE(ground.check() == z3::sat);
        v = enc.value_of(ground.get_model(), x, type);
        ground.pop();
      } else {
        v = enc.value_of(zm, value(st.post[i].second), type);
      }
      if (!(v == d.changes[i].second))
        why << "post `" << m.variables[st.post[i].first].name << "`: kernel "
            << d.changes[i].second.to_string() << ", step " << v.to_string() << "; ";
    }
  } else if (params_ok && cost_ok && simulated) {
    why << "post: kernel writes " << d.changes.size() << " values, step " << st.post.size() << "; ";
  }
  return why.str();
}

}  // namespace

TEST_CASE("the symbolic step agrees with the kernel's decision on 100,000 random inputs",
          "[step][agreement]") {
  std::mt19937_64 rng(20261125);
  clampai::test::KernelSpecGenerator gen(rng);
  z3::context ctx;
  z3::solver ground(ctx, z3::solver::simple());  // only for ground sequence terms
  Agreement stats;
  std::size_t models = 0, spec_errors = 0;
  const std::size_t kTriples =
      std::getenv("STEP_TRIPLES") ? std::stoul(std::getenv("STEP_TRIPLES")) : 100000;
  constexpr std::size_t kPerModel = 250;
  while (stats.triples < kTriples) {
    std::shared_ptr<const TaskModel> model;
    try {
      model = gen.model();
    } catch (const clampai::SpecError& e) {
      ++spec_errors;  // a generated combination the loader refuses: try another
      INFO(e.what());
      REQUIRE(spec_errors < 1000 + models);
      continue;
    }
    ++models;
    const TaskModel& m = *model;
    Encoder enc(ctx, m, "m" + std::to_string(models) + ".");
    const SymSituation sym = SymSituation::fresh(ctx, m, "m" + std::to_string(models) + ".");
    std::vector<SymbolicStep> steps;
    for (std::size_t a = 0; a < m.actions.size(); ++a) {
      try {
        steps.push_back(clampai::verifier::detail::symbolic_step(enc, sym, a));
      } catch (const Unsupported& u) {
        FAIL("action `" << m.actions[a].id << "`: " << u.reason << "\n" << source_of(m));
      }
    }
    for (std::size_t k = 0; k < kPerModel; ++k) {
      const Situation s = gen.situation(m);
      const Proposal p = gen.proposal(m);
      std::string diff;
      try {
        diff = compare(m, enc, steps[p.action], sym, s, p, ground, stats);
      } catch (const z3::exception& e) {
        diff = std::string("Z3: ") + e.msg();
      }
      if (!diff.empty()) {
        std::string params;
        for (const auto& v : p.params) params += v.to_string() + " ";
        std::string state;
        for (VarId id = 0; id < m.variables.size(); ++id)
          state += m.variables[id].name + "=" + s.state.get(id).to_string() + " ";
        FAIL("model " << models << ", action `" << m.actions[p.action].id << "` (" << params
                      << ") in " << state << " net " << s.budget.net() << " steps " << s.steps
                      << ": " << diff << "\n"
                      << source_of(m));
      }
    }
  }
  // The inputs reach approvals and every kind of rejection the step models.
  CHECK(stats.approved > kTriples / 50);
  for (const char* code : {"invalid_parameter",
                           "below_min_cost",
                           "budget_exceeded",
                           "step_limit",
                           "dependency_unmet",
                           "requires_failed",
                           "overflow",
                           "bound_violated",
                           "invariant_violated"}) {
    INFO(code);
    CHECK(stats.codes[code] > 0);
  }
  CHECK(spec_errors < models);
  WARN(stats.triples << " inputs over " << models << " models: " << stats.approved << " approved, "
                     << stats.rejected << " rejected");
}
