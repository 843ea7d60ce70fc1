// Certified repair: the example's oversized request, the L2 projection and its KKT certificate,
// unsat cores, the barrier condition, and agreement with brute force over random linear specs.
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "../kernel/support.hpp"
#include "clampai/verifier.hpp"

using namespace clampai;
using namespace clampai::kernel;
using verifier::RepairNorm;
using verifier::RepairStatus;

namespace {

std::shared_ptr<const TaskModel> autoscale() {
  return load_spec_file(test::source_path("examples/autoscale.json"));
}

Proposal propose(const TaskModel& m, const std::string& id, std::vector<Value> params) {
  return Proposal{*m.find_action(id), std::move(params)};
}

Value dec(std::int64_t units, std::uint8_t scale) { return Value::number(Decimal{units, scale}); }

bool names(const std::vector<std::string>& list, const std::string& needle) {
  return std::find(list.begin(), list.end(), needle) != list.end();
}

}  // namespace

TEST_CASE("Repair: the oversized scale-up is cut to the largest safe request",
          "[verifier][repair]") {
  const auto m = autoscale();
  const Situation s = Situation::initial(*m);
  const Proposal p = propose(*m, "scale_up", {Value::integer(50)});
  REQUIRE_FALSE(decide(*m, s, p).approved);

  const auto r = verifier::repair(*m, s, p);
  REQUIRE(r.status == RepairStatus::repaired);
  CHECK(r.norm == RepairNorm::l1);         // every parameter is an integer
  REQUIRE(r.repaired.action == p.action);  // only the parameters change
  CHECK(r.repaired.params == std::vector<Value>{Value::integer(14)});
  CHECK(r.decision.approved);
  CHECK(r.decision.cost == 7000);  // n * 0.5 at the budget's scale
  CHECK(r.certificate.kernel_approved);
  CHECK(r.certificate.feasible);
  CHECK(r.certificate.optimal);
  CHECK(r.certificate.distance == "36");
  // The barrier (h' >= 0.2·28, so spend <= 34.40) binds before the capacity (n <= 16).
  CHECK(r.certificate.binding == std::vector<std::string>{"barrier of `spend_cap` (rate 0.8)"});

  // 15 would pass the kernel but not the barrier: the repair is not the kernel's bare limit.
  const Decision fifteen = decide(*m, s, propose(*m, "scale_up", {Value::integer(15)}));
  CHECK(fifteen.approved);

  // In L2 the barrier reads n <= 14.93... over the reals; over n's integer units (the symbolic
  // step, simplified by Z3) it is n <= 14, the same grid points: the projection is 14.
  verifier::RepairOptions l2;
  l2.norm = RepairNorm::l2;
  const auto q = verifier::repair(*m, s, p, l2);
  REQUIRE(q.status == RepairStatus::repaired);
  CHECK(q.repaired.params == std::vector<Value>{Value::integer(14)});
  CHECK(q.certificate.distance == "1296");
  CHECK(q.certificate.lower_bound == "1296");  // the grid optimum itself: (50 - 14)^2
  CHECK(q.certificate.optimal);                // one parameter: its neighbours suffice
}

TEST_CASE("Repair: a decimal parameter is projected (L2) with a KKT certificate",
          "[verifier][repair]") {
  const auto m = autoscale();
  const Situation s = Situation::initial(*m);
  const auto r = verifier::repair(*m, s, propose(*m, "set_throttle", {dec(90, 2)}));
  REQUIRE(r.status == RepairStatus::repaired);
  CHECK(r.norm == RepairNorm::l2);
  CHECK(r.repaired.params == std::vector<Value>{dec(60, 2)});  // 4 instances * 0.15
  CHECK(r.certificate.distance == "0.09");
  CHECK(r.certificate.lower_bound == "0.09");
  CHECK(r.certificate.optimal);
  REQUIRE(r.certificate.multipliers.size() == 1);
  CHECK(r.certificate.multipliers[0].first == "invariant `slo`");
  CHECK(r.certificate.multipliers[0].second == "0.6");  // 2·(0.9 - 0.6)

  const auto low = verifier::repair(*m, s, propose(*m, "set_throttle", {dec(10, 2)}));
  CHECK(low.repaired.params == std::vector<Value>{dec(40, 2)});

  // A proposal the kernel approves is returned untouched.
  const auto ok = verifier::repair(*m, s, propose(*m, "set_throttle", {dec(50, 2)}));
  CHECK(ok.status == RepairStatus::approved);
  CHECK(ok.repaired.params == std::vector<Value>{dec(50, 2)});
}

TEST_CASE("Repair: when nothing helps, the conflicting constraints are named",
          "[verifier][repair]") {
  const auto m = autoscale();
  Situation s = Situation::initial(*m);
  s.state = s.state.with({{*m->schema->find("instances"), Value::integer(20)}});
  for (auto norm : {RepairNorm::l1, RepairNorm::l2}) {
    verifier::RepairOptions o;
    o.norm = norm;
    const auto r = verifier::repair(*m, s, propose(*m, "scale_up", {Value::integer(3)}), o);
    REQUIRE(r.status == RepairStatus::impossible);
    CHECK(r.conflict == std::vector<std::string>{"parameter `n` >= 1", "invariant `capacity`"});
  }
  // No budget left: the cost itself conflicts.
  s = Situation::initial(*m);
  s.budget.charge(19500);
  const auto broke = verifier::repair(*m, s, propose(*m, "scale_up", {Value::integer(3)}));
  REQUIRE(broke.status == RepairStatus::repaired);  // n = 1 costs 0.500, all that is left
  CHECK(broke.repaired.params == std::vector<Value>{Value::integer(1)});
  s.budget.charge(500);
  const auto none = verifier::repair(*m, s, propose(*m, "scale_up", {Value::integer(3)}));
  REQUIRE(none.status == RepairStatus::impossible);
  CHECK(names(none.conflict, "the budget left (0.000)"));
}

TEST_CASE("Repair: reasons no parameter can fix make it impossible at once", "[verifier][repair]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "first", "cost": 1, "effects": []},
                {"id": "second", "cost": 1,
                 "parameters": {"n": {"type": "int", "min": 0, "max": 9}},
                 "effects": [{"variable": "x", "mode": "set", "value": "n"}]}],
    "invariants": [{"name": "small", "check": "x <= 3"}],
    "dependencies": {"second": ["first"]},
    "budget": {"total": 5, "min_action_cost": 1}})J");
  const auto r = verifier::repair(*m, Situation::initial(*m), Proposal{1, {Value::integer(7)}});
  REQUIRE(r.status == RepairStatus::impossible);
  REQUIRE(r.conflict.size() == 1);
  CHECK(r.conflict[0].rfind("dependency_unmet", 0) == 0);
}

TEST_CASE("Repair: two decimal parameters against a budget line and bounds", "[verifier][repair]") {
  // Maximise nothing: project (3.00, 3.00) onto a + 2b <= 4, a >= 0.5, b >= 0.25.
  const auto m = load_spec(R"J({"variables": {
      "a_total": {"type": "decimal", "scale": 2, "initial": "0"},
      "b_total": {"type": "decimal", "scale": 2, "initial": "0"}},
    "actions": [{"id": "buy", "cost": 1,
      "parameters": {"a": {"type": "decimal", "scale": 2, "min": "0.5", "max": "10"},
                     "b": {"type": "decimal", "scale": 2, "min": "0.25", "max": "10"}},
      "effects": [{"variable": "a_total", "mode": "increment", "value": "a"},
                  {"variable": "b_total", "mode": "increment", "value": "b"}]}],
    "invariants": [{"name": "line", "check": "a_total + 2 * b_total <= 4"}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  const auto r =
      verifier::repair(*m, Situation::initial(*m), Proposal{0, {dec(300, 2), dec(300, 2)}});
  REQUIRE(r.status == RepairStatus::repaired);
  // Continuous optimum: (3, 3) - t(1, 2) with 3 + 6 - 5t = 4, t = 1: (2, 1), on the grid.
  CHECK(r.repaired.params == std::vector<Value>{dec(200, 2), dec(100, 2)});
  CHECK(r.certificate.distance == "5");
  CHECK(r.certificate.optimal);
  // Weights: b twice as costly to move shifts the answer toward moving a.
  verifier::RepairOptions o;
  o.weights["b"] = Decimal{4, 0};
  const auto w =
      verifier::repair(*m, Situation::initial(*m), Proposal{0, {dec(300, 2), dec(300, 2)}}, o);
  REQUIRE(w.status == RepairStatus::repaired);
  // minimise (a-3)^2 + 4(b-3)^2 on a + 2b = 4: a = 3 - t, b = 3 - t/2, 9 - 2t = 4: t = 2.5.
  CHECK(w.repaired.params == std::vector<Value>{dec(50, 2), dec(175, 2)});
  CHECK_THROWS_AS(verifier::repair(*m,
                                   Situation::initial(*m),
                                   Proposal{0, {dec(300, 2), dec(300, 2)}},
                                   verifier::RepairOptions{std::nullopt, {{"c", Decimal{1, 0}}}}),
                  clampai::InvalidArgument);
}

TEST_CASE("Repair: constraints that are not a polyhedron fall back to exact L1",
          "[verifier][repair]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "decimal", "scale": 1, "initial": "0"}},
    "actions": [{"id": "move", "cost": 1,
      "parameters": {"d": {"type": "decimal", "scale": 1, "min": "-9", "max": "9"}},
      "effects": [{"variable": "x", "mode": "set", "value": "d"}]}],
    "invariants": [{"name": "outside", "check": "x <= -2 || x >= 3"}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  const auto r = verifier::repair(*m, Situation::initial(*m), Proposal{0, {dec(5, 1)}});
  REQUIRE(r.status == RepairStatus::repaired);
  CHECK(r.norm == RepairNorm::l1);
  CHECK(r.certificate.method.find("L2 needs a polyhedron") != std::string::npos);
  CHECK(r.repaired.params == std::vector<Value>{dec(-20, 1)});  // 2.5 from 0.5, not 2.5 to 3
}

namespace {

// A random task whose constraints are linear in 1 to 3 integer parameters in [-6, 6]: each
// variable is set to an affine form of the parameters; invariants bound the variables (some
// with a barrier rate); the guard and the cost may involve the parameters.
std::shared_ptr<const TaskModel> random_linear(std::mt19937_64& rng, std::size_t* n_params) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto quote = [](const std::string& x) { return "\"" + x + "\""; };
  const int n = pick(1, 3);
  *n_params = static_cast<std::size_t>(n);
  const int vars = pick(1, 3);
  auto form = [&]() {
    std::string f = std::to_string(pick(-3, 3));
    for (int i = 0; i < n; ++i) {
      const int c = pick(-2, 2);
      if (c != 0) f += " + " + std::to_string(c) + " * p" + std::to_string(i);
    }
    return f;
  };
  std::string j = "{\"variables\": {";
  for (int v = 0; v < vars; ++v)
    j += (v ? "," : "") + quote("v" + std::to_string(v)) + ": {\"type\": \"int\", \"initial\": 0}";
  j += "}, \"actions\": [{\"id\": \"act\", \"parameters\": {";
  for (int i = 0; i < n; ++i)
    j += (i ? "," : "") + quote("p" + std::to_string(i)) +
         ": {\"type\": \"int\", \"min\": -6, \"max\": 6}";
  j += "}, \"cost\": " + quote(pick(0, 1) ? "2" : "4 + p0") + ", ";
  if (pick(0, 2) == 0)
    j += "\"requires\": " + quote(form() + " <= " + std::to_string(pick(0, 4))) + ", ";
  j += "\"effects\": [";
  for (int v = 0; v < vars; ++v)
    j += std::string(v ? "," : "") + "{\"variable\": " + quote("v" + std::to_string(v)) +
         ", \"mode\": \"set\", \"value\": " + quote(form()) + "}";
  j += "]}], \"invariants\": [";
  for (int v = 0; v < vars; ++v) {
    const bool upper = pick(0, 1) == 1;
    const int bound = upper ? pick(0, 5) : -pick(0, 5);
    j += std::string(v ? "," : "") + "{\"name\": " + quote("i" + std::to_string(v)) +
         ", \"check\": " +
         quote("v" + std::to_string(v) + (upper ? " <= " : " >= ") + std::to_string(bound));
    if (pick(0, 3) == 0) j += ", \"barrier_rate\": 0.5";
    j += "}";
  }
  j += "], \"budget\": {\"total\": 8, \"min_action_cost\": 1}}";
  return load_spec(j);
}

}  // namespace

TEST_CASE("Repair: L1 is exactly optimal and L2 is bounded, against brute force on random specs",
          "[verifier][repair][properties]") {
  std::mt19937_64 rng(0x4E9A1);
  int repaired = 0, impossible = 0;
  for (int spec = 0; spec < 120; ++spec) {
    std::size_t n = 0;
    const auto m = random_linear(rng, &n);
    const Situation s = Situation::initial(*m);
    std::vector<Value> proposed;
    for (std::size_t i = 0; i < n; ++i)
      proposed.push_back(Value::integer(std::uniform_int_distribution<int>(-9, 9)(rng)));
    // Brute force over the grid: the kernel approves, and every barrier holds.
    std::optional<std::int64_t> best_l1, best_l2;
    std::vector<std::int64_t> x(n, -6);
    while (true) {
      Proposal cand{0, {}};
      for (auto v : x) cand.params.push_back(Value::integer(v));
      const Decision d = decide(*m, s, cand);
      bool ok = d.approved;
      for (const Invariant& inv : m->invariants) {
        if (!ok || !inv.barrier) continue;
        const auto h0 = evaluate(*inv.barrier, EvalEnv{&s.state, {}, &s.state, nullptr});
        const auto h1 = evaluate(*inv.barrier, EvalEnv{&s.state, d.changes, &s.state, nullptr});
        ok = h1.value.as_number().units * 2 >= h0.value.as_number().units;  // α = 0.5
      }
      if (ok) {
        std::int64_t l1 = 0, l2 = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const std::int64_t dlt = x[i] - proposed[i].as_number().units;
          l1 += dlt < 0 ? -dlt : dlt;
          l2 += dlt * dlt;
        }
        best_l1 = best_l1 ? std::min(*best_l1, l1) : l1;
        best_l2 = best_l2 ? std::min(*best_l2, l2) : l2;
      }
      std::size_t k = 0;
      while (k < n && ++x[k] > 6) x[k++] = -6;
      if (k == n) break;
    }
    INFO("spec " << spec);
    for (auto norm : {RepairNorm::l1, RepairNorm::l2}) {
      verifier::RepairOptions o;
      o.norm = norm;
      const auto r = verifier::repair(*m, s, Proposal{0, proposed}, o);
      if (!best_l1) {
        REQUIRE(r.status == RepairStatus::impossible);
        REQUIRE_FALSE(r.conflict.empty());
        ++impossible;
        continue;
      }
      REQUIRE((r.status == RepairStatus::repaired || r.status == RepairStatus::approved));
      REQUIRE(r.decision.approved);
      REQUIRE(r.certificate.feasible);
      std::int64_t l1 = 0, l2 = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t dlt =
            r.repaired.params[i].as_number().units - proposed[i].as_number().units;
        l1 += dlt < 0 ? -dlt : dlt;
        l2 += dlt * dlt;
      }
      if (r.norm == RepairNorm::l1) {
        REQUIRE(l1 == *best_l1);  // exact
      } else {
        REQUIRE(l2 >= *best_l2);
        if (r.certificate.optimal) REQUIRE(l2 == *best_l2);
        // The certified continuous optimum is a true lower bound.
        const auto lb = Decimal::parse(r.certificate.lower_bound);
        if (lb) REQUIRE(*lb <= Decimal{*best_l2, 0});
      }
      ++repaired;
    }
  }
  CHECK(repaired > 50);
  CHECK(impossible > 5);
}

TEST_CASE("Repair: state variables named like the solver's own symbols change nothing",
          "[verifier][repair]") {
  for (const char* var : {R"("c0": {"type": "bool", "initial": false})",
                          R"("d0": {"type": "int", "initial": 1000})",
                          R"("flag": {"type": "int", "initial": 3})"}) {
    INFO(var);
    const auto m = load_spec(std::string(R"J({"variables": {)J") + var +
                             R"J(, "x": {"type": "int", "initial": 0, "min": 0, "max": 10}},
      "actions": [{"id": "go", "cost": 1, "parameters": {"n": {"type": "int", "min": 1, "max": 100}},
                   "effects": [{"variable": "x", "mode": "set", "value": "n"}]}],
      "budget": {"total": 5, "min_action_cost": 1}})J");
    const auto r = verifier::repair(*m, Situation::initial(*m), Proposal{0, {Value::integer(50)}});
    REQUIRE(r.status == RepairStatus::repaired);
    CHECK(r.repaired.params == std::vector<Value>{Value::integer(10)});
    CHECK(r.certificate.distance == "40");
  }
}

TEST_CASE("Repair: arithmetic the kernel skips (a short-circuited operand) is no constraint",
          "[verifier][repair]") {
  const auto m = load_spec(R"J({"variables": {"y": {"type": "int", "initial": 0}},
    "actions": [{"id": "go", "cost": 1, "parameters": {"n": {"type": "int", "min": 95, "max": 1000}},
                 "effects": [{"variable": "y", "mode": "set", "value": "n"}]}],
    "invariants": [{"name": "small", "check": "y <= 100 || y * 100000000000000000 > 0"}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  for (auto norm : {RepairNorm::l1, RepairNorm::l2}) {
    verifier::RepairOptions o;
    o.norm = norm;
    const auto r =
        verifier::repair(*m, Situation::initial(*m), Proposal{0, {Value::integer(200)}}, o);
    REQUIRE(r.status == RepairStatus::repaired);
    CHECK(r.repaired.params == std::vector<Value>{Value::integer(100)});
  }
}

TEST_CASE(
    "Repair: an out-of-bounds proposal of an action whose dependency is unmet is "
    "impossible at once",
    "[verifier][repair]") {
  const auto m =
      load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 10}},
    "actions": [{"id": "init", "cost": 1, "effects": []},
                {"id": "go", "cost": 1, "parameters": {"n": {"type": "int", "min": 1, "max": 5}},
                 "effects": [{"variable": "x", "mode": "set", "value": "n"}]}],
    "dependencies": {"go": ["init"]},
    "budget": {"total": 100, "min_action_cost": 1}})J");
  const auto r = verifier::repair(*m, Situation::initial(*m), Proposal{1, {Value::integer(50)}});
  REQUIRE(r.status == RepairStatus::impossible);
  REQUIRE(r.conflict.size() == 1);
  CHECK(r.conflict[0].rfind("dependency_unmet", 0) == 0);
}

TEST_CASE("Repair: a strict inequality stays an L2 projection, tightened to the grid",
          "[verifier][repair]") {
  const auto m = load_spec(R"J({"variables": {
      "a": {"type": "decimal", "scale": 1, "initial": "0"},
      "b": {"type": "decimal", "scale": 1, "initial": "0"}},
    "actions": [{"id": "go", "cost": 1,
      "parameters": {"x": {"type": "decimal", "scale": 1, "min": "0", "max": "10"},
                     "y": {"type": "decimal", "scale": 1, "min": "0", "max": "10"}},
      "effects": [{"variable": "a", "mode": "set", "value": "x"},
                  {"variable": "b", "mode": "set", "value": "y"}]}],
    "invariants": [{"name": "sum", "check": "a + 2 * b < 3"}],
    "budget": {"total": 100, "min_action_cost": 1}})J");
  const auto r =
      verifier::repair(*m, Situation::initial(*m), Proposal{0, {dec(20, 1), dec(20, 1)}});
  REQUIRE(r.status == RepairStatus::repaired);
  CHECK(r.norm == RepairNorm::l2);
  // a + 2b <= 2.9 on the grid; the projection of (2, 2) is (1.38, 0.76): the nearest feasible
  // grid point is (1.3, 0.8), at squared distance 0.49 + 1.44 = 1.93.
  CHECK(r.repaired.params == std::vector<Value>{dec(13, 1), dec(8, 1)});
  CHECK(r.certificate.distance == "1.93");
  // Brute force over the grid: nothing feasible is closer.
  std::int64_t best = -1;
  for (int x = 0; x <= 100; ++x)
    for (int y = 0; y <= 100; ++y)
      if (x + 2 * y < 30) {
        const std::int64_t d = (x - 20) * (x - 20) + (y - 20) * (y - 20);
        if (best < 0 || d < best) best = d;
      }
  CHECK(best == 193);  // in hundredths
}

// The L2 polyhedron is the symbolic step's (the kernel's own checks, simplified by Z3), not a
// second reading of the spec: a cost over the parameter makes the budget (or the minimum cost)
// bind, and an `if` over the parameter whose branches agree is no disjunction.
TEST_CASE("Repair: L2 on the symbolic step: the budget binds through the cost expression",
          "[verifier][repair]") {
  const auto m = load_spec(R"J({"variables": {"x": {"type": "decimal", "scale": 2, "initial": "0"}},
    "actions": [{"id": "buy", "cost": "q * 2",
      "parameters": {"q": {"type": "decimal", "scale": 2, "min": "0", "max": "100"}},
      "requires": "(if q > 50 then q else q) <= 80",
      "effects": [{"variable": "x", "mode": "increment", "value": "q"}]}],
    "budget": {"total": 10, "min_action_cost": "0.5", "scale": 2}})J");
  const Situation s = Situation::initial(*m);
  struct Case {
    std::int64_t proposed, repaired;  // hundredths
    std::string binding, multiplier;
  };
  for (const Case& c : {Case{700, 500, "the budget left (10.00)", "4"},
                        Case{10, 25, "the minimum action cost (0.50)", "0.3"}}) {
    const auto r = verifier::repair(*m, s, Proposal{0, {dec(c.proposed, 2)}});
    REQUIRE(r.status == RepairStatus::repaired);
    CHECK(r.norm == RepairNorm::l2);  // no fallback to L1: the `if` is not a disjunction
    CHECK(r.certificate.method.rfind("exact active-set projection", 0) == 0);
    CHECK(r.repaired.params == std::vector<Value>{dec(c.repaired, 2)});
    CHECK(r.certificate.optimal);
    CHECK(r.certificate.binding == std::vector<std::string>{c.binding});
    REQUIRE(r.certificate.multipliers.size() == 1);
    CHECK(r.certificate.multipliers[0].first == c.binding);
    CHECK(r.certificate.multipliers[0].second == c.multiplier);  // 2·|proposed - repaired|
    // Brute force over the grid: the kernel approves nothing closer.
    std::int64_t best = -1;
    for (std::int64_t q = 0; q <= 10000; ++q) {
      if (!decide(*m, s, Proposal{0, {dec(q, 2)}}).approved) continue;
      const std::int64_t d = (q - c.proposed) * (q - c.proposed);
      if (best < 0 || d < best) best = d;
    }
    CHECK(best == (c.repaired - c.proposed) * (c.repaired - c.proposed));
  }
}
