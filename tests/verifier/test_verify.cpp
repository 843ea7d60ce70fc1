// clampai::verifier: verdicts, counterexamples that replay, reasons for unknowns.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../kernel/support.hpp"
#include "clampai/verifier.hpp"
#include "find_obligation.hpp"

using namespace clampai;
using clampai::test::find;
using clampai::test::source_path;

namespace {

std::string value_of(const std::vector<std::pair<std::string, kernel::Value>>& values,
                     const std::string& name) {
  for (const auto& [k, v] : values) {
    if (k == name) return v.to_string();
  }
  return "(absent)";
}

}  // namespace

TEST_CASE("Verify: the quick start is proved; the budget theorems are facts of the kernel",
          "[verifier]") {
  const auto r = verifier::verify(kernel::load_spec_file(source_path("examples/quickstart.json")));
  REQUIRE(r.refuted == 0);
  REQUIRE(r.unknown == 0);
  REQUIRE(find(r, "base:max_errors").verdict == verifier::VerdictKind::proved);
  REQUIRE(find(r, "preservation:process_batch:max_errors").verdict ==
          verifier::VerdictKind::proved);
  // T1, T2 and T4 are facts of the kernel, reported apart and not counted as proofs.
  REQUIRE(r.proved == 2);
  REQUIRE(r.facts.size() == 3);
  REQUIRE(r.facts[0].id == "budget:t1");
  REQUIRE_THAT(r.facts[1].statement, Catch::Matchers::Contains("at most 200"));
  REQUIRE(r.facts[2].id == "budget:t4");
  for (const auto& o : r.obligations) REQUIRE(o.id.rfind("budget:", 0) == std::string::npos);
  REQUIRE(r.exit_code() == 0);
}

TEST_CASE("Verify: the cloud deployment's scale-up can break the instance cap", "[verifier]") {
  const auto r =
      verifier::verify(kernel::load_spec_file(source_path("examples/cloud_deploy.json")));
  REQUIRE(r.refuted == 1);
  REQUIRE(r.unknown == 0);
  const auto& o = find(r, "preservation:scale_up:instance_cap");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);
  REQUIRE(o.counterexample.has_value());
  REQUIRE(value_of(o.counterexample->pre, "deployed") == "true");
  REQUIRE(value_of(o.counterexample->post, "instances") !=
          value_of(o.counterexample->pre, "instances"));
  REQUIRE(o.counterexample->params.size() == 1);
  REQUIRE(find(r, "preservation:deploy:deploy_after_test").verdict ==
          verifier::VerdictKind::proved);
  REQUIRE(r.exit_code() == 1);
}

TEST_CASE("Verify: a transition invariant over old(x) is proved or refuted per action",
          "[verifier]") {
  const auto r = verifier::verify(kernel::load_spec_file(source_path("examples/payments.json")));
  REQUIRE(find(r, "preservation:pay_rent:paid_total_monotone").verdict ==
          verifier::VerdictKind::proved);
  REQUIRE(find(r, "preservation:top_up:paid_total_monotone").verdict ==
          verifier::VerdictKind::proved);
  const auto& o = find(r, "preservation:pay_rent:balance_never_negative");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);
  REQUIRE(value_of(o.counterexample->post, "balance").front() == '-');
  REQUIRE(find(r, "preservation:top_up:balance_never_negative").verdict ==
          verifier::VerdictKind::proved);
}

TEST_CASE("Verify: every counterexample replays through the kernel", "[verifier]") {
  const auto model = kernel::load_spec(R"J({
    "variables": {"x": {"type": "int", "initial": 0, "min": -100, "max": 100},
                  "d": {"type": "decimal", "scale": 2, "initial": "0.00"},
                  "s": {"type": "enum", "values": ["a", "b", "c"], "initial": "a"},
                  "l": {"type": "list", "element": "int", "initial": [], "max_length": 3}},
    "actions": [{"id": "bump", "cost": 1, "parameters": {"k": {"type": "int", "min": 1, "max": 5}},
                 "effects": [{"variable": "x", "mode": "increment", "value": "k"}, {"variable": "l", "mode": "append", "value": "k"}]},
                {"id": "cycle", "cost": 1, "effects": [{"variable": "s", "mode": "set", "value": "if s == 'a' then 'b' else 'c'"}]},
                {"id": "spend", "cost": 1, "effects": [{"variable": "d", "mode": "decrement", "value": "0.75"}]}],
    "invariants": [{"name": "x_small", "check": "x <= 10"}, {"name": "never_c", "check": "s != 'c'"},
                   {"name": "d_floor", "check": "d >= -1.00"}, {"name": "l_short", "check": "len(l) <= 2 || !contains(l, 5)"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  const auto r = verifier::verify(model);
  for (const char* id : {"preservation:bump:x_small",
                         "preservation:cycle:never_c",
                         "preservation:spend:d_floor",
                         "preservation:bump:l_short"}) {
    INFO(id);
    const auto& o = find(r, id);
    REQUIRE(o.verdict == verifier::VerdictKind::refuted);
    // Replay it once more here, independently of the verifier's own check.
    kernel::State pre = model->initial_state();
    for (const auto& [name, v] : o.counterexample->pre)
      pre = pre.with(*model->schema->find(name), v);
    kernel::KernelOptions options;
    options.check_initial_state = false;
    kernel::SafetyKernel k(model, options);
    kernel::Proposal p{*model->find_action(o.action), {}};
    for (const auto& [_, v] : o.counterexample->params) p.params.push_back(v);
    REQUIRE(k.evaluate_in(pre, p).has(kernel::ReasonCode::invariant_violated, o.invariant));
  }
  REQUIRE(find(r, "preservation:spend:x_small").reason.find("frame") != std::string::npos);
}

TEST_CASE("Verify: unknowns carry their reason and never count as proved", "[verifier]") {
  kernel::TaskDecl t;
  t.variables.push_back(
      kernel::VariableDecl{"x", kernel::Type::integer(), kernel::Value::integer(1)});
  t.variables.push_back(
      kernel::VariableDecl{"y", kernel::Type::integer(), kernel::Value::integer(1)});
  kernel::ActionDecl square;
  square.id = "square";
  square.cost = "1";
  square.effects = {{"x", kernel::EffectMode::set, "x * y"}};
  t.actions.push_back(square);
  kernel::InvariantDecl native;
  native.name = "native";
  native.predicate = [](const kernel::State&) { return true; };
  kernel::InvariantDecl positive;
  positive.name = "positive";
  positive.expression = "x * x * y * y + 1 > 0 || x > 0";
  t.invariants = {native, positive};
  t.budget = kernel::BudgetDecl{kernel::Decimal{10, 0}, kernel::Decimal{1, 0}};
  const auto r = verifier::verify(kernel::build_model(t));
  REQUIRE(find(r, "preservation:square:native").verdict == verifier::VerdictKind::unknown);
  REQUIRE_THAT(find(r, "preservation:square:native").reason, Catch::Matchers::Contains("opaque"));
  const auto& nl = find(r, "preservation:square:positive");
  // Z3 may settle this nonlinear query or give up; it must never be refuted (it is valid).
  REQUIRE(nl.verdict != verifier::VerdictKind::refuted);
  if (nl.verdict == verifier::VerdictKind::unknown) REQUIRE(!nl.reason.empty());
  REQUIRE(r.exit_code() == 3);
  REQUIRE(r.exit_code(/*fail_on_unknown=*/true) == 1);
}

TEST_CASE("Verify: the base case is refuted when the initial state breaks an invariant",
          "[verifier]") {
  const auto r = verifier::verify(
      kernel::load_spec(R"J({"variables": {"n": {"type": "int", "initial": 5}}, "actions": [],
    "invariants": [{"name": "small", "check": "n < 3"}], "budget": {"total": 1, "min_action_cost": 1}})J"));
  const auto& o = find(r, "base:small");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);
  REQUIRE(value_of(o.counterexample->pre, "n") == "5");
}

TEST_CASE("Verify: the verdicts do not depend on the number of jobs", "[verifier]") {
  const auto model = kernel::load_spec_file(source_path("examples/cloud_deploy.json"));
  verifier::VerifyOptions one, two;
  two.jobs = 2;
  const auto a = verifier::verify(model, one);
  const auto b = verifier::verify(model, two);
  REQUIRE(a.obligations.size() == b.obligations.size());
  for (std::size_t i = 0; i < a.obligations.size(); ++i) {
    REQUIRE(a.obligations[i].id == b.obligations[i].id);
    REQUIRE(a.obligations[i].verdict == b.obligations[i].verdict);
  }
}

TEST_CASE("Verify: the report, counterexamples included, does not depend on the number of jobs",
          "[verifier]") {
  // With one context per worker, a model depended on what that worker had solved before: the
  // autoscale example's counterexample differed between 1 and 2 jobs (issue 34).
  for (const char* spec :
       {"examples/autoscale.json", "examples/cloud_deploy.json", "examples/payments.json"}) {
    const auto model = kernel::load_spec_file(source_path(spec));
    auto text = [](const verifier::Obligation& o) {
      std::string out = o.id + " " + std::string(verifier::to_string(o.verdict)) + " " + o.reason;
      if (o.counterexample) {
        for (const auto* part :
             {&o.counterexample->pre, &o.counterexample->params, &o.counterexample->post}) {
          for (const auto& [name, v] : *part) out += " " + name + "=" + v.to_string();
          out += " |";
        }
      }
      return out;
    };
    verifier::VerifyOptions options;
    const auto one = verifier::verify(model, options);
    REQUIRE(one.refuted > 0);
    for (unsigned jobs : {2U, 3U}) {
      options.jobs = jobs;
      const auto other = verifier::verify(model, options);
      REQUIRE(one.obligations.size() == other.obligations.size());
      for (std::size_t i = 0; i < one.obligations.size(); ++i) {
        INFO(spec << " with " << jobs << " jobs");
        REQUIRE(text(one.obligations[i]) == text(other.obligations[i]));
      }
    }
  }
}

TEST_CASE("Verify: after the run's deadline nothing is solved, and what is left is unknown",
          "[verifier]") {
  const auto model = kernel::load_spec_file(source_path("examples/cloud_deploy.json"));
  verifier::VerifyOptions options;
  options.jobs = 2;
  options.depth = 5;
  options.deadline = verifier::Deadline::after(1);
  while (!options.deadline.passed()) {
  }
  const auto r = verifier::verify(model, options);
  const std::string not_reached =
      "not checked: the run's time limit (1 ms, --timeout) was reached first";
  std::size_t unreached = 0;
  for (const auto& o : r.obligations) {
    INFO(o.id << ": " << o.reason);
    // Only what needs no solver is decided: base cases are evaluated, frames skip the solver.
    if (o.verdict != verifier::VerdictKind::unknown) {
      REQUIRE(o.reason.rfind("inductive", 0) == std::string::npos);
      continue;
    }
    REQUIRE(o.reason == not_reached);
    ++unreached;
  }
  REQUIRE(find(r, "preservation:scale_up:instance_cap").reason == not_reached);
  REQUIRE(find(r, "lint:consistent").reason == not_reached);
  REQUIRE(unreached > 0);
  REQUIRE(r.unknown > 0);
  REQUIRE(r.refuted == 0);
  REQUIRE(r.exit_code() == 3);
}

TEST_CASE("Verify: lints find redundant invariants, dead actions and overflowing effects",
          "[verifier][lint]") {
  const auto r = verifier::verify(kernel::load_spec(R"J({
    "variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 10}, "y": {"type": "int", "initial": 0}},
    "actions": [{"id": "never", "cost": 1, "requires": "x > 20", "effects": []},
                {"id": "grow", "cost": 1, "effects": [{"variable": "y", "mode": "increment", "value": 1}]},
                {"id": "fine", "cost": 1, "requires": "x < 10", "effects": [{"variable": "x", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "x_le_5", "check": "x <= 5"}, {"name": "x_le_8", "check": "x <= 8"}],
    "budget": {"total": 10, "min_action_cost": 1}})J"));
  REQUIRE(find(r, "lint:consistent").verdict == verifier::VerdictKind::proved);
  const auto& redundant = find(r, "lint:independent:x_le_8");
  REQUIRE(redundant.verdict == verifier::VerdictKind::refuted);
  REQUIRE_THAT(redundant.reason, Catch::Matchers::Contains("implied by `x_le_5`"));
  REQUIRE(find(r, "lint:independent:x_le_5").verdict == verifier::VerdictKind::proved);
  REQUIRE(find(r, "lint:enabled:never").verdict == verifier::VerdictKind::refuted);
  REQUIRE(find(r, "lint:enabled:fine").verdict == verifier::VerdictKind::proved);
  REQUIRE(find(r, "lint:no-overflow:grow").verdict == verifier::VerdictKind::refuted);
  REQUIRE(find(r, "lint:no-overflow:fine").verdict == verifier::VerdictKind::proved);
  REQUIRE(r.warnings == 3);
  REQUIRE(r.refuted == 1);  // fine can break x_le_5 (from x = 5); lints do not count here
}

TEST_CASE("Verify: jointly unsatisfiable invariants are reported", "[verifier][lint]") {
  kernel::TaskDecl t;
  t.variables.push_back(
      kernel::VariableDecl{"x", kernel::Type::integer(), kernel::Value::integer(0)});
  kernel::InvariantDecl a, b;
  a.name = "low";
  a.expression = "x < 0";
  b.name = "high";
  b.expression = "x > 0";
  t.invariants = {a, b};
  t.budget = kernel::BudgetDecl{kernel::Decimal{1, 0}, kernel::Decimal{1, 0}};
  const auto r = verifier::verify(kernel::build_model(t));
  const auto& o = find(r, "lint:consistent");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);
  REQUIRE_THAT(o.reason, Catch::Matchers::Contains("jointly unsatisfiable"));
}

TEST_CASE("Verify: a lint that needs a state never says proved without every invariant",
          "[verifier]") {
  // The encoder cannot translate invariants over an optional variable: the lints used to drop
  // them and call two contradictory ones consistent.
  const auto model = kernel::load_spec(R"J({
    "variables": {"o": {"type": "int", "optional": true, "initial": 1},
                  "x": {"type": "int", "initial": 0, "min": 0, "max": 9}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "x", "mode": "increment",
                                                       "value": 1}]}],
    "invariants": [{"name": "one", "check": "o == 1"}, {"name": "two", "check": "o == 2"},
                   {"name": "small", "check": "x <= 9"}],
    "budget": {"total": 5, "min_action_cost": 1}})J");
  const auto r = verifier::verify(model);
  const auto& consistent = find(r, "lint:consistent");
  REQUIRE(consistent.verdict == verifier::VerdictKind::unknown);
  REQUIRE_THAT(consistent.reason, Catch::Matchers::Contains("could not be encoded"));
  REQUIRE(find(r, "lint:enabled:inc").verdict == verifier::VerdictKind::unknown);
  // Those that an omitted invariant cannot make wrong still run and are decided.
  REQUIRE(find(r, "lint:no-overflow:inc").verdict == verifier::VerdictKind::proved);
}

TEST_CASE("Verify: --smtlib writes one standalone SMT-LIB file per preservation obligation",
          "[verifier]") {
  const std::string dir = clampai::test::temp_file("smtlib");
  std::filesystem::create_directories(dir);
  verifier::VerifyOptions options;
  options.smtlib_dir = dir;
  const auto r =
      verifier::verify(kernel::load_spec_file(source_path("examples/cloud_deploy.json")), options);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE_THAT(text, Catch::Matchers::Contains("(check-sat)"));
  }
  REQUIRE(files == 15);  // 5 actions x 3 blocking invariants
  REQUIRE(find(r, "preservation:scale_up:instance_cap").verdict == verifier::VerdictKind::refuted);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Verify: an intermediate int64 overflow is modelled as the kernel fails closed on it",
          "[verifier]") {
  // x + y - y <= 100 reads as x <= 100 in unbounded integers, but the kernel evaluates x + y
  // first and rejects on overflow: the increment is not safe, and the verifier must say so.
  const auto r = verifier::verify(kernel::load_spec(R"J({
    "variables": {"x": {"type": "int", "initial": 0}, "y": {"type": "int", "initial": 0}},
    "actions": [{"id": "b", "cost": 1, "requires": "x < 100", "effects": [{"variable": "x", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "j", "check": "x + y - y <= 100"}],
    "budget": {"total": 10, "min_action_cost": 1}})J"));
  const auto& o = find(r, "preservation:b:j");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);  // replayed: the kernel rejects it
  REQUIRE(value_of(o.counterexample->pre, "y").size() > 15);
}

TEST_CASE("Verify: --depth finds a replayed path to a refuted pair, or proves there is none",
          "[verifier][reach]") {
  verifier::VerifyOptions options;
  options.depth = 6;
  const auto model = kernel::load_spec_file(source_path("examples/cloud_deploy.json"));
  const auto r = verifier::verify(model, options);
  const auto& o = find(r, "preservation:scale_up:instance_cap");
  REQUIRE(o.reachability.status == verifier::Reachability::Status::reachable);
  REQUIRE(o.reachability.witness.size() >= 4);
  REQUIRE(o.reachability.witness[0].first == "build");
  // The witness is approved step by step by a kernel, and then the action is blocked.
  kernel::SafetyKernel k(model);
  for (const auto& [action, params] : o.reachability.witness) {
    kernel::ParamMap p(params.begin(), params.end());
    REQUIRE(k.execute(action, p).decision.approved);
  }
  bool blocked = false;
  for (int n = 1; n <= 5; ++n)
    blocked = blocked || k.evaluate("scale_up", {{"n", kernel::Value::integer(n)}})
                             .has(kernel::ReasonCode::invariant_violated, "instance_cap");
  REQUIRE(blocked);

  // A pair that is not inductive but cannot be reached: x only grows by 1 from 0, under a guard.
  const auto safe = kernel::load_spec(R"J({
    "variables": {"x": {"type": "int", "initial": 0}, "y": {"type": "int", "initial": 0}},
    "actions": [{"id": "b", "cost": 1, "requires": "x < 3", "effects": [{"variable": "x", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "j", "check": "x + y <= 10"}],
    "budget": {"total": 10, "min_action_cost": 1}})J");
  options.depth = 5;
  const auto rs = verifier::verify(safe, options);
  const auto& os = find(rs, "preservation:b:j");
  REQUIRE(os.verdict == verifier::VerdictKind::refuted);  // not inductive: y could be 10
  REQUIRE(os.reachability.status == verifier::Reachability::Status::unreachable);
  REQUIRE_THAT(os.reachability.reason, Catch::Matchers::Contains("not inductive"));
}

// Issue 34: a list whose numbers have a coarser scale than the elements of the list that
// receives it was copied unit for unit ([1] into a list<decimal(1)> read as [0.1]): verify
// proved actions the kernel blocks. Each form of the value: a literal, a variable, an `if`.
TEST_CASE("Verify: a list set into a list of a finer scale keeps its numbers' values",
          "[verifier][lists]") {
  const std::string head = R"J({
    "variables": {"b": {"type": "bool", "initial": true},
                  "ys": {"type": "list", "element": "int", "initial": [1], "max_length": 2},
                  "xs": {"type": "list", "element": {"type": "decimal", "scale": 2}, "initial": [], "max_length": 2}},
    "actions": [{"id": "a0", "cost": 1, "effects": [{"variable": "xs", "mode": "set", "value": ")J";
  const std::string tail = R"J("}]}],
    "invariants": [{"name": "i0", "check": "!contains(xs, 1)"}, {"name": "i1", "check": "ys == [] || ys == [1]"}],
    "budget": {"total": 5, "min_action_cost": 1}})J";
  for (const char* value :
       {"[1]", "ys", "if b then [1] else [1.5]", "if b then ys else [2.5]", "[0.5, 1]"}) {
    INFO(value);
    const auto model = kernel::load_spec(head + value + tail);
    const auto r = verifier::verify(model);
    const auto& o = find(r, "preservation:a0:i0");
    // Each form on its own (CHECK): every one was proved, wrongly, before the fix.
    CHECK(o.verdict == verifier::VerdictKind::refuted);  // replayed through the kernel
    CHECK(r.exit_code() == 1);
    if (o.counterexample)
      CHECK(value_of(o.counterexample->post, "xs").find("1.00") != std::string::npos);
    // The kernel blocks a0 in the initial state, which --depth 1 therefore reaches.
    kernel::SafetyKernel k(model);
    REQUIRE(k.evaluate("a0", {}).has(kernel::ReasonCode::invariant_violated, "i0"));
    verifier::VerifyOptions options;
    options.depth = 1;
    const auto rd = verifier::verify(model, options);
    const auto& d = find(rd, "preservation:a0:i0");
    CHECK(d.reachability.status == verifier::Reachability::Status::reachable);
  }
}

TEST_CASE("Verify: lists of different scales compare by value; a finer number is looked up",
          "[verifier][lists]") {
  // Both were `unsupported construct` before: now decided, and the copy keeps every value.
  const auto r = verifier::verify(kernel::load_spec(R"J({
    "variables": {"ys": {"type": "list", "element": "int", "initial": [1], "max_length": 2},
                  "xs": {"type": "list", "element": {"type": "decimal", "scale": 2}, "initial": [], "max_length": 2}},
    "actions": [{"id": "copy", "cost": 1, "effects": [{"variable": "xs", "mode": "set", "value": "ys"}]},
                {"id": "half", "cost": 1, "effects": [{"variable": "xs", "mode": "set", "value": "[0.5]"}]}],
    "invariants": [{"name": "same", "check": "xs == [] || xs == ys || xs == [0.5]"},
                   {"name": "no_half", "check": "!contains(ys, 0.5) && (contains(ys, 1.0) || !contains(xs, 1))"}],
    "budget": {"total": 5, "min_action_cost": 1}})J"));
  REQUIRE(r.unknown == 0);
  CHECK(find(r, "preservation:copy:same").verdict == verifier::VerdictKind::proved);
  CHECK(find(r, "preservation:half:same").verdict == verifier::VerdictKind::proved);
  CHECK(find(r, "preservation:copy:no_half").verdict == verifier::VerdictKind::proved);
  CHECK(find(r, "preservation:half:no_half").verdict == verifier::VerdictKind::proved);
}

TEST_CASE("Verify: a number rescaled into a list fails on int64 overflow, as in the kernel",
          "[verifier][lists]") {
  // 922337203685477581 fits an int, not a decimal(1): the kernel rejects the append and the
  // set with `overflow`, so the lists stay empty (no false counterexample, and the lint says
  // the effects can overflow).
  const auto r = verifier::verify(kernel::load_spec(R"J({
    "variables": {"ys": {"type": "list", "element": "int", "initial": [], "max_length": 2},
                  "xs": {"type": "list", "element": {"type": "decimal", "scale": 1}, "initial": [], "max_length": 2},
                  "zs": {"type": "list", "element": {"type": "decimal", "scale": 1}, "initial": [], "max_length": 2}},
    "actions": [{"id": "add", "cost": 1, "effects": [{"variable": "xs", "mode": "append", "value": "922337203685477581"}]},
                {"id": "copy", "cost": 1, "requires": "ys == [] || ys == [922337203685477581]", "effects": [{"variable": "zs", "mode": "set", "value": "ys"}]}],
    "invariants": [{"name": "i0", "check": "len(xs) == 0"}, {"name": "i1", "check": "!contains(zs, 922337203685477581)"}],
    "budget": {"total": 5, "min_action_cost": 1}})J"));
  REQUIRE(find(r, "preservation:add:i0").verdict == verifier::VerdictKind::proved);
  REQUIRE(find(r, "preservation:copy:i1").verdict == verifier::VerdictKind::proved);
  REQUIRE(find(r, "lint:no-overflow:add").verdict == verifier::VerdictKind::refuted);
  REQUIRE(r.exit_code() != 2);
}

TEST_CASE("Verify: lists of enumeration values are encoded", "[verifier][lists]") {
  const auto r = verifier::verify(kernel::load_spec(R"J({
    "variables": {"c": {"type": "enum", "values": ["red", "green"], "initial": "red"},
                  "xs": {"type": "list", "element": {"type": "enum", "values": ["red", "green", "blue"]}, "initial": [], "max_length": 2}},
    "actions": [{"id": "push", "cost": 1, "effects": [{"variable": "xs", "mode": "append", "value": "c"}]},
                {"id": "reset", "cost": 1, "effects": [{"variable": "xs", "mode": "set", "value": "['green']"}]},
                {"id": "drop", "cost": 1, "effects": [{"variable": "xs", "mode": "remove", "value": "'red'"}]}],
    "invariants": [{"name": "no_blue", "check": "!contains(xs, 'blue')"}, {"name": "no_pair", "check": "xs != ['red', 'red']"}],
    "budget": {"total": 5, "min_action_cost": 1}})J"));
  REQUIRE(r.unknown == 0);
  for (const char* a : {"push", "reset", "drop"})
    REQUIRE(find(r, std::string("preservation:") + a + ":no_blue").verdict ==
            verifier::VerdictKind::proved);
  const auto& o = find(r, "preservation:push:no_pair");
  REQUIRE(o.verdict == verifier::VerdictKind::refuted);
  REQUIRE(value_of(o.counterexample->post, "xs") == "['red', 'red']");
  REQUIRE(find(r, "preservation:reset:no_pair").verdict == verifier::VerdictKind::proved);
}
