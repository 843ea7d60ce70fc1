// The trace (T6): canonical entries, hash chain, JSON Lines persistence, tamper detection.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

using namespace clampai::kernel;

namespace {

const char* kSpec =
    R"J({"variables": {"n": {"type": "int", "initial": 0}, "d": {"type": "decimal", "scale": 2, "initial": "0.50"},
  "s": {"type": "string", "initial": "a\"b\\c\u0001\u00e9"}},
  "actions": [{"id": "inc", "cost": 1, "parameters": {"k": {"type": "decimal", "scale": 1, "min": 0, "max": 9, "default": "1.5"}},
               "effects": [{"variable": "n", "mode": "increment", "value": 1}, {"variable": "d", "mode": "increment", "value": "k"}]},
              {"id": "rename", "cost": 1, "effects": [{"variable": "s", "mode": "set", "value": "'tab\there'"}]}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

std::string temp_path(const std::string& name) { return clampai::test::temp_file(name); }

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

std::string run_to_file(FlushPolicy policy, int steps = 4) {
  const std::string path = temp_path("trace.jsonl");
  KernelOptions options;
  options.writer = std::make_shared<TraceWriter>(path, policy);
  options.record_rejections = true;
  SafetyKernel k(load_spec(kSpec), options);
  for (int i = 0; i < steps; ++i) k.execute("inc");
  k.execute("rename");
  k.execute("nope");
  const Outcome o = k.execute("inc", {{"k", Value::integer(2)}});
  k.rollback(*o.receipt);
  k.seal();
  return path;
}

}  // namespace

TEST_CASE("Trace: every flush policy writes a trace that verifies and replays", "[kernel][trace]") {
  for (FlushPolicy policy : {FlushPolicy::buffered, FlushPolicy::flush, FlushPolicy::fsync}) {
    const std::string path = run_to_file(policy);
    const TraceCheck check = verify_trace_file(path);
    INFO(check.message);
    REQUIRE(check.ok);
    REQUIRE(check.sealed);
    REQUIRE(check.entries == 10);
    REQUIRE_FALSE(replay_trace(load_spec(kSpec), read_trace_file(path)).has_value());
    std::remove(path.c_str());
  }
}

TEST_CASE("Trace: lines are RFC 8785 canonical JSON, as an independent serializer writes them",
          "[kernel][trace]") {
  const std::string path = run_to_file(FlushPolicy::buffered);
  for (const std::string& line : lines_of(path)) {
    // nlohmann::json sorts keys and escapes control characters as RFC 8785 does.
    REQUIRE(nlohmann::json::parse(line).dump() == line);
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace: a changed entry is reported with its index", "[kernel][trace]") {
  const std::string path = run_to_file(FlushPolicy::buffered);
  auto lines = lines_of(path);
  const std::string original = lines[3];
  lines[3].replace(lines[3].find("\"inc\""), 5, "\"dec\"");
  write_lines(path, lines);
  TraceCheck c = verify_trace_file(path);
  REQUIRE_FALSE(c.ok);
  REQUIRE(c.first_bad == std::size_t{3});
  REQUIRE_THAT(c.message, Catch::Matchers::Contains("hash mismatch"));

  // Recomputing the entry's own hash does not help: the next entry no longer links to it.
  auto j = nlohmann::json::parse(original);
  j["cost"] = "0.000";
  auto entries = read_trace_file(run_to_file(FlushPolicy::buffered));
  entries[3].cost = "0.000";
  entries[3].hash = entries[3].compute_hash();
  const TraceCheck relinked = verify_chain(entries);
  REQUIRE_FALSE(relinked.ok);
  REQUIRE(relinked.first_bad == std::size_t{4});
  std::remove(path.c_str());
}

TEST_CASE("Trace: on a long trace (hashes checked in parallel) the first bad entry is reported",
          "[kernel][trace]") {
  SafetyKernel k(load_spec(kSpec));
  for (int i = 0; i < 60; ++i) REQUIRE(k.execute("inc").decision.approved);
  std::vector<TraceEntry> entries = k.trace();
  // A long chain (copies relinked and renumbered): 2,001 entries, hashed two at a time in
  // pieces of 256, so the last piece's last entry is hashed alone.
  while (entries.size() < 2001) {
    TraceEntry e = entries[1 + entries.size() % 60];
    e.sequence = entries.size();
    e.prev = entries.back().hash;
    e.hash = e.compute_hash();
    entries.push_back(std::move(e));
  }
  REQUIRE(verify_chain(entries, true).ok);
  for (std::size_t bad : {2000UL, 1999UL, 1500UL, 777UL, 1UL}) {  // each earlier than the last
    entries[bad].cost = "9.999";
    const TraceCheck c = verify_chain(entries, true);
    REQUIRE_FALSE(c.ok);
    CHECK(c.first_bad == bad);
    CHECK_THAT(c.message, Catch::Matchers::Contains("hash mismatch"));
  }
}

TEST_CASE("Trace: deleted, reordered and truncated entries are detected", "[kernel][trace]") {
  const std::string path = run_to_file(FlushPolicy::buffered);
  const auto lines = lines_of(path);

  auto deleted = lines;
  deleted.erase(deleted.begin() + 2);
  write_lines(path, deleted);
  REQUIRE(verify_trace_file(path).first_bad == std::size_t{2});

  auto reordered = lines;
  std::swap(reordered[4], reordered[5]);
  write_lines(path, reordered);
  REQUIRE(verify_trace_file(path).first_bad == std::size_t{4});

  auto truncated = lines;
  truncated.pop_back();  // the seal
  write_lines(path, truncated);
  TraceCheck c = verify_trace_file(path);
  REQUIRE_FALSE(c.ok);
  REQUIRE_THAT(c.message, Catch::Matchers::Contains("without a seal"));
  REQUIRE(verify_trace_file(path, /*allow_unsealed=*/true).ok);

  write_lines(path, {});
  REQUIRE_FALSE(verify_trace_file(path).ok);
  std::remove(path.c_str());
}

TEST_CASE("Trace: a trace replayed against another spec is refused", "[kernel][trace]") {
  const std::string path = run_to_file(FlushPolicy::buffered);
  std::string other = kSpec;
  other.replace(other.find("\"total\": 100"), 12, "\"total\": 101");
  const auto mismatch = replay_trace(load_spec(other), read_trace_file(path));
  REQUIRE(mismatch.has_value());
  REQUIRE(mismatch->first == 0);
  REQUIRE_THAT(mismatch->second, Catch::Matchers::Contains("another spec"));
  std::remove(path.c_str());
}

TEST_CASE("Trace: unreadable files and non-trace lines are errors naming the line",
          "[kernel][trace]") {
  REQUIRE_THROWS_AS(verify_trace_file("/nonexistent/trace.jsonl"), clampai::TraceError);
  const std::string path = temp_path("bad.jsonl");
  write_lines(path, {"{\"not\": \"an entry\"}"});
  REQUIRE_THROWS_WITH(read_trace_file(path), Catch::Matchers::Contains("line 1"));
  const TraceCheck c = verify_trace_file(path);
  REQUIRE_FALSE(c.ok);
  REQUIRE(c.first_bad == std::size_t{0});
  std::remove(path.c_str());
}
