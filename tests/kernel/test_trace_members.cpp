// The trace's optional members (principal, enforced, pools, ticket, signature) and the kinds
// that change nothing (checkpoint, approvals): written only when they say something, read back,
// covered by the hash, kept by every replay.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace clampai::kernel;

namespace {

const char* kSpec =
    R"J({"variables": {"n": {"type": "int", "initial": 0}},
  "actions": [{"id": "inc", "cost": 1, "reversible": true,
               "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
              {"id": "big", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 50}]}],
  "invariants": [{"name": "small", "check": "n <= 10"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A run with a principal on every proposal, notes, a checkpoint and a signed seal.
std::string run_with_members(const std::string& name) {
  const std::string path = clampai::test::temp_file(name);
  KernelOptions options;
  options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
  options.record_rejections = true;
  options.signer = [](std::string_view bytes) {
    return "sig-" + sha256_hex(std::string(bytes)).substr(0, 16);
  };
  SafetyKernel k(load_spec(kSpec), options);
  auto proposal = [&](const char* action) {
    Proposal p = std::get<Proposal>(k.resolve(action, {}));
    p.principal = "ci \"bot\"";
    return p;
  };
  REQUIRE(k.execute(proposal("inc")).receipt);
  REQUIRE_FALSE(k.execute(proposal("big")).decision.approved);  // a recorded rejection
  TraceEntry asked;
  asked.kind = EntryKind::approval_requested;
  asked.action = "inc";
  asked.principal = "ci \"bot\"";
  asked.ticket = "t-1";
  k.record_note(asked);
  TraceEntry granted = asked;
  granted.kind = EntryKind::approval_granted;
  granted.principal = "ops";
  k.record_note(granted);
  const Outcome o = k.execute(proposal("inc"));
  REQUIRE(o.receipt);
  TraceEntry checkpoint;
  checkpoint.kind = EntryKind::checkpoint;
  const TraceEntry kept = k.record_note(checkpoint);
  REQUIRE(kept.signature.rfind("sig-", 0) == 0);
  k.rollback(*o.receipt);
  k.execute("inc");  // no principal: the compact record
  k.seal();
  return path;
}

}  // namespace

TEST_CASE("Trace members: written only when set, canonical, covered by the hash, replayed",
          "[kernel][trace]") {
  const std::string path = run_with_members("members.jsonl");
  const std::vector<std::string> lines = lines_of(path);
  REQUIRE(lines.size() == 10);
  for (const std::string& line : lines) REQUIRE(nlohmann::json::parse(line).dump() == line);
  auto json = [&](std::size_t i) { return nlohmann::json::parse(lines[i]); };
  CHECK(json(0).size() == 18);  // the genesis: no optional member
  CHECK(json(1)["principal"] == "ci \"bot\"");
  CHECK(json(1)["kind"] == "executed");
  CHECK(json(2)["principal"] == "ci \"bot\"");
  CHECK(json(2)["kind"] == "rejected");
  CHECK(json(3)["kind"] == "approval_requested");
  CHECK(json(3)["ticket"] == "t-1");
  CHECK(json(4)["kind"] == "approval_granted");
  CHECK(json(4)["principal"] == "ops");
  CHECK(json(6)["kind"] == "checkpoint");
  CHECK(json(6).contains("signature"));
  CHECK(json(8).size() == 18);  // executed without a principal
  CHECK_FALSE(json(8).contains("principal"));
  CHECK(json(9)["kind"] == "sealed");
  // The signature signs the entry without `hash` and `signature`.
  const std::vector<TraceEntry> entries = read_trace_file(path);
  CHECK(entries[9].signature == "sig-" + sha256_hex(entries[9].signed_bytes()).substr(0, 16));
  CHECK(entries[1].principal == "ci \"bot\"");

  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  REQUIRE(check.sealed);
  REQUIRE_FALSE(replay_trace(load_spec(kSpec), entries).has_value());

  // Every optional member is covered by the hash.
  for (auto [i, key] : std::vector<std::pair<std::size_t, std::string>>{
           {1, "principal"}, {3, "ticket"}, {6, "signature"}}) {
    std::vector<TraceEntry> changed = entries;
    if (key == "principal") changed[i].principal = "someone else";
    if (key == "ticket") changed[i].ticket = "t-2";
    if (key == "signature") changed[i].signature = "forged";
    const TraceCheck c = verify_chain(changed);
    INFO(key);
    REQUIRE_FALSE(c.ok);
    REQUIRE(c.first_bad == i);
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace members: a trace with them is continued byte for byte", "[kernel][trace]") {
  const std::string path = run_with_members("members-resume.jsonl");
  std::vector<TraceEntry> entries = read_trace_file(path);
  entries.pop_back();  // unsealed: continue it
  KernelOptions options;
  options.resume = entries;
  options.signer = [](std::string_view) -> std::string {
    throw clampai::InvalidArgument("a resume must not sign again");
  };
  SafetyKernel k(load_spec(kSpec), options);
  REQUIRE(k.trace().size() == entries.size());
  REQUIRE(k.trace().back().hash == entries.back().hash);
  REQUIRE(k.state().get("n") == Value::integer(2));
  std::remove(path.c_str());
}

TEST_CASE("Trace members: malformed optional members are named", "[kernel][trace]") {
  const std::string path = clampai::test::temp_file("members-bad.jsonl");
  const std::vector<std::string> lines = lines_of(run_with_members("members-src.jsonl"));
  auto rewrite = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = nlohmann::json::parse(lines[1]);
    change(j);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << lines[0] << "\n" << j.dump() << "\n";
  };
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases{
      {[](nlohmann::json& j) { j["principal"] = ""; }, "`principal` is empty"},
      {[](nlohmann::json& j) { j["enforced"] = true; }, "`enforced` is true"},
      {[](nlohmann::json& j) { j["pools"] = nlohmann::json::object(); }, "`pools` is empty"},
      {[](nlohmann::json& j) {
         j["pools"] = {{"org", {{"gross", "1"}}}};
       },
       "pool `org` must be an object with exactly `gross` and `net`"},
      {[](nlohmann::json& j) { j["extra"] = 1; }, "unexpected members"},
      {[](nlohmann::json& j) { j["kind"] = "approval_maybe"; }, "unknown entry kind"},
  };
  for (const auto& [change, message] : cases) {
    rewrite(change);
    INFO(message);
    REQUIRE_THROWS_WITH(read_trace_file(path), Catch::Matchers::Contains(message));
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace members: pools and shadow entries read back as written", "[kernel][trace]") {
  TraceEntry e;
  e.kind = EntryKind::executed;
  e.action = "inc";
  e.cost = "1";
  e.gross = "1";
  e.net = "1";
  e.prev = std::string(64, '0');
  e.enforced = false;
  e.pools = {{"team-a", "1", "1"}, {"org", "3", "2"}};
  e.hash = e.compute_hash();
  const std::string line = e.to_json_line();
  CHECK(line.find(R"("emergency_steps":0,"enforced":false,"gross")") != std::string::npos);
  CHECK(line.find(R"("pools":{"org":{"gross":"3","net":"2"},"team-a")") != std::string::npos);
  REQUIRE(nlohmann::json::parse(line).dump() == line);
  const std::string path = clampai::test::temp_file("members-pools.jsonl");
  std::ofstream(path, std::ios::binary) << line << "\n";
  const TraceEntry back = read_trace_file(path).front();
  CHECK_FALSE(back.enforced);
  REQUIRE(back.pools.size() == 2);
  CHECK(back.pools[0] == PoolLevel{"org", "3", "2"});
  CHECK(back.hash == e.hash);
  CHECK(back.to_json_line() == line);
  std::remove(path.c_str());
}
