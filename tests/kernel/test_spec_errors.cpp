// Every way a task spec can be wrong: load_spec throws SpecError naming the JSON path (and the
// line:column inside an expression, or of malformed JSON), and no input crashes it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/spec_loader.hpp"

namespace {

using Catch::Matchers::Contains;
using clampai::SpecError;
using clampai::kernel::load_spec;

// The parts of a small spec; each test replaces the part it breaks.
struct Parts {
  std::string variables =
      R"("x": {"type": "int", "initial": 0},
         "flag": {"type": "bool", "initial": false},
         "label": {"type": "string", "initial": "a"},
         "status": {"type": "enum", "values": ["idle", "busy"], "initial": "idle"},
         "amount": {"type": "decimal", "scale": 2, "initial": "1.00"},
         "processed": {"type": "int", "initial": 0})";
  std::string actions = R"({"id": "a", "cost": 1})";
  std::string budget = R"("total": 10, "min_action_cost": 1)";
  std::string extra;  // further top-level members, each starting with a comma
};

std::string spec(const Parts& p) {
  return R"({"variables": {)" + p.variables + R"(}, "actions": [)" + p.actions +
         R"(], "budget": {)" + p.budget + "}" + p.extra + "}";
}

std::string with_actions(const std::string& actions) {
  Parts p;
  p.actions = actions;
  return spec(p);
}

std::string with_variables(const std::string& variables) {
  Parts p;
  p.variables = variables;
  return spec(p);
}

std::string with_budget(const std::string& budget) {
  Parts p;
  p.budget = budget;
  return spec(p);
}

std::string with_extra(const std::string& extra) {
  Parts p;
  p.extra = extra;
  return spec(p);
}

// An action `a` with one effect.
std::string with_effect(const std::string& effect) {
  return with_actions(R"({"id": "a", "cost": 1, "effects": [)" + effect + "]}");
}

// An action `a` with the given `requires`.
std::string with_requires(const std::string& guard) {
  return with_actions(R"({"id": "a", "cost": 1, "requires": ")" + guard + "\"}");
}

// The SpecError load_spec throws for `text`, or nullopt if it accepts the text. Any other
// exception escapes and fails the test.
std::optional<SpecError> spec_error(std::string_view text) {
  try {
    (void)load_spec(text);
  } catch (const SpecError& e) {
    return e;
  }
  return std::nullopt;
}

std::string read_example(const std::string& name) {
  std::ifstream in(std::string(CLAMPAI_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The `line:column` of the byte at `offset` (both 1-based).
std::string line_col(const std::string& text, std::size_t offset) {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// Loads `text`; a rejection (any clampai::Error) is a normal outcome, everything else escapes.
void load_or_reject(std::string_view text) {
  try {
    (void)load_spec(text);
  } catch (const clampai::Error&) {
  }
}

// Runs `work` in a child process whose stack is limited to 1 MiB, so that stack use that grows
// with the input shows up as a crash at a modest input size in Debug and Release builds alike.
// Returns how the child ended: "finished" if `work` returned or threw clampai::Error.
std::string outcome_in_child(const std::function<void()>& work) {
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Let a crash kill the child instead of running Catch2's reporter in it.
    std::signal(SIGSEGV, SIG_DFL);
    std::signal(SIGBUS, SIG_DFL);
    std::signal(SIGABRT, SIG_DFL);
    rlimit limit{};
    getrlimit(RLIMIT_STACK, &limit);
    limit.rlim_cur = 1024 * 1024;
    setrlimit(RLIMIT_STACK, &limit);
    try {
      work();
    } catch (const clampai::Error&) {
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
    return "threw something other than clampai::Error";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "finished";
  return "exited with status " + std::to_string(status);
}

}  // namespace

// ---- the table: specs with one mistake, the path it is reported at, what the message says ----

namespace {

struct ErrorCase {
  const char* name;
  std::string text;
  const char* path;
  std::vector<const char*> messages;
};

std::vector<ErrorCase> error_cases() {
  return {
      {"SpecLoader: unknown variable in `requires` is named with its column",
       with_requires("x < zzz"),
       "actions[0].requires:1:5",
       {"unknown variable `zzz`", "actions[0].requires:1:5: "}},
      {"SpecLoader: unknown variable on a later line of an expression has its line",
       with_requires("x > 0 &&\\n  bogus"),
       "actions[0].requires:2:3",
       {"unknown variable `bogus`"}},
      {"SpecLoader: unknown variable in an effect value is named with its column",
       with_effect(R"({"variable": "x", "mode": "set", "value": "x + nope"})"),
       "actions[0].effects[0].value:1:5",
       {"unknown variable `nope`"}},
      {"SpecLoader: effect on an unknown variable names the effect",
       with_effect(R"({"variable": "ghost", "mode": "set", "value": 1})"),
       "actions[0].effects[0].variable",
       {"unknown variable `ghost`"}},
      {"SpecLoader: unknown variable in an invariant is named with its column",
       with_extra(R"(, "invariants": [{"name": "inv", "check": "x >= 0 && ghost"}])"),
       "invariants[0].check:1:11",
       {"unknown variable `ghost`"}},
      {"SpecLoader: unknown variable in the goal is named with its column",
       with_extra(R"(, "goal": "x == 1 || nothere")"),
       "goal:1:11",
       {"unknown variable `nothere`"}},
      {"SpecLoader: unknown variable in a goal object is at `goal.check`",
       with_extra(R"(, "goal": {"description": "d", "check": "x == 1 || nothere"})"),
       "goal.check:1:11",
       {"unknown variable `nothere`"}},
      {"SpecLoader: a misspelt variable gets a did-you-mean hint",
       with_requires("procesed >= 1"),
       "actions[0].requires:1:1",
       {"unknown variable `procesed`", "did you mean `processed`?"}},
      {"SpecLoader: unknown effect mode is named",
       with_effect(R"({"variable": "x", "mode": "add", "value": 1})"),
       "actions[0].effects[0].mode",
       {"unknown mode `add`"}},
      {"SpecLoader: unknown top-level key is rejected",
       with_extra(R"(, "budgte": {})"),
       "budgte",
       {"unknown key `budgte`"}},
      {"SpecLoader: unknown key in an action is rejected",
       with_actions(R"({"id": "a", "cots": 1})"),
       "actions[0].cots",
       {"unknown key `cots`"}},
      {"SpecLoader: setting an int variable to a bool is a type error",
       with_effect(R"({"variable": "x", "mode": "set", "value": true})"),
       "actions[0].effects[0].value:1:1",
       {"cannot set `x` (int) to a value of type bool"}},
      {"SpecLoader: incrementing a bool variable is a type error",
       with_effect(R"({"variable": "flag", "mode": "increment", "value": 1})"),
       "actions[0].effects[0].mode",
       {"`increment` needs a numeric variable; `flag` is bool"}},
      {"SpecLoader: comparing a string with an int is a type error",
       with_requires("label == 1"),
       "actions[0].requires:1:7",
       {"cannot compare string with int"}},
      {"SpecLoader: a non-bool `requires` is a type error",
       with_requires("x + 1"),
       "actions[0].requires:1:3",
       {"must be a bool, found int"}},
      {"SpecLoader: multiplying by a decimal is a type error",
       with_effect(R"({"variable": "amount", "mode": "multiply", "value": "1.5"})"),
       "actions[0].effects[0].value:1:1",
       {"`multiply` takes an int factor"}},
      {"SpecLoader: duplicate action ids are rejected",
       with_actions(R"({"id": "a", "cost": 1}, {"id": "a", "cost": 2})"),
       "actions[1].id",
       {"duplicate action id `a` (also actions[0])"}},
      {"SpecLoader: duplicate invariant names are rejected",
       with_extra(
           R"(, "invariants": [{"name": "inv", "check": "x >= 0"}, {"name": "inv", "check": "x <= 9"}])"),
       "invariants[1].name",
       {"duplicate invariant `inv`"}},
      {"SpecLoader: two effects on one variable in one action are rejected",
       with_effect(R"({"variable": "x", "mode": "set", "value": 1},
                                           {"variable": "x", "mode": "increment", "value": 1})"),
       "actions[0].effects[1]",
       {"a second effect on `x`"}},
      {"SpecLoader: an undeclared emergency action is rejected",
       with_extra(R"(, "emergency_actions": ["stop"])"),
       "emergency_actions[0]",
       {"unknown action `stop`"}},
      {"SpecLoader: a negative cost is rejected",
       with_actions(R"({"id": "a", "cost": -1})"),
       "actions[0].cost",
       {"must not be negative"}},
      {"SpecLoader: a negative budget is rejected",
       with_budget(R"("total": -5, "min_action_cost": 1)"),
       "budget.total",
       {"must not be negative"}},
      {"SpecLoader: a zero min_action_cost is rejected (T2)",
       with_budget(R"("total": 10, "min_action_cost": 0)"),
       "budget.min_action_cost",
       {"must be greater than 0"}},
      {"SpecLoader: a cost finer than the budget scale is rejected",
       with_actions(R"({"id": "a", "cost": 0.0001})"),
       "actions[0].cost",
       {"finer than the budget's scale of 3"}},
      {"SpecLoader: a decimal initial value finer than its scale is rejected",
       with_variables(R"("d": {"type": "decimal", "scale": 1, "initial": 0.25})"),
       "variables.d.initial",
       {"more digits after the point than decimal(1) allows"}},
      {"SpecLoader: a parameter default outside its bounds is rejected",
       with_actions(
           R"({"id": "a", "cost": 1, "parameters": {"n": {"type": "int", "min": 1, "max": 5, "default": 9}}})"),
       "actions[0].parameters.n.default",
       {"9 is above the maximum 5"}},
      {"SpecLoader: a parameter named like a variable is rejected",
       with_actions(
           R"({"id": "a", "cost": 1, "parameters": {"x": {"type": "int", "default": 1}}})"),
       "actions[0].parameters.x",
       {"parameter `x` has the name of a state variable"}},
      {"SpecLoader: delete on a non-optional variable is rejected",
       with_effect(R"({"variable": "x", "mode": "delete"})"),
       "actions[0].effects[0].mode",
       {"`delete` needs an optional variable; `x` is not optional"}},
      {"SpecLoader: a trailing comma is malformed JSON at line:column",
       "{\n  \"variables\": {},\n  \"actions\": [],\n}",
       "4:1",
       {"malformed JSON"}},
      {"SpecLoader: 10000 nested arrays are rejected without a crash",
       std::string(10000, '[') + std::string(10000, ']'),
       "1:65",
       {"JSON nested more than 64 levels deep"}},
      {"SpecLoader: an oversized input is a whole-file problem without a path",
       std::string(clampai::kernel::max_input_bytes() + 1, ' '),
       "",
       {"file larger than 67108864 bytes"}},
  };
}

}  // namespace

TEST_CASE("SpecLoader: each spec of the error table is rejected at its path, with its message",
          "[kernel][spec]") {
  for (const ErrorCase& c : error_cases()) {
    DYNAMIC_SECTION(c.name) {
      const auto e = spec_error(c.text);
      REQUIRE(e);
      CHECK(e->path() == c.path);
      for (const char* m : c.messages) CHECK_THAT(e->what(), Contains(m));
    }
  }
}

// ---- unknown names in expressions ----

// ---- unknown keywords and keys ----

TEST_CASE("SpecLoader: unknown variable type is named", "[kernel][spec]") {
  SECTION("of a variable") {
    const auto e = spec_error(with_variables(R"("x": {"type": "float", "initial": 0})"));
    REQUIRE(e);
    CHECK(e->path() == "variables.x.type");
    CHECK_THAT(e->what(), Contains("unknown type `float`"));
  }
  SECTION("of a list element") {
    const auto e =
        spec_error(with_variables(R"("x": {"type": "list", "element": "float", "initial": []})"));
    REQUIRE(e);
    CHECK(e->path() == "variables.x.element");
    CHECK_THAT(e->what(), Contains("unknown type `float`"));
  }
  SECTION("with the name this language gives it") {
    for (const auto& [wrong, right] :
         std::vector<std::pair<std::string, std::string>>{{"integer", "int"},
                                                          {"intt", "int"},
                                                          {"Boolean", "bool"},
                                                          {"str", "string"},
                                                          {"float", "decimal"},
                                                          {"array", "list"}}) {
      const auto e =
          spec_error(with_variables(R"("x": {"type": ")" + wrong + R"(", "initial": 0})"));
      REQUIRE(e);
      CHECK_THAT(e->what(),
                 Contains("unknown type `" + wrong + "` (did you mean `" + right + "`?)"));
    }
  }
  SECTION("of a parameter") {
    const auto e = spec_error(
        with_actions(R"({"id": "a", "cost": 1, "parameters": {"n": {"type": "integer"}}})"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].parameters.n.type");
    CHECK_THAT(e->what(), Contains("unknown type `integer` (did you mean `int`?)"));
  }
}

TEST_CASE("SpecLoader: a missing top-level key is located at the top-level object",
          "[kernel][spec]") {
  const auto e = spec_error("\n  {\"variables\": {}, \"actions\": []}");
  REQUIRE(e);
  const clampai::SpecProblem& p = e->problems().front();
  CHECK(p.path.empty());
  CHECK(p.message == "missing `budget`");
  CHECK(p.line == 2);
  CHECK(p.column == 3);
}

// ---- type errors ----

TEST_CASE("SpecLoader: an enum literal outside the enum is a type error", "[kernel][spec]") {
  SECTION("compared") {
    const auto e = spec_error(with_requires("status == 'flying'"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].requires:1:11");
    CHECK_THAT(e->what(), Contains("`'flying'` is not a value of enum{idle, busy}"));
  }
  SECTION("assigned") {
    const auto e =
        spec_error(with_effect(R"({"variable": "status", "mode": "set", "value": "'flying'"})"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].effects[0].value:1:1");
    CHECK_THAT(e->what(), Contains("cannot set `status`"));
  }
  SECTION("as the initial value") {
    const auto e = spec_error(
        with_variables(R"("status": {"type": "enum", "values": ["idle"], "initial": "flying"})"));
    REQUIRE(e);
    CHECK(e->path() == "variables.status.initial");
    CHECK_THAT(e->what(), Contains("`flying` is not a value of enum{idle}"));
  }
}

// ---- duplicates ----

TEST_CASE("SpecLoader: duplicate JSON keys are reported by the JSON reader", "[kernel][spec]") {
  SECTION("two variables of one name") {
    const auto e = spec_error(with_variables(
        R"("processed": {"type": "int", "initial": 0}, "processed": {"type": "int", "initial": 1})"));
    REQUIRE(e);
    CHECK(e->path() == "variables.processed");
    CHECK_THAT(e->what(), Contains("duplicate key `processed`"));
  }
  SECTION("two costs in one action") {
    const auto e = spec_error(with_actions(R"({"id": "a", "cost": 1, "cost": 2})"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].cost");
    CHECK_THAT(e->what(), Contains("duplicate key `cost`"));
  }
}

// ---- dependencies and emergency actions ----

TEST_CASE("SpecLoader: cyclic dependencies are rejected with the cycle", "[kernel][spec]") {
  const std::string two = R"({"id": "a", "cost": 1}, {"id": "b", "cost": 1})";
  SECTION("a -> b -> a") {
    Parts p;
    p.actions = two;
    p.extra = R"(, "dependencies": {"a": ["b"], "b": ["a"]})";
    const auto e = spec_error(spec(p));
    REQUIRE(e);
    CHECK(e->path() == "dependencies.b");
    CHECK_THAT(e->what(), Contains("cyclic dependencies: a -> b -> a"));
  }
  SECTION("a -> b -> c -> a") {
    Parts p;
    p.actions = two + R"(, {"id": "c", "cost": 1})";
    p.extra = R"(, "dependencies": {"a": ["b"], "b": ["c"], "c": ["a"]})";
    const auto e = spec_error(spec(p));
    REQUIRE(e);
    CHECK(e->path() == "dependencies.c");
    CHECK_THAT(e->what(), Contains("cyclic dependencies: a -> b -> c -> a"));
  }
  SECTION("self-dependency") {
    Parts p;
    p.actions = two;
    p.extra = R"(, "dependencies": {"a": ["a"]})";
    const auto e = spec_error(spec(p));
    REQUIRE(e);
    CHECK(e->path() == "dependencies.a");
    CHECK_THAT(e->what(), Contains("cyclic dependencies: a -> a"));
  }
}

TEST_CASE("SpecLoader: a dependency on an unknown action is rejected", "[kernel][spec]") {
  SECTION("unknown prerequisite") {
    const auto e = spec_error(with_extra(R"(, "dependencies": {"a": ["ghost"]})"));
    REQUIRE(e);
    CHECK(e->path() == "dependencies.a[0]");
    CHECK_THAT(e->what(), Contains("unknown action `ghost`"));
  }
  SECTION("unknown dependent") {
    const auto e = spec_error(with_extra(R"(, "dependencies": {"ghost": ["a"]})"));
    REQUIRE(e);
    CHECK(e->path() == "dependencies.ghost");
    CHECK_THAT(e->what(), Contains("unknown action `ghost`"));
  }
}

TEST_CASE("SpecLoader: an emergency action with a non-zero cost is rejected", "[kernel][spec]") {
  Parts p;
  p.actions = R"({"id": "work", "cost": 0}, {"id": "stop", "cost": 0.5})";
  p.extra = R"(, "emergency_actions": ["stop"])";
  const auto e = spec_error(spec(p));
  REQUIRE(e);
  CHECK(e->path() == "actions[1].cost");
  CHECK_THAT(e->what(), Contains("emergency action `stop` must cost 0"));
}

// ---- numbers ----

TEST_CASE("SpecLoader: NaN and Infinity given as strings are not numbers", "[kernel][spec]") {
  for (const std::string bad : {"NaN", "Infinity", "-Infinity"}) {
    INFO(bad);
    SECTION("cost " + bad) {
      const auto e = spec_error(with_actions(R"({"id": "a", "cost": ")" + bad + "\"}"));
      REQUIRE(e);
      // A string cost is an expression over the parameters; `NaN` is not one of them.
      CHECK(e->path() == "actions[0].cost:1:" + std::string(bad[0] == '-' ? "2" : "1"));
      CHECK_THAT(e->what(), Contains("unknown parameter `" + bad.substr(bad[0] == '-') + "`"));
    }
    SECTION("total " + bad) {
      const auto e = spec_error(with_budget(R"("total": ")" + bad + R"(", "min_action_cost": 1)"));
      REQUIRE(e);
      CHECK(e->path() == "budget.total");
      CHECK_THAT(e->what(), Contains("`" + bad + "`: not a number"));
    }
    SECTION("min_action_cost " + bad) {
      const auto e = spec_error(with_budget(R"("total": 10, "min_action_cost": ")" + bad + "\""));
      REQUIRE(e);
      CHECK(e->path() == "budget.min_action_cost");
      CHECK_THAT(e->what(), Contains("`" + bad + "`: not a number"));
    }
  }
}

TEST_CASE("SpecLoader: a NaN literal is malformed JSON", "[kernel][spec]") {
  const std::string text =
      "{\n  \"variables\": {},\n  \"actions\": [],\n"
      "  \"budget\": {\"total\": NaN, \"min_action_cost\": 1}\n}";
  const auto e = spec_error(text);
  REQUIRE(e);
  CHECK(e->path() == "4:23");
  CHECK_THAT(e->what(), Contains("malformed JSON"));
}

TEST_CASE("SpecLoader: a budget that overflows int64 after scaling is rejected", "[kernel][spec]") {
  SECTION("1e17 at scale 3") {
    const auto e = spec_error(with_budget(R"("total": 1e17, "min_action_cost": 1)"));
    REQUIRE(e);
    CHECK(e->path() == "budget.total");
    CHECK_THAT(e->what(), Contains("overflows a 64-bit fixed-point amount at scale 3"));
  }
  SECTION("twenty nines as a string") {
    const auto e =
        spec_error(with_budget(R"("total": "99999999999999999999", "min_action_cost": 1)"));
    REQUIRE(e);
    CHECK(e->path() == "budget.total");
    CHECK_THAT(e->what(), Contains("does not fit a 64-bit fixed-point number"));
  }
  SECTION("twenty nines as a JSON number") {
    const auto e =
        spec_error(with_budget(R"("total": 99999999999999999999, "min_action_cost": 1)"));
    REQUIRE(e);
    CHECK(e->path() == "budget.total");
    CHECK_THAT(e->what(), Contains("does not fit a 64-bit fixed-point number"));
  }
}

TEST_CASE("SpecLoader: an initial value outside min/max is rejected", "[kernel][spec]") {
  SECTION("above") {
    const auto e =
        spec_error(with_variables(R"("x": {"type": "int", "initial": 11, "min": 0, "max": 10})"));
    REQUIRE(e);
    CHECK(e->path() == "variables.x.initial");
    CHECK_THAT(e->what(), Contains("11 is above the maximum 10"));
  }
  SECTION("below") {
    const auto e = spec_error(with_variables(R"("x": {"type": "int", "initial": -1, "min": 0})"));
    REQUIRE(e);
    CHECK(e->path() == "variables.x.initial");
    CHECK_THAT(e->what(), Contains("-1 is below the minimum 0"));
  }
}

// ---- misuse of the expression language and of effects ----

TEST_CASE("SpecLoader: old(x) outside invariants is rejected", "[kernel][spec]") {
  SECTION("in requires") {
    const auto e = spec_error(with_requires("old(x) == 0"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].requires:1:1");
    CHECK_THAT(e->what(), Contains("`old(...)` is only allowed in invariants"));
  }
  SECTION("in an effect value") {
    const auto e =
        spec_error(with_effect(R"({"variable": "x", "mode": "set", "value": "old(x) + 1"})"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].effects[0].value:1:1");
    CHECK_THAT(e->what(), Contains("`old(...)` is only allowed in invariants"));
  }
  SECTION("in the goal") {
    const auto e = spec_error(with_extra(R"js(, "goal": "x > old(x)")js"));
    REQUIRE(e);
    CHECK(e->path() == "goal:1:5");
    CHECK_THAT(e->what(), Contains("`old(...)` is only allowed in invariants"));
  }
}

TEST_CASE("SpecLoader: variable names must be identifiers and not reserved words",
          "[kernel][spec]") {
  for (const std::string bad : {"my-var", "2fast", "has space", ""}) {
    INFO("`" << bad << "`");
    const auto e = spec_error(with_variables("\"" + bad + R"(": {"type": "int", "initial": 0})"));
    REQUIRE(e);
    CHECK(e->path() == "variables." + bad);
    CHECK_THAT(e->what(), Contains("variable name `" + bad + "` is not an identifier"));
  }
  for (const std::string reserved : {"len", "if", "true", "old"}) {
    INFO("`" << reserved << "`");
    const auto e =
        spec_error(with_variables("\"" + reserved + R"(": {"type": "int", "initial": 0})"));
    REQUIRE(e);
    CHECK(e->path() == "variables." + reserved);
    CHECK_THAT(e->what(), Contains("`" + reserved + "` is a reserved word"));
  }
}

TEST_CASE("SpecLoader: an empty expression is rejected", "[kernel][spec]") {
  SECTION("empty requires") {
    const auto e = spec_error(with_requires(""));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].requires");
    CHECK_THAT(e->what(), Contains("empty expression"));
  }
  SECTION("blank requires") {
    const auto e = spec_error(with_requires("   "));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].requires:1:4");
    CHECK_THAT(e->what(), Contains("empty expression"));
  }
  SECTION("empty effect value") {
    const auto e = spec_error(with_effect(R"({"variable": "x", "mode": "set", "value": ""})"));
    REQUIRE(e);
    CHECK(e->path() == "actions[0].effects[0].value");
    CHECK_THAT(e->what(), Contains("empty expression"));
  }
  SECTION("empty invariant") {
    const auto e = spec_error(with_extra(R"(, "invariants": [{"name": "inv", "check": ""}])"));
    REQUIRE(e);
    CHECK(e->path() == "invariants[0].check");
    CHECK_THAT(e->what(), Contains("empty expression"));
  }
  SECTION("empty goal") {
    const auto e = spec_error(with_extra(R"(, "goal": "")"));
    REQUIRE(e);
    CHECK(e->path() == "goal");
    CHECK_THAT(e->what(), Contains("empty expression"));
  }
}

TEST_CASE("SpecLoader: an expression nested 1000 levels deep is rejected", "[kernel][spec]") {
  const std::string deep = std::string(1000, '(') + "x > 0" + std::string(1000, ')');
  const auto e = spec_error(with_requires(deep));
  REQUIRE(e);
  CHECK(e->path() == "actions[0].requires:1:202");
  CHECK_THAT(e->what(), Contains("expression nested more than 200 levels deep"));
}

// ---- malformed and hostile JSON ----

TEST_CASE("SpecLoader: a truncated file is malformed JSON at its end", "[kernel][spec]") {
  const std::string full = read_example("quickstart.json");
  const std::string text = full.substr(0, full.find("\"actions\""));
  const auto e = spec_error(text);
  REQUIRE(e);
  CHECK(e->path() == line_col(text, text.size() - 1));
  CHECK_THAT(e->what(), Contains("malformed JSON"));
  CHECK_THAT(e->what(), Contains("unexpected end of input"));
}

TEST_CASE("SpecLoader: a 1 MiB string is rejected with the limit", "[kernel][spec]") {
  const std::string big(1024 * 1024, 'a');
  const std::string text = R"({"description": ")" + big + R"(", "variables": {}})";
  const auto e = spec_error(text);
  REQUIRE(e);
  // Reported where the reader stops: the string's closing quote.
  CHECK(e->path() == line_col(text, text.find('"', 17)));
  CHECK_THAT(e->what(), Contains("string longer than 65536 bytes"));
}

TEST_CASE("SpecLoader: an input over the 64 MiB input limit is rejected", "[kernel][spec]") {
  const std::string text = with_extra(R"(, "description": ")" +
                                      std::string(clampai::kernel::max_input_bytes(), 'a') + "\"");
  const auto e = spec_error(text);
  REQUIRE(e);
  CHECK_THAT(e->what(), Contains("file larger than 67108864 bytes"));
}

// ---- the C++ API ----

TEST_CASE("TaskModel: build_model rejects an invariant with neither expression nor predicate",
          "[kernel][spec]") {
  clampai::kernel::TaskDecl decl;
  decl.budget.total = clampai::kernel::Decimal::integer(10);
  decl.budget.min_action_cost = clampai::kernel::Decimal::integer(1);
  clampai::kernel::InvariantDecl inv;
  inv.name = "empty";
  decl.invariants.push_back(inv);
  try {
    (void)clampai::kernel::build_model(decl);
    FAIL("build_model accepted an invariant with nothing to check");
  } catch (const SpecError& e) {
    CHECK(e.path() == "invariants[0].check");
    CHECK_THAT(e.what(), Contains("needs an expression or a predicate"));
  }
}

// ---- nothing crashes ----

TEST_CASE("SpecLoader: random byte mutations of the examples never crash", "[kernel][spec]") {
  const std::vector<std::string> examples = {read_example("quickstart.json"),
                                             read_example("cloud_deploy.json"),
                                             read_example("payments.json")};
  for (const auto& text : examples) REQUIRE_NOTHROW(load_spec(text));
  std::mt19937 rng(20240611);
  // Bytes that matter to JSON and to expressions are picked more often than arbitrary ones.
  const std::string interesting = "{}[]\":,.-+0123456789eE \\'()!&|<>=tfnx\n";
  constexpr int kMutations = 3000;
  for (int i = 0; i < kMutations; ++i) {
    std::string text = examples[static_cast<std::size_t>(i) % examples.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    std::string log;
    for (int k = 0; k < edits && !text.empty(); ++k) {
      const std::size_t at = rng() % text.size();
      const char byte = (rng() % 2 == 0) ? interesting[rng() % interesting.size()]
                                         : static_cast<char>(rng() % 256);
      switch (rng() % 3) {
        case 0:
          text[at] = static_cast<char>(text[at] ^ (1u << (rng() % 8)));
          log += " flip@" + std::to_string(at);
          break;
        case 1:
          text.insert(at, 1, byte);
          log += " insert@" + std::to_string(at);
          break;
        default:
          text.erase(at, 1);
          log += " delete@" + std::to_string(at);
          break;
      }
    }
    INFO("mutation " << i << ":" << log);
    REQUIRE_NOTHROW(load_or_reject(text));
  }
}

// A chain `x + x + ... + x` is parsed by a loop, not by recursion, so the parser's 200-level
// limit does not see it; the tree it builds is as deep as the chain is long.
TEST_CASE("SpecLoader: a long operator chain is rejected or loaded without a crash",
          "[kernel][spec]") {
  std::string chain = "x";
  for (int i = 0; i < 32000; ++i) chain += "+x";  // just under the 64 KiB expression limit
  const std::string text = with_requires(chain + " > 0");
  CHECK(outcome_in_child([&] { (void)load_spec(text); }) == "finished");
}

TEST_CASE("SpecLoader: a long dependency chain is checked without a crash", "[kernel][spec]") {
  constexpr int kActions = 20000;
  clampai::kernel::TaskDecl decl;
  decl.budget.total = clampai::kernel::Decimal::integer(10);
  decl.budget.min_action_cost = clampai::kernel::Decimal::integer(1);
  for (int i = 0; i < kActions; ++i) {
    clampai::kernel::ActionDecl a;
    a.id = "a" + std::to_string(i);
    a.cost = "1";
    decl.actions.push_back(a);
  }
  // a0 needs a1, which needs a2, ...: a depth-first search follows the whole chain.
  for (int i = 0; i + 1 < kActions; ++i) {
    decl.dependencies.emplace_back("a" + std::to_string(i),
                                   std::vector<std::string>{"a" + std::to_string(i + 1)});
  }
  CHECK(outcome_in_child([&] { (void)clampai::kernel::build_model(decl); }) == "finished");
}

TEST_CASE("SpecLoader: a barrier rate needs (0, 1] and a blocking numeric comparison",
          "[kernel][spec]") {
  struct Case {
    const char* invariant;
    const char* message;
  };
  const Case cases[] = {
      {R"({"name": "i", "check": "x >= 0", "barrier_rate": 0})", "a barrier rate is in (0, 1]"},
      {R"({"name": "i", "check": "x >= 0", "barrier_rate": 1.5})", "a barrier rate is in (0, 1]"},
      {R"({"name": "i", "check": "x >= 0", "barrier_rate": "fast"})", "expected a number"},
      {R"({"name": "i", "check": "x >= 0 && x <= 9", "barrier_rate": 0.5})",
       "a barrier rate needs a numeric comparison"},
      {R"({"name": "i", "check": "x != 3", "barrier_rate": 0.5})",
       "a barrier rate needs a numeric comparison"},
      {R"({"name": "i", "check": "x >= 0", "enforcement": "monitoring", "barrier_rate": 0.5})",
       "needs a blocking invariant"},
      {R"J({"name": "i", "check": "x >= old(x)", "barrier_rate": 0.5})J",
       "needs a blocking invariant on one state"},
  };
  for (const Case& c : cases) {
    INFO(c.invariant);
    const auto e = spec_error(with_extra(std::string(R"(, "invariants": [)") + c.invariant + "]"));
    REQUIRE(e);
    CHECK(e->path() == "invariants[0].barrier_rate");
    CHECK_THAT(e->what(), Contains(c.message));
  }
  const auto ok = clampai::kernel::load_spec(
      with_extra(R"(, "invariants": [{"name": "i", "check": "x <= 9", "barrier_rate": 0.25}])"));
  REQUIRE(ok->invariants[0].barrier);
  CHECK(clampai::kernel::to_source(*ok->invariants[0].barrier) == "9 - x");
}
