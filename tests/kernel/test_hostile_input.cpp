// Exact and honest reading of arguments: nesting limits, named numbers, duplicate keys, numbers
// beyond any range, suggestions.
#include <catch2/catch.hpp>
#include <string>

#include "clampai/kernel/json.hpp"
#include "support.hpp"

using namespace clampai::kernel;
using Catch::Matchers::Contains;

namespace {

std::string spec_with_requires(const std::string& guard) {
  return R"({"variables": {"x": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "requires": ")" +
         guard + R"("}], "budget": {"total": 1, "min_action_cost": 1}})";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const clampai::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Expr: the nesting limit of 200 is counted once per level", "[kernel][expr]") {
  for (int depth : {1, 100, 199, 200}) {
    const std::string guard = std::string(static_cast<std::size_t>(depth), '(') + "x >= 0" +
                              std::string(static_cast<std::size_t>(depth), ')');
    INFO(depth);
    REQUIRE_NOTHROW(load_spec(spec_with_requires(guard)));
  }
  REQUIRE_THAT(error_of([] {
                 (void)load_spec(
                     spec_with_requires(std::string(201, '(') + "x >= 0" + std::string(201, ')')));
               }),
               Contains("requires:1:202: expression nested more than 200 levels deep"));
  // Unary operators nest too, one level each (here 199 or 200 of them, and the parenthesis).
  REQUIRE_NOTHROW(load_spec(spec_with_requires(std::string(199, '!') + "(x >= 0)")));
  REQUIRE_THAT(
      error_of([] { (void)load_spec(spec_with_requires(std::string(200, '!') + "(x >= 0)")); }),
      Contains("nested more than 200 levels deep"));
}

TEST_CASE("parse_named_numbers: exact decimals, no floating point, no duplicate keys",
          "[kernel][spec]") {
  const auto values = parse_named_numbers(
      R"({"a": 0.1, "b": "12.50", "c": 123456789012.345678, "d": -7, "e": 1e3})", "--params");
  REQUIRE(values.size() == 5);
  REQUIRE(values[0].second.to_string() == "0.1");
  REQUIRE(values[1].second.to_string() == "12.50");
  REQUIRE(values[2].second.to_string() == "123456789012.345678");  // a double would round it
  REQUIRE(values[3].second.to_string() == "-7");
  REQUIRE(values[4].second.to_string() == "1000");
  REQUIRE_THAT(error_of([] { (void)parse_named_numbers(R"({"a": 1, "a": 2})", "--weights"); }),
               Contains("--weights.a: duplicate key `a`"));
  REQUIRE_THAT(error_of([] { (void)parse_named_numbers(R"({"a": 1e400})", "--params"); }),
               Contains("`1e400`: the value does not fit a 64-bit fixed-point number") &&
                   !Contains("json.exception"));
  REQUIRE_THAT(error_of([] { (void)parse_named_numbers(R"({"a": true})", "--params"); }),
               Contains("--params.a: expected a number, found a bool"));
  REQUIRE_THAT(error_of([] { (void)parse_named_numbers(R"([1])", "--params"); }),
               Contains("--params: expected a JSON object"));
  REQUIRE_THAT(error_of([] { (void)parse_named_numbers(R"({"a": )", "--params"); }),
               Contains("--params: malformed JSON") && Contains("(at 1:"));
}

TEST_CASE("JSON inputs: duplicate keys and huge numbers are errors everywhere", "[kernel][spec]") {
  REQUIRE_THAT(
      error_of([] {
        (void)load_spec(R"({"variables": {"x": {"type": "int", "initial": 1, "initial": 2}},
          "actions": [], "budget": {"total": 1, "min_action_cost": 1}})");
      }),
      Contains("variables.x.initial: duplicate key `initial`"));
  REQUIRE_THAT(error_of([] {
                 (void)load_spec(R"({"variables": {"x": {"type": "int", "initial": 1e400}},
          "actions": [], "budget": {"total": 1, "min_action_cost": 1}})");
               }),
               Contains("`1e400`: the value does not fit") && !Contains("malformed"));
  const auto model = load_spec(spec_with_requires("x >= 0"));
  REQUIRE_THAT(error_of([&] { (void)parse_state(*model, R"({"x": 1, "x": 2})"); }),
               Contains("duplicate key `x`"));
  REQUIRE_THAT(error_of([&] { (void)parse_state(*model, R"({"x": -1e400})"); }),
               Contains("`-1e400`: the value does not fit"));
}

TEST_CASE("Suggestions: the closest name within two edits", "[kernel][suggest]") {
  REQUIRE(edit_distance("balnce", "balance") == 1);
  REQUIRE(edit_distance("", "abc") == 3);
  REQUIRE(closest_match("chek", {"run", "check", "verify"}) == "check");
  REQUIRE(closest_match("jsn", {"text", "json"}) == "json");
  REQUIRE(closest_match("zzzzzz", {"text", "json"}).empty());
  REQUIRE(closest_match("x", {"y"}).empty());  // one letter: any name is one edit away
  REQUIRE(did_you_mean("verfy", {"verify"}) == " (did you mean `verify`?)");
  REQUIRE(did_you_mean("nothing", {}).empty());
}

TEST_CASE("Suggestions: a name another language uses suggests this one's", "[kernel][suggest]") {
  const std::vector<std::string> types{"bool", "int", "string"};
  const std::vector<clampai::kernel::Alias> aliases{{"integer", "int"}, {"boolean", "bool"}};
  REQUIRE(did_you_mean("integer", types, aliases) == " (did you mean `int`?)");
  REQUIRE(did_you_mean("Boolean", types, aliases) == " (did you mean `bool`?)");
  REQUIRE(did_you_mean("strng", types, aliases) == " (did you mean `string`?)");  // by spelling
  REQUIRE(did_you_mean("complex", types, aliases).empty());
}

TEST_CASE("SpecLoader: every problem at once, each with its line and column", "[kernel][spec]") {
  const std::string text = R"({"variables": {"balance": {"type": "int", "initial": 0},
               "count": {"type": "intt", "initial": 0}},
 "actions": [{"id": "a", "cost": 1, "requires": "balnce > 0", "efects": []},
             {"id": "b", "cost": true}],
 "budget": {"total": 1, "min_action_cost": 1}})";
  try {
    (void)load_spec(text);
    FAIL("no error");
  } catch (const clampai::SpecError& e) {
    const auto& ps = e.problems();
    REQUIRE(ps.size() == 3);
    CHECK(ps[0].path == "variables.count.type");
    CHECK(ps[0].line == 2);
    CHECK(ps[0].column == 34);
    CHECK(ps[1].path == "actions[0].efects");
    CHECK_THAT(ps[1].message, Contains("unknown key `efects` (did you mean `effects`?)"));
    CHECK(ps[1].line == 3);
    CHECK(ps[2].path == "actions[1].cost");
    CHECK(ps[2].line == 4);
    CHECK(ps[2].column == 34);
    CHECK_THAT(
        e.what(),
        Contains("variables.count.type: unknown type `intt`") && Contains("(and 2 more problems)"));
  }
  // A meaning error (after the structure is read) is located too, inside its expression.
  try {
    (void)load_spec(R"({"variables": {"balance": {"type": "int", "initial": 0}},
 "actions": [{"id": "a", "cost": 1, "requires": "balnce > 0"}],
 "budget": {"total": 1, "min_action_cost": 1}})");
    FAIL("no error");
  } catch (const clampai::SpecError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.path() == "actions[0].requires:1:1");
    CHECK(e.problems()[0].line == 2);
    CHECK(e.problems()[0].column == 50);  // the `b` of `balnce`
  }
}

TEST_CASE("SpecLoader: problems of meaning in independent parts are reported together",
          "[kernel][spec]") {
  // Three actions, an invariant and the goal, each with its own mistake: one load names all.
  const std::string text = R"({"variables": {"balance": {"type": "int", "initial": 0}},
 "actions": [{"id": "a", "cost": 1, "requires": "balnce > 0"},
             {"id": "ok", "cost": 1},
             {"id": "b", "cost": 1, "effects": [{"variable": "nope", "mode": "set", "value": 1}]},
             {"id": "a", "cost": 1}],
 "invariants": [{"name": "i", "check": "balance + true"}],
 "goal": "balance >= ",
 "budget": {"total": 1, "min_action_cost": 1}})";
  try {
    (void)load_spec(text);
    FAIL("no error");
  } catch (const clampai::SpecError& e) {
    const auto& ps = e.problems();
    REQUIRE(ps.size() == 5);
    CHECK(ps[0].path == "actions[0].requires:1:1");
    CHECK(ps[0].line == 2);
    CHECK_THAT(ps[1].path, Contains("actions[2].effects[0]"));
    CHECK(ps[1].line == 4);
    CHECK(ps[2].path == "actions[3].id");
    CHECK_THAT(ps[2].message, Contains("duplicate action id `a`"));
    CHECK_THAT(ps[3].path, Contains("invariants[0].check"));
    CHECK(ps[3].line == 6);
    CHECK_THAT(ps[4].path, Contains("goal"));
  }
  // One mistake is still one problem, with the spec otherwise intact.
  try {
    (void)load_spec(R"({"variables": {"n": {"type": "int", "initial": 0}},
      "actions": [{"id": "a", "cost": 1}], "goal": "m > 0",
      "budget": {"total": 1, "min_action_cost": 1}})");
    FAIL("no error");
  } catch (const clampai::SpecError& e) {
    CHECK(e.problems().size() == 1);
  }
}

TEST_CASE("SpecLoader: at most 20 problems are reported", "[kernel][spec]") {
  std::string text = R"({"variables": {}, "actions": [)";
  for (int i = 0; i < 30; ++i)
    text += std::string(i ? "," : "") + R"({"id": "a)" + std::to_string(i) + R"(", "cost": []})";
  text += R"(], "budget": {"total": 1, "min_action_cost": 1}})";
  try {
    (void)load_spec(text);
    FAIL("no error");
  } catch (const clampai::SpecError& e) {
    REQUIRE(e.problems().size() == 20);
    CHECK_THAT(e.what(), Contains("(and 19 more problems)"));
  }
}

TEST_CASE("SpecLoader: unknown names get a suggestion", "[kernel][spec][suggest]") {
  const auto error = [](const std::string& extra) {
    return error_of([&] {
      (void)load_spec(R"({"variables": {"count": {"type": "int", "initial": 0}},
        "actions": [{"id": "deploy", "cost": 1}, {"id": "stop", "cost": 0}],
        "budget": {"total": 1, "min_action_cost": 1})" +
                      extra + "}");
    });
  };
  CHECK_THAT(error(R"(, "dependencies": {"deploy": ["stpo"]})"),
             Contains("dependencies.deploy[0]: unknown action `stpo` (did you mean `stop`?)"));
  CHECK_THAT(error(R"(, "dependencies": {"deplyo": []})"),
             Contains("unknown action `deplyo` (did you mean `deploy`?)"));
  CHECK_THAT(error(R"(, "emergency_actions": ["stp"])"),
             Contains("unknown action `stp` (did you mean `stop`?)"));
  CHECK_THAT(error(R"(, "budgte": 1)"), Contains("unknown key `budgte` (did you mean `budget`?)"));
  CHECK_THAT(error(R"(, "interface": {"reads": ["cuont"]})"),
             Contains("unknown variable `cuont` (did you mean `count`?)"));
}

TEST_CASE("JSON: a refused document's top-level member is read when the text is JSON",
          "[kernel][json]") {
  // For `clampai mcp` (issue 35): a message refused for a duplicate key or a number beyond
  // range is answered with its id.
  using jsonio::find_top_level_member;
  using jsonio::JsonNode;
  const auto id = find_top_level_member(R"({"a":1e400,"b":{"id":3,"id":4},"id":"x","c":1})", "id");
  REQUIRE(id.is_json);
  REQUIRE(id.value);
  CHECK(id.value->kind == JsonNode::Kind::string);
  CHECK(id.value->text == "x");
  const auto n = find_top_level_member(R"({"id":12,"x":[1e999,-1e999,1e400]})", "id");
  REQUIRE(n.value);
  CHECK((n.value->kind == JsonNode::Kind::number && n.value->integral && n.value->text == "12"));
  // A number beyond range reads as 0.0, never as an integer.
  const auto big = find_top_level_member(R"({"id":1e400})", "id");
  REQUIRE(big.value);
  CHECK((big.value->text == "0.0" && !big.value->integral));
  // JSON, but no single scalar member to read.
  for (const char* text :
       {R"({"id":1,"id":2})", R"({"id":[1]})", R"({"x":1})", R"([{"id":1}])", R"("id")"}) {
    CAPTURE(text);
    const auto m = find_top_level_member(text, "id");
    CHECK(m.is_json);
    CHECK_FALSE(m.value);
  }
  // Not JSON.
  for (const char* text :
       {R"({"id":1)", R"({"id":1} x)", R"({"id":1,"a":1e400,})", "", R"({"id":1,"a":1e400)"}) {
    CAPTURE(text);
    const auto m = find_top_level_member(text, "id");
    CHECK_FALSE(m.is_json);
    CHECK_FALSE(m.value);
  }
  // More numbers beyond range than it reads again for: given up, not read.
  std::string many = R"({"a":[)";
  for (int i = 0; i < 20; ++i) many += "1e400,";
  many += R"(1],"id":1})";
  CHECK_FALSE(find_top_level_member(many, "id").is_json);
}

TEST_CASE("JSON: the ASCII escaper writes what Python's json.dumps writes", "[kernel][json]") {
  using jsonio::append_json_string_ascii;
  std::string out = "x";
  // Short escapes, other controls and DEL as \u00XX, BMP characters as one unit, others as a
  // surrogate pair (Python's default, ensure_ascii).
  REQUIRE(append_json_string_ascii(out, "a\"\\\n\x01\x7f\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80~"));
  CHECK(out == R"(x"a\"\\\n\u0001\u007f\u00e9\u4e2d\ud83d\ude00~")");
  // Not UTF-8 (a lone continuation byte, a truncated sequence, an encoded surrogate): refused,
  // nothing written.
  for (const std::string bad : {"\x80", "a\xE4\xB8", "\xED\xA0\x80"}) {
    std::string kept = "x";
    CHECK_FALSE(append_json_string_ascii(kept, bad));
    CHECK(kept == "x");
  }
}
