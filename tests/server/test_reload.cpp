// Reloads behind proofs (docs/SERVE.md, "Reloads"): PUT /v1/tasks/{task}/spec replaces a
// task's spec only if it is well-formed, verify refutes nothing and the current state satisfies
// the new blocking invariants; the trace records the change and a restart replays the trace
// across both specs, also after a crash at either side of the commit point.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "../kernel/support.hpp"
#include "clampai/kernel.hpp"
#include "clampai/server.hpp"

namespace cs = clampai::server;
namespace ck = clampai::kernel;
namespace fs = std::filesystem;
using clampai::test::temp_file;
using nlohmann::json;

namespace {

const char* kA = R"J({"name": "acct",
  "variables": {"balance": {"type": "int", "initial": 10}, "count": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "spend", "cost": 1, "reversible": true, "requires": "balance >= 3",
     "effects": [{"variable": "balance", "mode": "decrement", "value": 3},
                 {"variable": "count", "mode": "increment", "value": 1}]},
    {"id": "deposit", "cost": 1, "effects": [{"variable": "balance", "mode": "increment", "value": 5}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

// Well-formed, proved, and the state carries over: `count` dropped, `flag` added.
const char* kB = R"J({"name": "acct",
  "variables": {"balance": {"type": "int", "initial": 10}, "flag": {"type": "bool", "initial": false}},
  "actions": [
    {"id": "spend", "cost": 2, "requires": "balance >= 2",
     "effects": [{"variable": "balance", "mode": "decrement", "value": 2}]},
    {"id": "deposit", "cost": 1, "effects": [{"variable": "balance", "mode": "increment", "value": 5}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

// Not well-formed: its invariant names no variable.
const char* kBadSpec = R"J({"name": "acct",
  "variables": {"balance": {"type": "int", "initial": 10}},
  "actions": [{"id": "deposit", "cost": 1, "effects": [{"variable": "balance", "mode": "increment", "value": 5}]}],
  "invariants": [{"name": "solvent", "check": "balnce >= 0"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

// verify refutes `spend` preserving `solvent` (no guard).
const char* kRefuted = R"J({"name": "acct",
  "variables": {"balance": {"type": "int", "initial": 10}},
  "actions": [{"id": "spend", "cost": 1, "effects": [{"variable": "balance", "mode": "decrement", "value": 3}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

// Proved, but the current balance (10) breaks `rich`.
const char* kRich = R"J({"name": "acct",
  "variables": {"balance": {"type": "int", "initial": 100}},
  "actions": [{"id": "deposit", "cost": 1, "effects": [{"variable": "balance", "mode": "increment", "value": 5}]}],
  "invariants": [{"name": "rich", "check": "balance >= 100"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

struct Server {
  std::unique_ptr<cs::Service> service;
  explicit Server(const std::string& dir = "", std::function<void(std::string_view)> pause = {}) {
    cs::ServiceOptions o;
    o.data_dir = dir;
    o.pause = std::move(pause);
    service = std::make_unique<cs::Service>(std::move(o));
    if (dir.empty() || !fs::exists(fs::path(dir) / "acct.spec.json"))
      service->add_task(kA, "a.json");
  }
  cs::Response call(const std::string& method, const std::string& target, const std::string& body) {
    return service->handle({method, target, "", body});
  }
  json ok(const std::string& method, const std::string& target, const std::string& body = "") {
    const auto r = call(method, target, body);
    INFO(r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
  std::string digest() {
    return ok("GET", "/v1/tasks")["tasks"][0]["spec_digest"].get<std::string>();
  }
  json state() { return ok("GET", "/v1/tasks/acct/state")["state"]; }
  std::vector<json> trace() {
    auto r = call("GET", "/v1/tasks/acct/trace", "");
    std::string all, chunk;
    while (r.next_chunk && r.next_chunk(chunk)) all += chunk;
    std::vector<json> out;
    std::size_t at = 0;
    while (at < all.size()) {
      const auto nl = all.find('\n', at);
      out.push_back(json::parse(all.substr(at, nl - at)));
      at = nl + 1;
    }
    return out;
  }
};

json refused(Server& s, const char* spec, const std::string& failed) {
  const std::string before = s.digest();
  const std::size_t entries = s.trace().size();
  const auto r = s.call("PUT", "/v1/tasks/acct/spec", spec);
  INFO(r.body);
  REQUIRE(r.status == 409);
  const json e = json::parse(r.body)["error"];
  CHECK(e["code"] == "reload_refused");
  CHECK(e["failed"] == failed);
  CHECK(s.digest() == before);  // the old spec stays
  CHECK(s.trace().size() == entries);
  return e;
}

}  // namespace

TEST_CASE("a reload is refused for each of its three reasons, and the old spec stays",
          "[server][reload]") {
  Server s;
  s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"spend"})");
  const json spec = refused(s, kBadSpec, "spec");
  CHECK(spec["details"][0].get<std::string>().find("balnce") != std::string::npos);
  const json verify = refused(s, kRefuted, "verify");
  CHECK(verify["details"][0].get<std::string>().find("preservation:spend:solvent") !=
        std::string::npos);
  const json state = refused(s, kRich, "state");
  CHECK(state["details"][0].get<std::string>().find("`rich`") != std::string::npos);
  // Another task's spec is not well-formed for this one.
  std::string other = kB;
  other.replace(other.find("\"acct\""), 6, "\"other\"");
  refused(s, other.c_str(), "spec");
  // The service goes on with the old spec.
  CHECK(s.state()["count"] == 1);
}

TEST_CASE("a dry run checks and changes nothing; a reload carries the state over",
          "[server][reload]") {
  Server s;
  s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"spend"})");
  const std::string a = s.digest();
  const json dry = s.ok("PUT", "/v1/tasks/acct/spec?dry_run=1", kB);
  CHECK(dry["changed"] == true);
  CHECK(dry["dry_run"] == true);
  CHECK(dry["sequence"].is_null());
  CHECK(dry["added"] == json::array({"flag"}));
  CHECK(dry["dropped"] == json::array({"count"}));
  CHECK(s.digest() == a);
  for (const char* query : {"?dry_run=maybe", "?dry_run", "?x=1", "?dry_run=1&x", "?dry_run=1;"})
    CHECK(s.call("PUT", std::string("/v1/tasks/acct/spec") + query, kB).status == 400);
  CHECK(s.ok("PUT", "/v1/tasks/acct/spec?dry_run=true&", kB)["dry_run"] == true);
  CHECK(s.ok("PUT", "/v1/tasks/acct/spec?&dry_run=1", kB)["dry_run"] == true);
  CHECK(s.call("PUT", "/v1/tasks/acct/spec", "{").status == 400);  // not JSON
  CHECK(s.call("POST", "/v1/tasks/acct/spec", kB).status == 405);

  const json done = s.ok("PUT", "/v1/tasks/acct/spec", kB);
  CHECK(done["changed"] == true);
  CHECK(done["previous_digest"] == a);
  CHECK(s.digest() == done["spec_digest"]);
  CHECK(s.state() == json{{"balance", 7}, {"flag", false}});
  const std::vector<json> trace = s.trace();
  const json& change = trace.back();
  CHECK(change["kind"] == "spec_changed");
  CHECK(change["seq"] == done["sequence"]);
  CHECK(change["spec"] == done["spec_digest"]);
  CHECK(change["params"]["from"] == a);
  CHECK(change["prev"] == trace[trace.size() - 2]["hash"]);
  CHECK(change["gross"] == "1.000");
  // The new spec decides; nothing before the reload can be rolled back.
  CHECK(s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"spend"})")["state"]["balance"] == 5);
  const std::vector<json> after = s.trace();  // the chain goes on from the change
  CHECK(after.back()["seq"] == done["sequence"].get<int>() + 1);
  CHECK(after.back()["prev"] == change["hash"]);
  CHECK(after.front()["kind"] == "genesis");  // in memory, the entries before the reload stay
  s.ok("POST", "/v1/tasks/acct/rollback", "");
  CHECK(s.call("POST", "/v1/tasks/acct/rollback", "").status == 409);
  // The same spec again changes nothing.
  CHECK(s.ok("PUT", "/v1/tasks/acct/spec", kB)["changed"] == false);
}

TEST_CASE("a restart after a reload rebuilds the same state; the trace replays with both specs",
          "[server][reload]") {
  const std::string dir = temp_file("reload-dir");
  fs::create_directories(dir);
  json before;
  std::string digest;
  {
    Server s(dir);
    s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"spend"})");
    s.ok("PUT", "/v1/tasks/acct/spec", kB);
    s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"deposit"})");
    before = s.state();
    digest = s.digest();
  }
  CHECK(fs::exists(fs::path(dir) / "specs" / (ck::load_spec(kA)->digest + ".json")));
  CHECK(fs::exists(fs::path(dir) / "specs" / (digest + ".json")));
  {
    Server s(dir);
    CHECK(s.digest() == digest);
    CHECK(s.state() == before);
    CHECK(s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"spend"})")["executed"] == true);
  }
  // `trace verify --spec A --spec B`: both specs replay it; A alone stops at the change.
  const auto entries = ck::read_trace_file((fs::path(dir) / "acct.jsonl").string());
  const auto replay = [&](bool both) -> std::optional<std::string> {
    ck::TraceReplay r(ck::load_spec(kA));
    const auto b = ck::load_spec(kB);
    if (both) r.set_specs([b](std::string_view d) { return d == b->digest ? b : nullptr; });
    for (const auto& e : entries)
      if (auto why = r.add(e)) return why;
    return std::nullopt;
  };
  CHECK(replay(true) == std::nullopt);
  const auto alone = replay(false);
  REQUIRE(alone.has_value());
  CHECK(alone->find("spec was changed here") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a crash on either side of a reload's commit point restarts consistently",
          "[server][reload]") {
  const std::string b = ck::load_spec(kB)->digest;
  for (const std::string point : {"reload:spec-stored", "reload:trace-appended"}) {
    DYNAMIC_SECTION(point) {
      const std::string dir = temp_file("reload-crash");
      fs::create_directories(dir);
      json before;
      std::string a;
      {
        Server s(dir);
        s.ok("POST", "/v1/tasks/acct/execute", R"({"action":"spend"})");
        before = s.state();
        a = s.digest();
      }
      // The reload dies at `point` as under kill -9: no destructor runs, nothing is flushed
      // but what was written.
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        try {
          Server s(dir, [point](std::string_view at) {
            if (at == point) ::_exit(9);
          });
          (void)s.call("PUT", "/v1/tasks/acct/spec", kB);
        } catch (...) {
        }
        ::_exit(0);
      }
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      REQUIRE(WIFEXITED(status));
      REQUIRE(WEXITSTATUS(status) == 9);
      Server s(dir);
      const std::vector<json> trace = s.trace();
      if (point == "reload:spec-stored") {  // before the commit: the old spec
        CHECK(s.digest() == a);
        CHECK(trace.back()["kind"] == "executed");
        CHECK(s.state() == before);
      } else {  // after it: the new spec, and its spec file again
        CHECK(s.digest() == b);
        CHECK(trace.back()["kind"] == "spec_changed");
        CHECK(s.state() == json{{"balance", 7}, {"flag", false}});
        CHECK(ck::load_spec_file((fs::path(dir) / "acct.spec.json").string())->digest == b);
      }
      fs::remove_all(dir);
    }
  }
}
