// The trace file's direct reader: a canonical line is read without a JSON tree and hashed as
// read; it must give exactly the entry the general JSON path gives, and anything it does not
// take (unusual characters, a changed line) goes to the general path with its diagnostics.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "support.hpp"

using namespace clampai::kernel;
using clampai::test::lines_of;
using clampai::test::write_lines;

TEST_CASE("Trace reader: canonical lines read directly give the entries they are the form of",
          "[kernel][trace]") {
  // Escapes (quote, backslash, newline, a control character) and non-ASCII text in messages,
  // decimals, lists, parameters, rejections and a rollback.
  const auto model = load_spec(R"J({"variables": {
      "n": {"type": "int", "initial": 0, "min": 0, "max": 30},
      "cash": {"type": "decimal", "scale": 2, "initial": 10},
      "log": {"type": "list", "element": "int", "initial": []}},
    "actions": [
      {"id": "add", "cost": 1, "reversible": true, "parameters": {"k": {"type": "int", "min": 0, "max": 9, "default": 1}},
       "effects": [{"variable": "n", "mode": "increment", "value": "k"},
                   {"variable": "log", "mode": "append", "value": "k"},
                   {"variable": "cash", "mode": "decrement", "value": 0.25}]}],
    "invariants": [{"name": "cap", "check": "n <= 8",
                    "description": "say \"no\" \\ twice\nthen\u0001stop: caf\u00e9"}],
    "budget": {"total": 100, "min_action_cost": 1}})J");
  const std::string path = clampai::test::temp_file("reader.jsonl");
  {
    KernelOptions options = clampai::test::fixed_clock();
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
    options.record_rejections = true;
    SafetyKernel kernel(model, options);
    for (int i = 0; i < 12; ++i) {
      const Outcome o = kernel.execute("add", {{"k", Value::integer(i % 4)}});
      if (i == 3 && o.receipt) (void)kernel.rollback(*o.receipt);
    }
    kernel.seal();
  }
  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  REQUIRE(check.entries > 12);

  const std::vector<std::string> lines = lines_of(path);
  const std::vector<TraceEntry> entries = read_trace_file(path);
  REQUIRE(entries.size() == lines.size());
  bool saw_rejection = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i]);
    REQUIRE(entries[i].to_json_line() == lines[i]);  // exactly the entry the line is the form of
    REQUIRE(entries[i].compute_hash() == entries[i].hash);
    saw_rejection = saw_rejection || !entries[i].reasons.empty();
  }
  REQUIRE(saw_rejection);
  REQUIRE_FALSE(replay_trace(model, entries).has_value());

  SECTION("a line with a space added is not canonical, reported at its entry") {
    std::vector<std::string> changed = lines;
    changed[5].insert(changed[5].find(",\"cost\""), " ");
    write_lines(path, changed);
    const TraceCheck c = verify_trace_file(path);
    REQUIRE_FALSE(c.ok);
    REQUIRE(c.first_bad == 5);
    REQUIRE_THAT(c.message, Catch::Contains("not in canonical form"));
  }
  SECTION("a changed value breaks the hash of its entry") {
    std::vector<std::string> changed = lines;
    const std::size_t at = changed[4].find("\"time\":") + 7;
    changed[4][at] = changed[4][at] == '1' ? '2' : '1';
    write_lines(path, changed);
    const TraceCheck c = verify_trace_file(path);
    REQUIRE_FALSE(c.ok);
    REQUIRE(c.first_bad == 4);
    REQUIRE_THAT(c.message, Catch::Contains("hash mismatch"));
  }
  SECTION("keys out of order are not canonical") {
    std::vector<std::string> changed = lines;
    std::string& l = changed[2];
    const std::size_t cost = l.find("\"cost\":");
    const std::size_t emergency = l.find(",\"emergency\":");
    // Swap `"cost":...` and `"emergency":...` (same bytes, other order).
    const std::string cost_member = l.substr(cost, emergency - cost);
    const std::size_t after = l.find(',', emergency + 1);
    const std::string emergency_member = l.substr(emergency + 1, after - emergency - 1);
    l.replace(cost, after - cost, emergency_member + "," + cost_member);
    write_lines(path, changed);
    const TraceCheck c = verify_trace_file(path);
    REQUIRE_FALSE(c.ok);
    REQUIRE(c.first_bad == 2);
  }
  SECTION("an escape written another way (\\u0022 for a quote) is not canonical") {
    std::vector<std::string> changed = lines;
    bool replaced = false;
    for (std::size_t i = 0; i < changed.size() && !replaced; ++i) {
      const std::size_t q = changed[i].find("\\\"no\\\"");
      if (q == std::string::npos) continue;
      changed[i].replace(q, 2, "\\u0022");
      write_lines(path, changed);
      const TraceCheck c = verify_trace_file(path);
      REQUIRE_FALSE(c.ok);
      REQUIRE(c.first_bad == i);
      REQUIRE_THAT(c.message, Catch::Contains("not in canonical form"));
      replaced = true;
    }
    REQUIRE(replaced);
  }
  std::remove(path.c_str());
}
