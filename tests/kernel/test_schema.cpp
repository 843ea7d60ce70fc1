// The JSON Schema in schema/ agrees with the spec loader on examples, valid forms and broken specs.

// GCC 12 at -O3 reports a false -Wrestrict inside std::string code that valijson inlines (GCC
// bug 105329); the pragma must precede every include to cover those inlined headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/spec_loader.hpp"

namespace {

using nlohmann::json;

const std::string kSchemaPath = CLAMPAI_SOURCE_DIR "/schema/task-spec.schema.json";
const std::string kExamplesDir = CLAMPAI_SOURCE_DIR "/examples";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The schema, parsed once; valijson keeps pointers into it, so it lives as long as the test run.
const valijson::Schema& task_schema() {
  static const std::unique_ptr<valijson::Schema> schema = [] {
    auto s = std::make_unique<valijson::Schema>();
    const json doc = json::parse(read_file(kSchemaPath));
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    const valijson::adapters::NlohmannJsonAdapter adapter(doc);
    parser.populateSchema(adapter, *s);
    return s;
  }();
  return *schema;
}

// Validates `text` against the schema; the errors, one a line, go to `errors`.
bool schema_accepts(const std::string& text, std::string& errors) {
  const json doc = json::parse(text);
  const valijson::adapters::NlohmannJsonAdapter adapter(doc);
  valijson::Validator validator;
  valijson::ValidationResults results;
  const bool ok = validator.validate(task_schema(), adapter, &results);
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string where;
    for (const auto& part : error.context) where += part;
    errors += where + ": " + error.description + "\n";
  }
  return ok;
}

bool schema_accepts(const std::string& text) {
  std::string ignored;
  return schema_accepts(text, ignored);
}

// A small spec that both the schema and the loader accept; the broken specs below change one thing.
json valid_spec() {
  return json::parse(R"({
    "$schema": "../schema/task-spec.schema.json",
    "name": "tiny",
    "goal": "done",
    "variables": {
      "done": { "type": "bool", "initial": false },
      "count": { "type": "int", "initial": 0, "min": 0 }
    },
    "actions": [
      {
        "id": "finish",
        "cost": 1,
        "requires": "!done",
        "effects": [
          { "variable": "done", "mode": "set", "value": true },
          { "variable": "count", "mode": "increment", "value": 1 }
        ]
      }
    ],
    "budget": { "total": 10, "min_action_cost": 1 }
  })");
}

struct Broken {
  const char* what;
  json spec;
  const char* loader_message;  // a substring of the loader's error
};

std::vector<Broken> broken_specs() {
  std::vector<Broken> cases;
  {
    json s = valid_spec();
    s["variabels"] = json::object();
    cases.push_back({"an unknown top-level key", s, "variabels: unknown key `variabels`"});
  }
  {
    json s = valid_spec();
    s["actions"][0]["effects"][1]["mode"] = "add";
    cases.push_back(
        {"an unknown effect mode", s, "actions[0].effects[1].mode: unknown mode `add`"});
  }
  {
    json s = valid_spec();
    s.erase("budget");
    cases.push_back({"a missing budget", s, "missing `budget`"});
  }
  {
    json s = valid_spec();
    s["actions"][0].erase("id");
    cases.push_back({"an action without id", s, "actions[0]: missing `id`"});
  }
  {
    json s = valid_spec();
    s["actions"][0]["cost"] = true;
    cases.push_back({"a cost of the wrong JSON type",
                     s,
                     "actions[0].cost: expected a number or an expression, found a bool"});
  }
  {
    json s = valid_spec();
    s["variables"]["count"]["type"] = "float";
    cases.push_back({"an unknown variable type", s, "variables.count.type: unknown type `float`"});
  }
  {
    json s = valid_spec();
    s["variables"]["price"] = {{"type", "decimal"}, {"initial", "1.50"}};
    cases.push_back(
        {"a decimal without scale", s, "variables.price.scale: a decimal needs a `scale`"});
  }
  {
    json s = valid_spec();
    s["invariants"] =
        json::array({{{"name", "small"}, {"check", "count < 5"}, {"enforcement", "strict"}}});
    cases.push_back(
        {"an unknown enforcement", s, "invariants[0].enforcement: unknown enforcement `strict`"});
  }
  {
    json s = valid_spec();
    s["budget"]["total"] = "ten";
    cases.push_back(
        {"a budget total that is not a number", s, "budget.total: `ten`: not a number"});
  }
  {
    json s = valid_spec();
    s["variables"]["count"].erase("initial");
    cases.push_back({"a variable without initial value", s, "variables.count: missing `initial`"});
  }
  return cases;
}

}  // namespace

TEST_CASE("Schema: the schema itself parses as a draft-07 schema", "[kernel][schema]") {
  const json doc = json::parse(read_file(kSchemaPath));
  CHECK(doc.at("$schema") == "http://json-schema.org/draft-07/schema#");
  CHECK(doc.at("$id") == "https://clampai.dev/schema/task-spec.schema.json");
  CHECK(doc.at("title").is_string());
  CHECK(doc.at("additionalProperties") == false);
  REQUIRE_NOTHROW(task_schema());
}

TEST_CASE("Schema: every example validates", "[kernel][schema]") {
  std::size_t examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kExamplesDir)) {
    if (entry.path().extension() != ".json") continue;
    ++examples;
    const std::string text = read_file(entry.path().string());
    std::string errors;
    const bool ok = schema_accepts(text, errors);
    INFO(entry.path().filename().string() << "\n" << errors);
    CHECK(ok);
    CHECK_NOTHROW(clampai::kernel::load_spec(text));
  }
  CHECK(examples >= 3);
}

TEST_CASE("Schema: the optional forms the loader accepts validate", "[kernel][schema]") {
  const std::string text = R"spec({
    "name": "forms",
    "description": 42,
    "goal": { "description": "all done", "check": "n >= 2 && !defined(note)" },
    "variables": {
      "n": { "type": "int", "initial": "0", "max": 10, "description": { "any": "value" } },
      "price": { "type": "decimal", "scale": 2, "initial": "0.5", "min": "-1e2" },
      "note": { "type": "string", "optional": true },
      "tags": { "type": "list", "element": { "type": "enum", "values": ["a", "b"] }, "initial": ["a"], "max_length": 4 },
      "amounts": { "type": "list", "element": { "type": "decimal", "scale": 1 }, "initial": [1, "2.5"] },
      "flags": { "type": "list", "element": "bool", "initial": [true] },
      "state": { "type": "enum", "values": ["idle", "busy"], "initial": "idle", "scale": "ignored for enums" }
    },
    "actions": [
      {
        "id": "step",
        "name": "Step",
        "cost": "0.5 * k",
        "reversible": false,
        "parameters": { "k": { "type": "int", "min": 1, "max": 3, "default": 2, "description": 7 } },
        "requires": "state == 'idle'",
        "effects": [
          { "variable": "n", "mode": "increment", "value": "k" },
          { "variable": "tags", "mode": "append", "value": "'b'" },
          { "variable": "amounts", "mode": "set", "value": [1, 2.5] },
          { "variable": "price", "mode": "multiply", "value": 2 }
        ]
      },
      {
        "id": "tidy",
        "cost": "0.25",
        "parameters": { "x": { "type": "decimal", "scale": 2, "default": "0.10" } },
        "effects": [ { "variable": "note", "mode": "delete" }, { "variable": "tags", "mode": "remove", "value": "'a'" } ]
      },
      { "id": "halt", "cost": 0, "effects": [ { "variable": "state", "mode": "set", "value": "'busy'" } ] }
    ],
    "invariants": [
      { "name": "bounded", "check": "n <= 10", "suggestion": "stop earlier" },
      { "name": "monotone", "check": "n >= old(n)", "enforcement": "monitoring", "description": "n only grows" }
    ],
    "budget": { "total": "20", "min_action_cost": 0.25, "scale": 2, "max_steps": 40 },
    "emergency_actions": ["halt"],
    "dependencies": { "tidy": ["step"] }
  })spec";
  REQUIRE_NOTHROW(clampai::kernel::load_spec(text));
  std::string errors;
  const bool ok = schema_accepts(text, errors);
  INFO(errors);
  CHECK(ok);
}

TEST_CASE("Schema: broken specs are rejected by the schema and by the loader", "[kernel][schema]") {
  REQUIRE(schema_accepts(valid_spec().dump()));
  REQUIRE_NOTHROW(clampai::kernel::load_spec(valid_spec().dump()));
  for (const Broken& b : broken_specs()) {
    SECTION(b.what) {
      const std::string text = b.spec.dump(2);
      CHECK_FALSE(schema_accepts(text));
      CHECK_THROWS_AS(clampai::kernel::load_spec(text), clampai::SpecError);
      CHECK_THROWS_WITH(clampai::kernel::load_spec(text),
                        Catch::Matchers::Contains(b.loader_message));
    }
  }
}

TEST_CASE("Schema: a delete effect takes no value and every other mode needs one",
          "[kernel][schema]") {
  json s = valid_spec();
  s["variables"]["note"] = {{"type", "string"}, {"optional", true}};
  s["actions"][0]["effects"].push_back({{"variable", "note"}, {"mode", "delete"}});
  REQUIRE(schema_accepts(s.dump()));
  REQUIRE_NOTHROW(clampai::kernel::load_spec(s.dump()));

  SECTION("delete with a value") {
    s["actions"][0]["effects"][2]["value"] = "'x'";
    CHECK_FALSE(schema_accepts(s.dump()));
    CHECK_THROWS_WITH(clampai::kernel::load_spec(s.dump()),
                      Catch::Matchers::Contains("`delete` takes no value"));
  }
  SECTION("set without a value") {
    s["actions"][0]["effects"][0].erase("value");
    CHECK_FALSE(schema_accepts(s.dump()));
    CHECK_THROWS_WITH(clampai::kernel::load_spec(s.dump()),
                      Catch::Matchers::Contains("missing value for `set`"));
  }
}

TEST_CASE("Schema: the reference monitor's declarations and the templates validate",
          "[kernel][schema]") {
  const std::string text = R"spec({
    "goal": { "check": "done", "attestations": ["human"] },
    "variables": {
      "done": { "type": "bool", "initial": false },
      "ssn": { "type": "string", "initial": "", "label": "PII" },
      "spent": { "type": "int", "initial": 0 },
      "contacts": { "type": "list", "element": "string", "initial": [], "label": "INTERNAL", "element_label": "PII" }
    },
    "sinks": { "vault": { "label": "PII", "description": "encrypted" } },
    "attestors": {
      "human": { "external": true },
      "exists": { "command": ["/usr/bin/test", "-e", "{ssn}"], "timeout_ms": 500, "max_output_bytes": 100 },
      "health": { "http": { "url": "https://example.org/health", "method": "GET", "expect_status": 200, "expect_body_contains": "ok" } },
      "both": { "all": ["human", "exists"] },
      "some": { "quorum": 1, "of": ["human", "health"] }
    },
    "actions": [
      { "id": "finish", "cost": 1, "attestations": ["both", "some"],
        "emits": [ { "sink": "vault", "value": "ssn" } ],
        "effects": [ { "variable": "done", "mode": "set", "value": true } ] }
    ],
    "invariants": [
      { "name": "cap", "template": "value_range", "variable": "spent", "min": 0, "max": 10 },
      { "name": "grows", "template": "monotone", "variable": "spent", "direction": "increasing", "strict": false },
      { "name": "few", "template": "list_length", "variable": "contacts", "max": 3, "enforcement": "monitoring" },
      { "name": "unique", "template": "no_duplicate_ids", "variable": "contacts" }
    ],
    "budget": { "total": 10, "min_action_cost": 1 }
  })spec";
  REQUIRE_NOTHROW(clampai::kernel::load_spec(text));
  std::string errors;
  const bool ok = schema_accepts(text, errors);
  INFO(errors);
  CHECK(ok);
  // The schema refuses what the loader refuses: two kinds in one attestor, an unknown label.
  json two = json::parse(text);
  two["attestors"]["human"]["all"] = json::array({"exists"});
  CHECK_FALSE(schema_accepts(two.dump()));
  CHECK_THROWS_WITH(clampai::kernel::load_spec(two.dump()),
                    Catch::Matchers::Contains("attestors.human: an attestor is exactly one of"));
  json label = json::parse(text);
  label["variables"]["ssn"]["label"] = "TOP_SECRET";
  CHECK_FALSE(schema_accepts(label.dump()));
  CHECK_THROWS_WITH(clampai::kernel::load_spec(label.dump()),
                    Catch::Matchers::Contains("variables.ssn.label: unknown label `TOP_SECRET`"));
}
