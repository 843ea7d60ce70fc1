// White-box: the L2 repair's constraints read from the action's cached template (the symbolic
// step built once per model with the situation symbolic, evaluated per repair) give the same
// repair as the constraints read with a fresh Z3 context from the step simplified on the
// concrete situation: the same verdict, the same repaired parameters, the same certificate and
// conflict, on random seeded models, situations and proposals.
#include <catch2/catch.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "../../../verifier/src/repair_paths.hpp"
#include "clampai/kernel.hpp"
#include "random_kernel_spec.hpp"

using namespace clampai::kernel;
namespace cv = clampai::verifier;
using cv::detail::L2Source;

namespace {

std::string describe(const cv::RepairResult& r) {
  std::ostringstream o;
  o << to_string(r.status) << " " << to_string(r.norm) << " [";
  for (const Value& v : r.repaired.params) o << v.to_string() << " ";
  o << "] approved " << r.decision.approved << "; method " << r.certificate.method << "; feasible "
    << r.certificate.feasible << " kernel " << r.certificate.kernel_approved << " optimal "
    << r.certificate.optimal << "; distance " << r.certificate.distance << "; lower bound "
    << r.certificate.lower_bound << "; multipliers";
  for (const auto& [name, m] : r.certificate.multipliers) o << " (" << name << ": " << m << ")";
  o << "; binding";
  for (const auto& b : r.certificate.binding) o << " (" << b << ")";
  o << "; conflict";
  for (const auto& c : r.conflict) o << " (" << c << ")";
  o << "; reason " << r.reason;
  return o.str();
}

// A random task whose constraints are affine in the parameters with coefficients and constants
// that depend on the state: effects that add a parameter times an integer variable,
// `if` on a flag and on an enumeration, a `requires` against a variable, a cost that grows
// with a parameter, invariants (some with a barrier rate, some monitoring) over sums of
// variables; decimal and integer parameters.
std::shared_ptr<const TaskModel> random_affine(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto quote = [](const std::string& x) { return "\"" + x + "\""; };
  const int n = pick(1, 4);
  const int vars = pick(1, 4);
  auto param = [&]() { return "p" + std::to_string(pick(0, n - 1)); };
  auto var = [&]() { return "v" + std::to_string(pick(0, vars - 1)); };
  auto term = [&]() -> std::string {
    switch (pick(0, 5)) {
      case 0:
        return "gain * " + param();
      case 1:
        return "(if flag then " + param() + " else 2 * " + param() + ")";
      case 2:
        return "(if mode == 'fast' then 3 * " + param() + " else " + param() + " - " + var() + ")";
      default:
        return std::to_string(pick(-3, 3)) + " * " + param();
    }
  };
  auto form = [&]() {
    std::string f = std::to_string(pick(-3, 3));
    for (int k = pick(1, 3); k > 0; --k) f += " + " + term();
    return f;
  };
  std::string j = R"({"variables": {"flag": {"type": "bool", "initial": false},
    "mode": {"type": "enum", "values": ["slow", "fast"], "initial": "slow"},
    "gain": {"type": "int", "initial": 1})";
  for (int v = 0; v < vars; ++v) {
    j += ", " + quote("v" + std::to_string(v)) +
         R"(: {"type": "decimal", "scale": 2, "initial": 0})";
  }
  j += R"(}, "actions": [{"id": "act", "parameters": {)";
  for (int i = 0; i < n; ++i) {
    j += (i ? ", " : "") + quote("p" + std::to_string(i)) +
         (pick(0, 2) ? R"(: {"type": "decimal", "scale": 2, "min": -20, "max": 20})"
                     : R"(: {"type": "int", "min": -20, "max": 20})");
  }
  j += R"(}, "cost": )" + quote(pick(0, 1) ? "1" : "2 + p0") + ", ";
  if (pick(0, 2) == 0) j += R"("requires": )" + quote(form() + " <= " + var() + " + 4") + ", ";
  j += R"("effects": [)";
  for (int v = 0; v < vars; ++v) {
    const std::string name = "v" + std::to_string(v);
    j += std::string(v ? ", " : "") + R"({"variable": )" + quote(name) +
         R"(, "mode": "set", "value": )" + quote(name + " + " + form()) + "}";
  }
  j += R"(]}, {"id": "toggle", "cost": 1, "effects": [{"variable": "flag", "mode": "set",
    "value": "!flag"}]}], "invariants": [)";
  for (int v = 0; v < vars; ++v) {
    const bool upper = pick(0, 1) == 1;
    std::string lhs = "v" + std::to_string(v);
    if (vars > 1 && pick(0, 2) == 0) lhs += " + " + var();
    const std::string bound = std::to_string(upper ? pick(0, 30) : -pick(0, 30));
    j += std::string(v ? ", " : "") + R"({"name": )" + quote("i" + std::to_string(v)) +
         R"(, "check": )" + quote(lhs + (upper ? " <= " : " >= ") + bound);
    const int kind = pick(0, 9);
    if (kind < 3) j += R"(, "barrier_rate": 0.5)";
    if (kind == 9) j += R"(, "enforcement": "monitoring")";
    j += "}";
  }
  j += R"(], "budget": {"total": 40, "min_action_cost": 1}})";
  return load_spec(j);
}

// A random situation of a `random_affine` model: every variable near its bounds, some of the
// budget spent, some steps taken.
Situation random_situation(std::mt19937_64& rng, const TaskModel& m) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::pair<VarId, Value>> values;
  for (VarId id = 0; id < m.variables.size(); ++id) {
    const Variable& v = m.variables[id];
    if (v.type.kind() == Type::Kind::boolean) {
      values.emplace_back(id, Value::boolean(pick(0, 1) == 1));
    } else if (v.type.kind() == Type::Kind::enumeration) {
      values.emplace_back(id, Value::string(pick(0, 1) ? "fast" : "slow"));
    } else {
      values.emplace_back(
          id, Value::number(Decimal{pick(-35, 35), static_cast<std::uint8_t>(v.type.scale())}));
    }
  }
  Situation s{m.initial_state().with(values),
              BudgetController(m.budget.total),
              static_cast<std::uint64_t>(pick(0, 5)),
              0,
              std::vector<std::uint64_t>(m.actions.size(), 0)};
  if (pick(0, 1) == 1) s.budget.charge(pick(0, static_cast<int>(m.budget.total)));
  return s;
}

Proposal random_proposal(std::mt19937_64& rng, const TaskModel& m, std::size_t action) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Proposal p{action, {}};
  for (const Parameter& par : m.actions[action].parameters) {
    const int scale = par.type.scale();
    const std::int64_t unit = scale == 0 ? 1 : 100;
    p.params.push_back(
        Value::number(Decimal{pick(-30, 30) * unit + (pick(0, 2) == 0 ? pick(-99, 99) % unit : 0),
                              static_cast<std::uint8_t>(scale)}));
  }
  return p;
}

struct Tally {
  std::size_t repairs = 0, from_template = 0, repaired = 0, impossible = 0, unknown = 0;
};

// The cached and the fresh repair of `p` agree; counts what happened.
void compare(const TaskModel& m, const Situation& s, const Proposal& p, Tally& t) {
  cv::RepairOptions o;
  o.norm = cv::RepairNorm::l2;
  bool used = false;
  const cv::RepairResult cached = cv::detail::repair_with(m, s, p, o, L2Source::cached, &used);
  const cv::RepairResult fresh = cv::detail::repair_with(m, s, p, o, L2Source::fresh);
  INFO("proposal of " << m.actions[p.action].id);
  REQUIRE(describe(cached) == describe(fresh));
  REQUIRE(cached.repaired.params == fresh.repaired.params);
  ++t.repairs;
  if (used) ++t.from_template;
  if (cached.status == cv::RepairStatus::repaired) ++t.repaired;
  if (cached.status == cv::RepairStatus::impossible) ++t.impossible;
  if (cached.status == cv::RepairStatus::unknown) ++t.unknown;
}

}  // namespace

TEST_CASE("Repair template: the cached L2 constraints give the fresh path's repair, affine specs",
          "[verifier][repair][template]") {
  std::mt19937_64 rng(0x7E3A11);
  Tally t;
  for (int spec = 0; spec < 60; ++spec) {
    const auto m = random_affine(rng);
    INFO("spec " << spec << ": " << m->digest);
    for (int k = 0; k < 12; ++k) {
      const Situation s = random_situation(rng, *m);
      compare(*m, s, random_proposal(rng, *m, 0), t);
    }
  }
  INFO(t.repairs << " repairs, " << t.from_template << " from the template, " << t.repaired
                 << " repaired, " << t.impossible << " impossible, " << t.unknown << " unknown");
  CHECK(t.from_template * 2 > t.repairs);  // the comparison is mostly of the two paths
  CHECK(t.repaired > 100);
  CHECK(t.impossible + t.unknown > 10);
}

TEST_CASE("Repair template: the cached L2 constraints give the fresh path's repair, kernel specs",
          "[verifier][repair][template]") {
  // The differential specs of the step agreement: every check of the kernel, overflows near
  // the int64 edge, enumerations across types, lists; most actions fall back to the fresh path
  // somewhere, and the answers must not depend on which.
  std::mt19937_64 rng(0x5EED42);
  clampai::test::KernelSpecGenerator gen(rng);
  Tally t;
  for (int spec = 0; spec < 40; ++spec) {
    const auto m = gen.model();
    INFO("spec " << spec << ": " << m->digest);
    for (int k = 0; k < 10; ++k) {
      const Situation s = gen.situation(*m);
      const Proposal p = gen.proposal(*m);
      if (p.params.empty()) continue;
      compare(*m, s, p, t);
    }
  }
  INFO(t.repairs << " repairs, " << t.from_template << " from the template");
  CHECK(t.repairs > 100);
  // Most of these situations break a check whatever the parameters (the budget, the step
  // limit, an overflow near the int64 edge): the fresh path reads those.
  CHECK(t.from_template > 5);
}

TEST_CASE("Repair template: one template shared by concurrent repairs",
          "[verifier][repair][template]") {
  std::mt19937_64 rng(0xC0FFEE);
  const auto m = random_affine(rng);
  std::vector<std::pair<Situation, Proposal>> inputs;
  for (int k = 0; k < 40; ++k) {
    Situation s = random_situation(rng, *m);
    Proposal p = random_proposal(rng, *m, 0);
    inputs.emplace_back(std::move(s), std::move(p));
  }
  cv::RepairOptions o;
  o.norm = cv::RepairNorm::l2;
  std::vector<std::string> expected;
  for (const auto& [s, p] : inputs)
    expected.push_back(describe(cv::detail::repair_with(*m, s, p, o, L2Source::fresh)));
  std::vector<std::vector<std::string>> got(2);
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < got.size(); ++w) {
    threads.emplace_back([&, w] {
      for (const auto& [s, p] : inputs) got[w].push_back(describe(cv::repair(*m, s, p, o)));
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) CHECK(g == expected);
}
