// Loading valid task specs: the examples, exact numbers, parameters, optional, enum and list
// variables, goals, source locations, the model digest and state files.
#include <catch2/catch.hpp>

#include <cstddef>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/spec_loader.hpp"

namespace {

using Catch::Matchers::Contains;
using clampai::kernel::Decimal;
using clampai::kernel::load_spec;
using clampai::kernel::TaskModel;
using clampai::kernel::Type;
using clampai::kernel::Value;

std::string read_example(const std::string& name) {
  std::ifstream in(std::string(CLAMPAI_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<const TaskModel> load_example(const std::string& name) {
  return load_spec(read_example(name));
}

// A spec with the given variables and budget and one free action `a`.
std::string small_spec(const std::string& variables,
                       const std::string& budget = R"("total": 10, "min_action_cost": 1)",
                       const std::string& extra = "") {
  return R"({"variables": {)" + variables +
         R"(}, "actions": [{"id": "a", "cost": 1}], "budget": {)" + budget + "}" + extra + "}";
}

const clampai::kernel::Variable& variable(const TaskModel& m, const std::string& name) {
  for (const auto& v : m.variables) {
    if (v.name == name) return v;
  }
  FAIL("no variable `" << name << "`");
  throw std::logic_error("unreachable");
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

// ---- the examples ----

TEST_CASE("SpecLoader: quickstart loads with its counts and step limit", "[kernel][spec]") {
  const auto m = load_example("quickstart.json");
  CHECK(m->name == "quickstart");
  CHECK(m->variables.size() == 2);
  CHECK(m->actions.size() == 1);
  CHECK(m->invariants.size() == 1);
  CHECK(m->budget.scale == 3);
  CHECK(m->budget.total == 20000);
  CHECK(m->budget.min_action_cost == 100);
  CHECK(m->budget.step_limit == 200);  // 20.0 / 0.1
  CHECK(m->goal != nullptr);
  CHECK(m->goal_description == "Process 10 records");
  const auto& a = m->actions[0];
  CHECK(a.id == "process_batch");
  CHECK(a.name == "Process Batch");
  CHECK(a.cost == 2000);
  CHECK(a.reversible);
  CHECK_FALSE(a.emergency);
  REQUIRE(a.effects.size() == 1);
  CHECK(a.effects[0].mode == clampai::kernel::EffectMode::increment);
  CHECK(m->invariants[0].name == "max_errors");
  CHECK(m->invariants[0].enforcement == clampai::kernel::Enforcement::blocking);
}

TEST_CASE("SpecLoader: cloud_deploy loads with its counts and step limit", "[kernel][spec]") {
  const auto m = load_example("cloud_deploy.json");
  CHECK(m->variables.size() == 6);
  CHECK(m->actions.size() == 5);
  CHECK(m->invariants.size() == 4);
  CHECK(m->budget.step_limit == 40);  // 20.0 / 0.5
  const auto hover = m->find_action("safe_hover");
  REQUIRE(hover);
  CHECK(m->actions[*hover].emergency);
  CHECK(m->actions[*hover].cost == 0);
  const auto deploy = m->find_action("deploy");
  REQUIRE(deploy);
  CHECK_FALSE(m->actions[*deploy].reversible);
  // deploy depends on test, which depends on build.
  REQUIRE(m->actions[*deploy].dependencies.size() == 1);
  CHECK(m->actions[m->actions[*deploy].dependencies[0]].id == "test");
  CHECK(m->invariants[3].enforcement == clampai::kernel::Enforcement::monitoring);
  CHECK(m->invariants[1].suggestion == "scale up by fewer instances");
}

TEST_CASE("SpecLoader: payments loads with its counts and step limit", "[kernel][spec]") {
  const auto m = load_example("payments.json");
  CHECK(m->variables.size() == 4);
  CHECK(m->actions.size() == 4);
  CHECK(m->invariants.size() == 2);
  CHECK(m->budget.scale == 2);
  CHECK(m->budget.step_limit == 20);  // 5.00 / 0.25
  CHECK(m->actions[0].cost == 25);
  CHECK(variable(*m, "balance").type == Type::decimal(2));
  CHECK(m->initial_state().get("balance") == Value::number(Decimal{25000, 2}));
  CHECK_FALSE(m->invariants[0].transition);
  CHECK(m->invariants[1].transition);  // paid_total >= old(paid_total)
}

TEST_CASE("SpecLoader: load_spec_file reads an example", "[kernel][spec]") {
  const auto m = clampai::kernel::load_spec_file(std::string(CLAMPAI_SOURCE_DIR) +
                                                 "/examples/quickstart.json");
  CHECK(m->digest == load_example("quickstart.json")->digest);
  CHECK_THROWS_AS(clampai::kernel::load_spec_file("/nonexistent/spec.json"), clampai::Error);
}

// ---- exact numbers ----

TEST_CASE("SpecLoader: the step limit is floor(B / eps) computed exactly", "[kernel][spec]") {
  // In binary floating point 0.3 / 0.1 is 2.9999999999999996, and the Python reference gets 2.
  const auto m = load_spec(small_spec(R"("x": {"type": "int", "initial": 0})",
                                      R"("total": 0.3, "min_action_cost": 0.1)"));
  CHECK(m->budget.total == 300);
  CHECK(m->budget.min_action_cost == 100);
  CHECK(m->budget.step_limit == 3);
}

TEST_CASE("SpecLoader: a declared max_steps lowers the step limit", "[kernel][spec]") {
  const auto m = load_spec(small_spec(R"("x": {"type": "int", "initial": 0})",
                                      R"("total": 20.0, "min_action_cost": 0.1, "max_steps": 5)"));
  CHECK(m->budget.declared_max_steps == 5);
  CHECK(m->budget.step_limit == 5);
}

TEST_CASE("SpecLoader: decimals are read exactly from JSON numbers", "[kernel][spec]") {
  const auto m = load_spec(small_spec(R"("d": {"type": "decimal", "scale": 1, "initial": 0.1},
                                         "e": {"type": "decimal", "scale": 2, "initial": 0.1},
                                         "f": {"type": "decimal", "scale": 2, "initial": "12.5"})"));
  const Decimal d = m->initial_state().get("d").as_number();
  CHECK(d.units == 1);  // exactly one unit of 0.1, not 0.1000000000000000055...
  CHECK(d.scale == 1);
  const Decimal e = m->initial_state().get("e").as_number();
  CHECK(e.units == 10);  // normalised to the variable's scale
  CHECK(e.scale == 2);
  CHECK(m->initial_state().get("f").as_number().units == 1250);
}

TEST_CASE("SpecLoader: a budget scale changes the units", "[kernel][spec]") {
  const auto m = load_spec(small_spec(R"("x": {"type": "int", "initial": 0})",
                                      R"("total": 1.5, "min_action_cost": 0.5, "scale": 1)"));
  CHECK(m->budget.scale == 1);
  CHECK(m->budget.total == 15);
  CHECK(m->budget.min_action_cost == 5);
  CHECK(m->actions[0].cost == 10);
  CHECK(m->format_amount(m->budget.total) == "1.5");
}

// ---- actions and parameters ----

TEST_CASE("SpecLoader: a cost may be an expression over a parameter", "[kernel][spec]") {
  SECTION("cloud_deploy scale_up") {
    const auto m = load_example("cloud_deploy.json");
    const auto i = m->find_action("scale_up");
    REQUIRE(i);
    const auto& a = m->actions[*i];
    REQUIRE(a.cost_expr != nullptr);
    CHECK(a.cost_expr->type.is_numeric());
    CHECK(clampai::kernel::to_source(*a.cost_expr) == "1.5 * n");
  }
  SECTION("an int cost") {
    const auto m = load_spec(
        R"({"variables": {}, "actions": [{"id": "a", "cost": "2 * n + 1",
            "parameters": {"n": {"type": "int", "min": 0, "max": 3, "default": 1}}}],
            "budget": {"total": 10, "min_action_cost": 1}})");
    REQUIRE(m->actions[0].cost_expr != nullptr);
    CHECK(m->actions[0].cost_expr->type == Type::integer());
  }
  SECTION("a plain number in a string is a fixed cost") {
    const auto m = load_spec(R"({"variables": {}, "actions": [{"id": "a", "cost": "1.25"}],
                                 "budget": {"total": 10, "min_action_cost": 1}})");
    CHECK(m->actions[0].cost_expr == nullptr);
    CHECK(m->actions[0].cost == 1250);
  }
}

TEST_CASE("SpecLoader: parameters keep their types, bounds and defaults", "[kernel][spec]") {
  SECTION("int") {
    const auto m = load_example("cloud_deploy.json");
    const auto& a = m->actions[*m->find_action("scale_up")];
    REQUIRE(a.parameters.size() == 1);
    const auto& n = a.parameters[0];
    CHECK(n.name == "n");
    CHECK(n.type == Type::integer());
    CHECK(n.min == Decimal::integer(1));
    CHECK(n.max == Decimal::integer(5));
    CHECK(n.default_value == Decimal::integer(2));
    REQUIRE(a.parameter_scope.size() == 1);
    CHECK(a.parameter_scope[0].name == "n");
  }
  SECTION("decimal") {
    const auto m = load_example("payments.json");
    const auto& a = m->actions[*m->find_action("top_up")];
    REQUIRE(a.parameters.size() == 1);
    const auto& amount = a.parameters[0];
    CHECK(amount.type == Type::decimal(2));
    CHECK(amount.min == Decimal{1, 2});
    CHECK(amount.max == Decimal{10000, 2});
    CHECK(amount.default_value == Decimal{2000, 2});
  }
  SECTION("without a default") {
    const auto m = load_spec(R"({"variables": {"x": {"type": "int", "initial": 0}},
        "actions": [{"id": "a", "cost": 1, "parameters": {"k": {"type": "int"}},
                     "effects": [{"variable": "x", "mode": "increment", "value": "k"}]}],
        "budget": {"total": 10, "min_action_cost": 1}})");
    REQUIRE(m->actions[0].parameters.size() == 1);
    CHECK_FALSE(m->actions[0].parameters[0].default_value);
    CHECK_FALSE(m->actions[0].parameters[0].min);
  }
}

// ---- variables ----

TEST_CASE("SpecLoader: an optional variable may have no initial value", "[kernel][spec]") {
  const auto m = load_spec(R"js({"variables": {"lease": {"type": "int", "optional": true}},
      "actions": [{"id": "drop", "cost": 1, "requires": "defined(lease)",
                   "effects": [{"variable": "lease", "mode": "delete"}]}],
      "budget": {"total": 10, "min_action_cost": 1}})js");
  const auto& v = variable(*m, "lease");
  CHECK(v.optional);
  CHECK_FALSE(v.initial.is_defined());
  CHECK_FALSE(m->initial_state().get("lease").is_defined());
  REQUIRE(m->actions[0].effects.size() == 1);
  CHECK(m->actions[0].effects[0].mode == clampai::kernel::EffectMode::del);
  CHECK(m->actions[0].effects[0].value == nullptr);
}

TEST_CASE("SpecLoader: enum and list variables keep their values", "[kernel][spec]") {
  const auto m = load_example("cloud_deploy.json");
  const auto& status = variable(*m, "status");
  CHECK(status.type.kind() == Type::Kind::enumeration);
  CHECK(status.type.enum_values() ==
        std::vector<std::string>{"idle", "building", "serving", "hovering"});
  CHECK(m->initial_state().get("status") == Value::string("idle"));
  const auto& events = variable(*m, "events");
  CHECK(events.type == Type::list(Type::string()));
  CHECK(events.max_length == 20);
  CHECK(m->initial_state().get("events") == Value::list({}));
  const auto& instances = variable(*m, "instances");
  CHECK(instances.min == Decimal::integer(0));
  CHECK(instances.max == Decimal::integer(10));
}

TEST_CASE("SpecLoader: a list variable may start with items", "[kernel][spec]") {
  const auto m = load_spec(
      small_spec(R"("tags": {"type": "list", "element": {"type": "enum", "values": ["a", "b"]},
                             "initial": ["b", "a"], "max_length": 3},
                    "nums": {"type": "list", "element": "int", "initial": [1, 2, 3]})"));
  CHECK(m->initial_state().get("tags") == Value::list({Value::string("b"), Value::string("a")}));
  CHECK(m->initial_state().get("nums") ==
        Value::list({Value::integer(1), Value::integer(2), Value::integer(3)}));
}

// ---- goal ----

TEST_CASE("SpecLoader: the goal may be a string or an object", "[kernel][spec]") {
  const std::string vars = R"("x": {"type": "int", "initial": 0})";
  SECTION("string") {
    const auto m = load_spec(
        small_spec(vars, R"("total": 10, "min_action_cost": 1)", R"(, "goal": "x >= 3")"));
    REQUIRE(m->goal != nullptr);
    CHECK(clampai::kernel::to_source(*m->goal) == "x >= 3");
    CHECK(m->goal_description.empty());
  }
  SECTION("object") {
    const auto m =
        load_spec(small_spec(vars,
                             R"("total": 10, "min_action_cost": 1)",
                             R"(, "goal": {"description": "three", "check": "x >= 3"})"));
    REQUIRE(m->goal != nullptr);
    CHECK(clampai::kernel::to_source(*m->goal) == "x >= 3");
    CHECK(m->goal_description == "three");
  }
  SECTION("absent") {
    const auto m = load_spec(small_spec(vars));
    CHECK(m->goal == nullptr);
  }
}

// ---- source locations ----

TEST_CASE("SpecLoader: loaded actions, variables and invariants carry source locations",
          "[kernel][spec]") {
  SECTION("the examples") {
    for (const char* name : {"quickstart.json", "cloud_deploy.json", "payments.json"}) {
      INFO(name);
      const auto m = load_example(name);
      for (const auto& a : m->actions) CHECK(a.loc.line > 0);
      for (const auto& v : m->variables) CHECK(v.loc.line > 0);
      for (const auto& inv : m->invariants) CHECK(inv.loc.line > 0);
    }
  }
  SECTION("exact lines and columns") {
    const auto m = load_spec(
        "{\n"
        "  \"variables\": {\"x\": {\"type\": \"int\", \"initial\": 0}},\n"
        "  \"actions\": [\n"
        "    {\"id\": \"a\", \"cost\": 1},\n"
        "      {\"id\": \"b\", \"cost\": 1}\n"
        "  ],\n"
        "  \"invariants\": [{\"name\": \"i\", \"check\": \"x >= 0\"}],\n"
        "  \"budget\": {\"total\": 10, \"min_action_cost\": 1}\n"
        "}");
    CHECK(m->actions[0].loc.line == 4);
    CHECK(m->actions[0].loc.column == 5);
    CHECK(m->actions[1].loc.line == 5);
    CHECK(m->actions[1].loc.column == 7);
    CHECK(m->variables[0].loc.line == 2);
    CHECK(m->variables[0].loc.column == 22);
    CHECK(m->invariants[0].loc.line == 7);
    CHECK(m->invariants[0].loc.column == 18);
  }
}

// ---- digest ----

TEST_CASE("SpecLoader: the digest is stable for the same text", "[kernel][spec]") {
  for (const char* name : {"quickstart.json", "cloud_deploy.json", "payments.json"}) {
    INFO(name);
    const std::string text = read_example(name);
    const auto a = load_spec(text);
    const auto b = load_spec(text);
    CHECK(a->digest == b->digest);
    CHECK(a->digest.size() == 64);
    CHECK(a->digest.find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  CHECK(load_example("quickstart.json")->digest != load_example("payments.json")->digest);
}

TEST_CASE("SpecLoader: the digest ignores formatting and descriptions", "[kernel][spec]") {
  const std::string text = read_example("quickstart.json");
  const std::string digest = load_spec(text)->digest;
  SECTION("between JSON tokens") {
    std::string spaced;
    for (char c : text) {
      spaced += c;
      if (c == '\n') spaced += "\n   \t";
    }
    CHECK(load_spec(spaced)->digest == digest);
  }
  SECTION("inside an expression") {
    CHECK(load_spec(replaced(text, "\"errors <= 3\"", "\"errors<=3\""))->digest == digest);
  }
  SECTION("in descriptions and display names") {
    std::string t = replaced(text, "\"name\": \"Process Batch\"", "\"name\": \"Batch\"");
    t = replaced(t, "Process the next 5 records", "Next five");
    t = replaced(t, "Abort if error rate is too high", "Too many errors");
    t = replaced(t, "\"description\": \"Process 10 records\"", "\"description\": \"Ten\"");
    CHECK(load_spec(t)->digest == digest);
  }
  SECTION("in the spelling of a number") {
    CHECK(load_spec(replaced(text, "\"cost\": 2.0", "\"cost\": 2"))->digest == digest);
  }
}

TEST_CASE("SpecLoader: the digest changes when an action changes", "[kernel][spec]") {
  const std::string text = read_example("quickstart.json");
  const std::string digest = load_spec(text)->digest;
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"id\": \"process_batch\"", "\"id\": \"process_batches\""},
      {"\"cost\": 2.0", "\"cost\": 2.5"},
      {"\"reversible\": true", "\"reversible\": false"},
      {"\"mode\": \"increment\"", "\"mode\": \"decrement\""},
      {"\"value\": 5", "\"value\": 6"},
      {"\"variable\": \"processed\"", "\"variable\": \"errors\""},
      {"\"reversible\": true,", "\"reversible\": true, \"requires\": \"errors < 3\","},
      {"\"reversible\": true,",
       "\"reversible\": true, \"parameters\": {\"k\": {\"type\": \"int\", \"default\": 1}},"},
      {"\"check\": \"errors <= 3\"", "\"check\": \"errors <= 4\""},
      {"\"total\": 20.0", "\"total\": 20.5"},
  };
  for (const auto& [from, to] : edits) {
    INFO(from << " -> " << to);
    CHECK(load_spec(replaced(text, from, to))->digest != digest);
  }
}

// ---- states ----

TEST_CASE("SpecLoader: parse_state reads a state of the model", "[kernel][spec]") {
  const auto m = load_example("quickstart.json");
  const auto s = clampai::kernel::parse_state(*m, R"({"processed": 5})");
  CHECK(s.get("processed") == Value::integer(5));
  CHECK(s.get("errors") == Value::integer(0));  // not mentioned: keeps its initial value
  const auto p = load_example("payments.json");
  const auto t = clampai::kernel::parse_state(*p, R"({"balance": "12.5", "payees": ["x"]})");
  CHECK(t.get("balance").as_number().units == 1250);
  CHECK(t.get("balance").as_number().scale == 2);
  CHECK(t.get("payees") == Value::list({Value::string("x")}));
}

TEST_CASE("SpecLoader: parse_state rejects an unknown variable by name", "[kernel][spec]") {
  const auto m = load_example("quickstart.json");
  try {
    (void)clampai::kernel::parse_state(*m, R"({"processed": 1, "bogus": 1})");
    FAIL("parse_state accepted an unknown variable");
  } catch (const clampai::SpecError& e) {
    CHECK(e.path() == "bogus");
    CHECK_THAT(e.what(), Contains("unknown variable `bogus`"));
  }
}

TEST_CASE("SpecLoader: parse_state rejects a value of the wrong type by name", "[kernel][spec]") {
  const auto m = load_example("quickstart.json");
  try {
    (void)clampai::kernel::parse_state(*m, R"({"errors": true})");
    FAIL("parse_state accepted a bool for an int");
  } catch (const clampai::SpecError& e) {
    CHECK(e.path() == "errors");
    CHECK_THAT(e.what(), Contains("expected a number"));
  }
}

TEST_CASE("SpecLoader: a number with an exponent in an effect value is read as a plain decimal",
          "[kernel][spec]") {
  const auto model =
      clampai::kernel::load_spec(R"J({"variables": {"x": {"type": "int", "initial": 0},
      "d": {"type": "decimal", "scale": 2, "initial": "0.00"}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "x", "mode": "set", "value": 1e3},
                                                   {"variable": "d", "mode": "set", "value": 2.5e-1}]}],
    "budget": {"total": 1, "min_action_cost": 1}})J");
  clampai::kernel::SafetyKernel k(model);
  REQUIRE(k.execute("a").decision.approved);
  REQUIRE(k.state().get("x") == clampai::kernel::Value::integer(1000));
  REQUIRE(k.state().get("d") == clampai::kernel::Value::number(clampai::kernel::Decimal{25, 2}));
}
