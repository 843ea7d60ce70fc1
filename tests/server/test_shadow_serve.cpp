// Shadow mode of `clampai serve` (issue 40): a task decides and records every execute but
// blocks none; `shadow` is what the enforcing server answers on the same calls, until their
// states part; the trace replays; would-be rejections reach /metrics and the decision log;
// refused on a shared ledger and for a budget in a pool.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../kernel/support.hpp"
#include "clampai/kernel.hpp"
#include "clampai/server.hpp"

namespace cs = clampai::server;
namespace ck = clampai::kernel;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kSpec = R"J({"name": "acct",
  "variables": {"balance": {"type": "int", "initial": 10, "min": -1000},
                "sent": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "send", "parameters": {"amount": {"type": "int", "min": 1, "max": 8, "default": 1}},
     "cost": 1, "reversible": true,
     "effects": [{"variable": "balance", "mode": "decrement", "value": "amount"},
                 {"variable": "sent", "mode": "increment", "value": "amount"}]},
    {"id": "refill", "cost": 2, "requires": "balance < 5",
     "effects": [{"variable": "balance", "mode": "increment", "value": 4}]},
    {"id": "audit", "cost": 1, "approval": {"ttl_s": 60},
     "effects": [{"variable": "sent", "mode": "set", "value": 0}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"},
                 {"name": "modest", "check": "sent <= 20", "enforcement": "monitoring"}],
  "budget": {"total": 25, "min_action_cost": 1}})J";

struct Server {
  std::unique_ptr<cs::Service> service;
  explicit Server(cs::ServiceOptions o) : service(std::make_unique<cs::Service>(std::move(o))) {
    service->add_task(kSpec, "acct.json");
  }
  cs::Response call(const std::string& method, const std::string& target, const std::string& body) {
    return service->handle({method, target, "", body});
  }
  json execute(const json& request) {
    const auto r = call("POST", "/v1/tasks/acct/execute", request.dump());
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
  json state() {
    json s = json::parse(call("GET", "/v1/tasks/acct/state", "").body);
    return json{{"state", s["state"]}, {"budget", s["budget"]}, {"steps", s["steps"]}};
  }
};

cs::ServiceOptions shadow_options(const std::string& data_dir = "", const std::string& log = "") {
  cs::ServiceOptions o;
  o.data_dir = data_dir;
  o.decision_log = log;
  o.shadow = {"acct"};
  return o;
}

json random_request(std::mt19937_64& rng) {
  static const char* kActions[] = {"send", "send", "send", "refill"};
  json r{{"action", kActions[rng() % 4]}};
  if (r["action"] == "send" && rng() % 3 != 0)
    r["params"] = {{"amount", static_cast<int>(rng() % 11)}};  // 0, 9, 10 out of bounds
  return r;
}

// The decision's members of an enforcing execute answer: what `shadow` must equal.
json decision_of(const json& answer) {
  json d;
  for (const char* k :
       {"task", "action", "approved", "cost", "emergency", "reasons", "warnings", "changes"})
    d[k] = answer.at(k);
  return d;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE(
    "Shadow serve: `shadow` equals the enforcing answer until the states part; nothing "
    "is blocked; the trace replays with its spec",
    "[server][shadow]") {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    INFO("seed " << seed);
    const std::string dir = clampai::test::temp_file("shadow-data");
    fs::create_directories(dir);
    std::mt19937_64 rng(seed);
    Server enforcing{cs::ServiceOptions{}};
    std::size_t compared = 0, followed = 0;
    {
      Server shadow{shadow_options(dir)};
      bool parted = false;
      for (int i = 0; i < 60; ++i) {
        const json request = random_request(rng);
        INFO("call " << i << ": " << request.dump());
        const json s = shadow.execute(request);
        CHECK(s["approved"] == true);  // never blocked
        CHECK(s["enforced"] == false);
        CHECK(s["reasons"].empty());
        REQUIRE(s.contains("shadow"));
        if (!parted) {
          const json e = enforcing.execute(request);
          REQUIRE(s["shadow"] == decision_of(e));
          ++compared;
          parted = shadow.state() != enforcing.state();
        }
        if (s["shadow"]["approved"] == false && s["executed"] == true) ++followed;
      }
      CHECK(compared > 0);
      CHECK(followed > 0);
      shadow.service->shutdown();  // seals the trace
    }
    // `clampai trace verify --spec`'s replay (a stream of the file through TraceReplay).
    ck::TraceReader reader(dir + "/acct.jsonl");
    ck::TraceReplay replay(ck::load_spec(kSpec));
    const ck::TraceCheck check = ck::replay_stream(reader, replay);
    CHECK(check.ok);
    if (!check.ok) FAIL_CHECK(check.message);
    // Every entry the shadow task wrote says it was not enforced.
    const std::vector<std::string> lines = lines_of(dir + "/acct.jsonl");
    for (std::size_t i = 1; i + 1 < lines.size(); ++i)
      CHECK(json::parse(lines[i]).at("enforced") == false);
    fs::remove_all(dir);
  }
}

TEST_CASE("Shadow serve: metrics, the decision log, approvals and restarts", "[server][shadow]") {
  const std::string dir = clampai::test::temp_file("shadow-data");
  fs::create_directories(dir);
  const std::string log = clampai::test::temp_file("decisions.jsonl");
  {
    Server s{shadow_options(dir, log)};
    // An action that waits for an approval in enforce mode is followed, `pending` in `shadow`.
    json a = s.execute({{"action", "audit"}});
    CHECK(a["executed"] == true);
    CHECK(a["shadow"]["pending"] == true);
    CHECK(a["shadow"]["approved"] == false);
    CHECK(a["shadow"]["reasons"].empty());
    // Overdrawn: a would-be rejection (`solvent`), followed.
    a = s.execute({{"action", "send"}, {"params", {{"amount", 8}}}});
    a = s.execute({{"action", "send"}, {"params", {{"amount", 8}}}});
    CHECK(a["executed"] == true);
    CHECK(a["shadow"]["approved"] == false);
    CHECK(a["shadow"]["reasons"][0]["code"] == "invariant_violated");
    CHECK(a["state"]["balance"] == -6);
    const std::string metrics = s.call("GET", "/metrics", "").body;
    CHECK(metrics.find("clampai_shadow_rejections_total{task=\"acct\",reason=\"invariant_"
                       "violated\"} 1\n") != std::string::npos);
    CHECK(metrics.find("clampai_decisions_total{task=\"acct\",endpoint=\"execute\",outcome="
                       "\"approved\"} 3\n") != std::string::npos);
    // Rolled back like any commit, and followed again.
    const auto r = s.call("POST", "/v1/tasks/acct/rollback", "{}");
    CHECK(r.status == 200);
    CHECK(s.state()["state"]["balance"] == 2);
    a = s.execute({{"action", "send"}, {"params", {{"amount", 8}}}});
    CHECK(a["state"]["balance"] == -6);
  }
  const std::vector<std::string> lines = lines_of(log);
  REQUIRE(lines.size() == 4);
  CHECK(json::parse(lines[0])["outcome"] == "shadow_pending");
  CHECK(json::parse(lines[1])["outcome"] == "shadow_approved");
  CHECK(json::parse(lines[2])["outcome"] == "shadow_rejected");
  CHECK(json::parse(lines[2])["reasons"] == json::array({"invariant_violated"}));
  // A restart in enforce mode continues the trace (its unenforced entries replayed as such)
  // and enforces from then on: the state is overdrawn, so a send is rejected.
  {
    cs::ServiceOptions o;
    o.data_dir = dir;
    Server s{o};
    CHECK(s.state()["state"]["balance"] == -6);
    const json a = s.execute({{"action", "send"}});
    CHECK(a["approved"] == false);
    CHECK_FALSE(a.contains("enforced"));
  }
  fs::remove_all(dir);
  fs::remove(log);
}

TEST_CASE("Shadow serve: the decision log records a pending approval", "[server][shadow]") {
  const std::string log = clampai::test::temp_file("decisions.jsonl");
  {
    cs::ServiceOptions o;
    o.decision_log = log;
    Server s{o};
    const json a = s.execute({{"action", "audit"}});
    CHECK(a["pending"] == true);
  }
  const std::vector<std::string> lines = lines_of(log);
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0])["outcome"] == "pending");
  fs::remove(log);
}

TEST_CASE("Shadow serve: refused on a shared ledger and for a budget in a pool",
          "[server][shadow]") {
  cs::ServiceOptions o;
  o.ledger = "memory:";
  o.shadow_all = true;
  CHECK_THROWS_WITH(cs::Service(std::move(o)), Catch::Contains("cannot be used with --ledger"));
  cs::ServiceOptions p;
  p.shadow = {"acct"};
  p.ledger = "postgresql://nowhere.invalid/db";
  CHECK_THROWS_WITH(cs::Service(std::move(p)), Catch::Contains("shadow mode"));
  // A budget in a pool: the task is refused when it is added.
  cs::ServiceOptions q;
  q.shadow_all = true;
  q.pools = ck::PoolTree::build({ck::PoolDecl{"team", ck::Decimal::integer(100), ""}});
  cs::Service service(std::move(q));
  std::string pooled = kSpec;
  pooled.replace(pooled.find("\"total\": 25"), 11, "\"total\": 25, \"pool\": \"team\"");
  CHECK_THROWS_WITH(service.add_task(pooled, "acct.json"),
                    Catch::Contains("cannot run in shadow mode"));
  CHECK(service.task_names().empty());
}

TEST_CASE("Shadow MCP (`clampai mcp --shadow`): a call the kernel rejects is followed",
          "[server][shadow][mcp]") {
  for (const bool shadow : {true, false}) {
    INFO("shadow " << shadow);
    cs::McpSession m(ck::load_spec(kSpec), shadow);
    const auto call = [&](const std::string& tool, const json& args) {
      return json::parse(m.handle(json{{"jsonrpc", "2.0"},
                                       {"id", 1},
                                       {"method", "tools/call"},
                                       {"params", {{"name", tool}, {"arguments", args}}}}
                                      .dump()))["result"];
    };
    json r;
    if (shadow) {
      // An action that asks for an approval is followed: no ticket, `pending` in `shadow`.
      r = call("audit", json::object());
      CHECK(r["isError"] == false);
      CHECK_FALSE(r["structuredContent"].contains("ticket"));
      CHECK(r["structuredContent"]["shadow"]["pending"] == true);
      CHECK(r["structuredContent"]["state"]["sent"] == 0);
    }
    r = call("send", {{"amount", 8}});
    CHECK(r["isError"] == false);
    CHECK(r["structuredContent"].contains("enforced") == shadow);
    r = call("send", {{"amount", 8}});  // overdrawn: `solvent` rejects it
    if (!shadow) {                      // the control: rejected, nothing changed
      CHECK(r["isError"] == true);
      CHECK(call("status", json::object())["structuredContent"]["state"]["balance"] == 2);
      continue;
    }
    CHECK(r["isError"] == false);
    const json& s = r["structuredContent"];
    CHECK(s["approved"] == true);
    CHECK(s["enforced"] == false);
    CHECK(s["shadow"]["approved"] == false);
    CHECK(s["shadow"]["reasons"][0]["code"] == "invariant_violated");
    CHECK(s["state"]["balance"] == -6);
    CHECK(r["content"][0]["text"].get<std::string>().find("not enforced") != std::string::npos);
  }
}
