// Approvals (docs/SERVE.md): an action whose spec asks for one waits as a ticket; another
// principal with the right approves (decided afresh, committed or rejected with reasons) or
// denies it; its time runs out on an injected clock; a restart rebuilds the tickets; every
// refusal has its code. No test waits: the clock is a variable.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../kernel/support.hpp"
#include "clampai/kernel.hpp"
#include "clampai/server.hpp"

namespace cs = clampai::server;
namespace ck = clampai::kernel;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// `pay` waits for an approval (60 s); `spend` does not; `fine` waits for an `admin`.
const char* kSpec = R"J({"name": "pay",
  "variables": {"balance": {"type": "int", "initial": 10}, "paid": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "pay", "cost": 1, "parameters": {"amount": {"type": "int", "min": 1, "max": 100}},
     "approval": {"ttl_s": 60},
     "effects": [{"variable": "balance", "mode": "decrement", "value": "amount"},
                 {"variable": "paid", "mode": "increment", "value": "amount"}]},
    {"id": "spend", "cost": 1, "effects": [{"variable": "balance", "mode": "decrement", "value": 5}]},
    {"id": "fine", "cost": 1, "approval": {"right": "admin", "ttl_s": 5},
     "effects": [{"variable": "paid", "mode": "increment", "value": 1}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

const std::int64_t kStart = 1'800'000'000'000'000;  // microseconds since the epoch

std::string principals() {
  const std::vector<std::pair<std::string, json>> who{
      {"alice", {{"*", {"read", "execute"}}}},
      {"bob", {{"*", {"read", "approve"}}}},
      {"carol", {{"pay", {"approve"}}}},
      {"dave", {{"*", {"execute", "approve"}}}},
      {"eve", {{"*", {"read", "decide", "admin"}}}},
  };
  json list = json::array();
  for (const auto& [name, rights] : who)
    list.push_back({{"name", name},
                    {"token_sha256", ck::sha256_hex("token-of-" + name + "-0123456789")},
                    {"rights", rights}});
  return json{{"principals", list}}.dump();
}

std::string as(const std::string& name) { return "Bearer token-of-" + name + "-0123456789"; }

// A service with the principals above, the `pay` task, and a clock the test moves.
struct Fixture {
  std::shared_ptr<std::atomic<std::int64_t>> now =
      std::make_shared<std::atomic<std::int64_t>>(kStart);
  std::unique_ptr<cs::Service> service;

  explicit Fixture(const std::string& data_dir = "", const std::string& ledger = "") {
    open(data_dir, ledger);
  }
  void open(const std::string& data_dir, const std::string& ledger = "") {
    service.reset();
    cs::ServiceOptions o;
    o.principals = cs::parse_principals(principals(), "principals.json");
    o.data_dir = data_dir;
    o.ledger = ledger;
    o.clock = [now = now] { return now->load(); };
    service = std::make_unique<cs::Service>(std::move(o));
    service->add_task(kSpec, "pay.json");
  }
  cs::Response call(const std::string& method,
                    const std::string& target,
                    const std::string& body,
                    const std::string& who) {
    return service->handle({method, target, as(who), body});
  }
  json ask(const std::string& who, int amount, const char* action = "pay") {
    const auto r = call("POST",
                        "/v1/tasks/pay/execute",
                        json{{"action", action}, {"params", {{"amount", amount}}}}.dump(),
                        who);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
  json ask_fine(const std::string& who) {
    const auto r = call("POST", "/v1/tasks/pay/execute", R"({"action":"fine"})", who);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
  cs::Response answer(const std::string& ticket, bool approve, const std::string& who) {
    return call(
        "POST", "/v1/tasks/pay/approvals/" + ticket, json{{"approve", approve}}.dump(), who);
  }
  json pending() {
    const auto r = call("GET", "/v1/tasks/pay/approvals", "", "bob");
    REQUIRE(r.status == 200);
    return json::parse(r.body)["tickets"];
  }
  json state() { return json::parse(call("GET", "/v1/tasks/pay/state", "", "bob").body)["state"]; }
  std::vector<json> trace() {
    auto r = call("GET", "/v1/tasks/pay/trace", "", "bob");
    std::string all, chunk;
    while (r.next_chunk && r.next_chunk(chunk)) all += chunk;
    std::vector<json> out;
    std::size_t at = 0;
    while (at < all.size()) {
      const std::size_t nl = all.find('\n', at);
      out.push_back(json::parse(all.substr(at, nl - at)));
      at = nl + 1;
    }
    return out;
  }
};

json body(const cs::Response& r) { return json::parse(r.body); }
std::string code(const cs::Response& r) { return body(r)["error"]["code"]; }
std::string message(const cs::Response& r) { return body(r)["error"]["message"]; }

}  // namespace

TEST_CASE("Approvals: the spec's `approval`, checked at load, in the digest only when present",
          "[server][approvals]") {
  const auto model = ck::load_spec(kSpec);
  const ck::Action& pay = model->actions[*model->find_action("pay")];
  REQUIRE(pay.approval);
  CHECK(pay.approval->right == "approve");
  CHECK(pay.approval->ttl_s == 60);
  CHECK_FALSE(model->actions[*model->find_action("spend")].approval);
  CHECK(model->actions[*model->find_action("fine")].approval->right == "admin");

  // A spec without approvals keeps its digest; one with them differs by them.
  json plain = json::parse(kSpec);
  for (auto& a : plain["actions"]) a.erase("approval");
  json longer = json::parse(kSpec);
  longer["actions"][0]["approval"]["ttl_s"] = 61;
  CHECK(ck::load_spec(plain.dump())->digest != model->digest);
  CHECK(ck::load_spec(longer.dump())->digest != model->digest);
  // The digest of autoscale.json as a trace written before approvals records it.
  CHECK(ck::load_spec_file(clampai::test::source_path("examples/autoscale.json"))->digest ==
        "57aeadff6f1a786348a1c38a03216003300cb4606ef05259e7f04d304b368efd");

  // An emergency action cannot wait (T8); bad members are named.
  json emergency = json::parse(kSpec);
  emergency["actions"][1]["cost"] = 0;
  emergency["actions"][1]["approval"] = json::object();
  emergency["emergency_actions"] = {"spend"};
  REQUIRE_THROWS_WITH(
      ck::load_spec(emergency.dump()),
      Catch::Matchers::Contains("actions[1].approval") && Catch::Matchers::Contains("T8"));
  const std::vector<std::pair<json, std::string>> bad{
      {{{"ttl_s", 0}}, "actions[0].approval.ttl_s: must be between 1 and 31536000"},
      {{{"ttl_s", 31536001}}, "must be between 1 and 31536000"},
      {{{"ttl_s", "60"}}, "actions[0].approval.ttl_s: expected a whole number"},
      {{{"right", ""}}, "actions[0].approval.right: empty right"},
      {{{"right", 3}}, "actions[0].approval.right"},
      {{{"ttl", 3}}, "unknown key `ttl`"},
      {json::array(), "actions[0].approval"},
  };
  for (const auto& [approval, why] : bad) {
    json s = json::parse(kSpec);
    s["actions"][0]["approval"] = approval;
    INFO(approval.dump());
    REQUIRE_THROWS_WITH(ck::load_spec(s.dump()), Catch::Matchers::Contains(why));
  }
  // A right the server does not know is refused when the task is added.
  json unknown_right = json::parse(kSpec);
  unknown_right["actions"][0]["approval"]["right"] = "aprove";
  cs::Service s({});
  REQUIRE_THROWS_WITH(
      s.add_task(unknown_right.dump(), "pay.json"),
      Catch::Matchers::Contains("actions[0].approval.right: unknown right `aprove`"));
  unknown_right["name"] = "other";
  const auto r = s.handle({"POST", "/v1/tasks", "", unknown_right.dump()});
  CHECK(r.status == 400);
  CHECK(code(r) == "invalid_spec");
}

TEST_CASE("Approvals: execute answers a pending ticket, and an approval commits it",
          "[server][approvals]") {
  Fixture f;
  const json asked = f.ask("alice", 3);
  CHECK(asked["approved"] == false);
  CHECK(asked["pending"] == true);
  CHECK(asked["executed"] == false);
  CHECK(asked["request_sequence"] == 1);  // its approval_requested entry
  CHECK(asked["sequence"].is_null());     // no commit to roll back
  CHECK(asked["principal"] == "alice");
  CHECK(asked["params"]["amount"] == 3);
  CHECK(asked["changes"]["balance"] == 7);  // what it would change now
  CHECK(asked["expires_at_us"] == kStart + 60'000'000);
  CHECK(asked["state"]["balance"] == 10);  // nothing committed
  const std::string ticket = asked["ticket"];
  CHECK(ticket.size() == 32);

  const json listed = f.pending();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["ticket"] == ticket);
  CHECK(listed[0]["action"] == "pay");
  CHECK(listed[0]["principal"] == "alice");
  CHECK(listed[0]["requested_at_us"] == kStart);

  const auto r = f.answer(ticket, true, "bob");
  REQUIRE(r.status == 200);
  CHECK(body(r)["granted"] == true);
  CHECK(body(r)["by"] == "bob");
  CHECK(body(r)["approved"] == true);
  CHECK(body(r)["executed"] == true);
  CHECK(body(r)["state"]["balance"] == 7);
  CHECK(f.state()["paid"] == 3);
  CHECK(f.pending().empty());

  const std::vector<json> trace = f.trace();
  REQUIRE(trace.size() == 4);
  CHECK(trace[1]["kind"] == "approval_requested");
  CHECK(trace[1]["principal"] == "alice");
  CHECK(trace[1]["ticket"] == ticket);
  CHECK(trace[1]["params"]["amount"] == 3);
  CHECK(trace[2]["kind"] == "approval_granted");
  CHECK(trace[2]["principal"] == "bob");
  CHECK(trace[2]["ticket"] == ticket);
  CHECK(trace[3]["kind"] == "executed");
  CHECK(trace[3]["principal"] == "alice");  // the commit names who asked
  CHECK(trace[3]["step"] == 1);

  // Answered once: a second answer is 404, saying what became of it.
  const auto again = f.answer(ticket, true, "carol");
  CHECK(again.status == 404);
  CHECK(code(again) == "unknown_ticket");
  CHECK(message(again).find("approved by `bob`") != std::string::npos);

  // An action without `approval` commits at once, as always.
  const auto spent = f.call("POST", "/v1/tasks/pay/execute", R"({"action":"spend"})", "alice");
  CHECK(body(spent)["executed"] == true);
  CHECK_FALSE(body(spent).contains("pending"));
}

TEST_CASE("Approvals: what the kernel rejects now is rejected at once, without a ticket",
          "[server][approvals]") {
  Fixture f;
  const json asked = f.ask("alice", 50);
  CHECK(asked["approved"] == false);
  CHECK_FALSE(asked.contains("pending"));
  CHECK_FALSE(asked.contains("ticket"));
  CHECK(asked["reasons"][0]["code"] == "invariant_violated");
  CHECK(f.pending().empty());
  CHECK(f.trace().size() == 1);
  const json bad = f.ask("alice", 500);  // out of its bounds
  CHECK(bad["reasons"][0]["code"] == "invalid_parameter");
  CHECK(f.trace().size() == 1);
}

TEST_CASE("Approvals: a denial commits nothing and is recorded with its reason",
          "[server][approvals]") {
  Fixture f;
  const std::string ticket = f.ask("alice", 3)["ticket"];
  const auto r = f.answer(ticket, false, "carol");
  REQUIRE(r.status == 200);
  CHECK(body(r)["granted"] == false);
  CHECK(body(r)["approved"] == false);
  CHECK(body(r)["executed"] == false);
  CHECK(body(r)["reasons"][0]["code"] == "approval_denied");
  CHECK(body(r)["reasons"][0]["message"].get<std::string>().find("denied by `carol`") !=
        std::string::npos);
  CHECK(f.state()["balance"] == 10);
  const std::vector<json> trace = f.trace();
  REQUIRE(trace.size() == 3);
  CHECK(trace[2]["kind"] == "approval_denied");
  CHECK(trace[2]["principal"] == "carol");
  CHECK(trace[2]["reasons"][0]["code"] == "approval_denied");
  CHECK(f.pending().empty());
  const auto again = f.answer(ticket, true, "bob");
  CHECK(code(again) == "unknown_ticket");
  CHECK(message(again).find("denied by `carol`") != std::string::npos);
  // Counted with the rejections.
  const auto metrics = f.call("GET", "/metrics", "", "bob").body;
  CHECK(metrics.find(R"(clampai_rejections_total{task="pay",reason="approval_denied"} 1)") !=
        std::string::npos);
}

TEST_CASE("Approvals: the one who asked cannot answer; an answer needs the action's right",
          "[server][approvals]") {
  Fixture f;
  const std::string ticket = f.ask("dave", 3)["ticket"];
  auto r = f.answer(ticket, true, "dave");  // holds `approve`, but asked
  CHECK(r.status == 403);
  CHECK(code(r) == "forbidden");
  CHECK(message(r).find("`dave` asked for ticket") != std::string::npos);
  r = f.answer(ticket, false, "dave");  // nor deny it
  CHECK(r.status == 403);
  r = f.answer(ticket, true, "eve");  // no `approve`
  CHECK(r.status == 403);
  CHECK(message(r).find("lacks the right `approve`") != std::string::npos);
  r = f.answer(ticket, true, "alice");
  CHECK(r.status == 403);
  // Nothing was recorded by the refusals: still pending, and only its request in the trace.
  CHECK(f.pending().size() == 1);
  CHECK(f.trace().size() == 2);

  // `fine` needs `admin`: bob's `approve` is not enough, eve's `admin` is.
  const std::string fine = f.ask_fine("alice")["ticket"];
  r = f.answer(fine, true, "bob");
  CHECK(r.status == 403);
  CHECK(message(r).find("lacks the right `admin`") != std::string::npos);
  r = f.answer(fine, true, "eve");
  CHECK(r.status == 200);
  CHECK(body(r)["executed"] == true);
}

TEST_CASE("Approvals: two approvers race; exactly one answer wins", "[server][approvals]") {
  Fixture f;
  for (int round = 0; round < 8; ++round) {  // 8 payments of 1 fit the balance of 10
    const std::string ticket = f.ask("alice", 1)["ticket"];
    const bool first_approves = round % 2 == 0;
    cs::Response a, b;
    std::thread ta([&] { a = f.answer(ticket, first_approves, "bob"); });
    std::thread tb([&] { b = f.answer(ticket, true, "carol"); });
    ta.join();
    tb.join();
    INFO(a.status << " " << a.body << " / " << b.status << " " << b.body);
    REQUIRE(((a.status == 200) != (b.status == 200)));
    const cs::Response& lost = a.status == 200 ? b : a;
    CHECK(lost.status == 404);
    CHECK(code(lost) == "unknown_ticket");
    CHECK(message(lost).find(" by `") != std::string::npos);
  }
  // Exactly one answer each in the trace, and one commit per granted ticket.
  std::size_t answers = 0, granted = 0, executed = 0;
  for (const json& e : f.trace()) {
    const std::string kind = e["kind"];
    answers += kind == "approval_granted" || kind == "approval_denied";
    granted += kind == "approval_granted";
    executed += kind == "executed";
  }
  CHECK(answers == 8);
  CHECK(executed == granted);
  CHECK(f.state()["paid"] == static_cast<int>(granted));
}

TEST_CASE("Approvals: a ticket expires on the clock, when touched or listed",
          "[server][approvals]") {
  Fixture f;
  const std::string ticket = f.ask("alice", 3)["ticket"];
  *f.now += 60'000'000 - 1;  // the last microsecond it waits
  CHECK(f.pending().size() == 1);
  *f.now += 1;  // due: an answer now finds it expired
  auto r = f.answer(ticket, true, "bob");
  CHECK(r.status == 409);
  CHECK(code(r) == "ticket_expired");
  CHECK(f.state()["balance"] == 10);
  r = f.answer(ticket, true, "carol");  // and keeps saying so
  CHECK(code(r) == "ticket_expired");
  std::vector<json> trace = f.trace();
  REQUIRE(trace.size() == 3);
  CHECK(trace[2]["kind"] == "approval_expired");
  CHECK(trace[2]["ticket"] == ticket);
  CHECK(trace[2]["reasons"][0]["code"] == "approval_expired");
  CHECK(trace[2]["time"] == kStart + 60'000'000);

  // Listing expires what is due, once.
  const std::string second = f.ask("alice", 2)["ticket"];
  *f.now += 61'000'000;
  CHECK(f.pending().empty());
  CHECK(f.pending().empty());
  trace = f.trace();
  REQUIRE(trace.size() == 5);
  CHECK(trace[4]["kind"] == "approval_expired");
  CHECK(trace[4]["ticket"] == second);
  CHECK(code(f.answer(second, true, "bob")) == "ticket_expired");
  const auto metrics = f.call("GET", "/metrics", "", "bob").body;
  CHECK(metrics.find(R"(clampai_rejections_total{task="pay",reason="approval_expired"} 2)") !=
        std::string::npos);
}

TEST_CASE("Approvals: the kernel decides again on the state of the approval's moment",
          "[server][approvals]") {
  Fixture f;
  const std::string ticket = f.ask("alice", 8)["ticket"];  // 10 - 8 >= 0 now
  const auto spent = f.call("POST", "/v1/tasks/pay/execute", R"({"action":"spend"})", "alice");
  REQUIRE(body(spent)["executed"] == true);  // balance 5: paying 8 would break `solvent`
  const auto r = f.answer(ticket, true, "bob");
  REQUIRE(r.status == 200);
  CHECK(body(r)["granted"] == true);
  CHECK(body(r)["approved"] == false);
  CHECK(body(r)["executed"] == false);
  CHECK(body(r)["reasons"][0]["code"] == "invariant_violated");
  CHECK(body(r)["reasons"][0]["subject"] == "solvent");
  CHECK(f.state()["balance"] == 5);
  const std::vector<json> trace = f.trace();
  CHECK(trace.back()["kind"] == "approval_granted");  // and no commit after it
}

TEST_CASE("Approvals: a restart rebuilds the pending tickets from the trace",
          "[server][approvals]") {
  const std::string dir = clampai::test::temp_file("approvals-data");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string waiting, denied, expiring;
  {
    Fixture f(dir);
    waiting = f.ask("alice", 3)["ticket"];
    denied = f.ask("alice", 1)["ticket"];
    expiring = f.ask_fine("alice")["ticket"];  // 5 s
    REQUIRE(f.answer(denied, false, "bob").status == 200);
    f.service.reset();  // a stop without a seal (as kill -9 leaves it)
  }
  Fixture f;
  *f.now = kStart + 10'000'000;  // `fine` is past its 5 s, `pay` within its 60 s
  f.open(dir);
  const json listed = f.pending();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["ticket"] == waiting);
  CHECK(listed[0]["principal"] == "alice");
  CHECK(listed[0]["params"]["amount"] == 3);
  CHECK(listed[0]["expires_at_us"] == kStart + 60'000'000);
  CHECK(code(f.answer(denied, true, "carol")) == "unknown_ticket");
  CHECK(code(f.answer(expiring, true, "eve")) == "ticket_expired");
  const auto r = f.answer(waiting, true, "carol");
  REQUIRE(r.status == 200);
  CHECK(body(r)["executed"] == true);
  CHECK(f.state()["balance"] == 7);

  // And once more, after a shutdown's seal: nothing is pending any more.
  f.service->shutdown();
  f.open(dir);
  CHECK(f.pending().empty());
  CHECK(f.state()["balance"] == 7);
  fs::remove_all(dir);
}

TEST_CASE("Approvals: every refusal has its code and names what is wrong", "[server][approvals]") {
  Fixture f;
  const std::string ticket = f.ask("alice", 3)["ticket"];
  auto r = f.answer("0123456789abcdef0123456789abcdef", true, "bob");
  CHECK(r.status == 404);
  CHECK(code(r) == "unknown_ticket");
  CHECK(message(r).find("no pending ticket `0123456789abcdef0123456789abcdef`") !=
        std::string::npos);
  const std::vector<std::pair<std::string, std::string>> bodies{
      {"", "missing key `approve`"},
      {"{}", "missing key `approve`"},
      {R"({"approve":"yes"})", "approve: expected true or false"},
      {R"({"approve":1})", "approve: expected true or false"},
      {R"({"approve":true,"why":"x"})", "unknown key `why`"},
      {"[true]", "expected an object"},
      {"{", "request body"},
  };
  for (const auto& [text, why] : bodies) {
    r = f.call("POST", "/v1/tasks/pay/approvals/" + ticket, text, "bob");
    INFO(text << ": " << r.body);
    CHECK(r.status == 400);
    CHECK(message(r).find(why) != std::string::npos);
  }
  CHECK(f.pending().size() == 1);  // none of them answered it
  r = f.call("GET", "/v1/tasks/pay/approvals/" + ticket, "", "bob");
  CHECK(r.status == 405);
  r = f.call("POST", "/v1/tasks/pay/approvals", "", "bob");
  CHECK(r.status == 405);
  r = f.call("POST", "/v1/tasks/nope/approvals/" + ticket, R"({"approve":true})", "bob");
  CHECK(code(r) == "unknown_task");
  r = f.call("GET", "/v1/tasks/pay/approvals", "", "carol");  // no `read`
  CHECK(r.status == 403);
  r = f.call("GET", "/v1/tasks/pay/approvals", "", "nobody");
  CHECK(r.status == 401);

  // A sealed task answers nothing.
  f.service->shutdown();
  r = f.answer(ticket, true, "bob");
  CHECK(r.status == 409);
  CHECK(code(r) == "task_sealed");
  r = f.call("POST", "/v1/tasks/pay/execute", R"({"action":"pay","params":{"amount":1}})", "alice");
  CHECK(code(r) == "task_sealed");

  // Without authentication nobody can be told apart from who asked.
  cs::Service open({});
  open.add_task(kSpec, "pay.json");
  r = open.handle(
      {"POST", "/v1/tasks/pay/execute", "", R"({"action":"pay","params":{"amount":1}})"});
  const std::string t = body(r)["ticket"];
  CHECK(body(r)["principal"].is_null());
  r = open.handle({"POST", "/v1/tasks/pay/approvals/" + t, "", R"({"approve":true})"});
  CHECK(r.status == 403);
  CHECK(message(r).find("--principals") != std::string::npos);
}

TEST_CASE("Approvals: at most 1024 tickets wait on a task", "[server][approvals]") {
  Fixture f;
  for (std::size_t i = 0; i < std::size_t{1024}; ++i) REQUIRE(f.ask("alice", 1)["pending"] == true);
  const auto r =
      f.call("POST", "/v1/tasks/pay/execute", R"({"action":"pay","params":{"amount":1}})", "alice");
  CHECK(r.status == 429);
  CHECK(code(r) == "too_many_tickets");
  *f.now += 60'000'000;  // all expire; room again
  CHECK(f.ask("alice", 1)["pending"] == true);
}

TEST_CASE("Approvals: through MCP a call answers a pending ticket the client can show",
          "[server][approvals][mcp]") {
  cs::McpSession m(ck::load_spec(kSpec));
  const auto call = [&](const std::string& tool, const json& args) {
    return json::parse(m.handle(json{{"jsonrpc", "2.0"},
                                     {"id", 1},
                                     {"method", "tools/call"},
                                     {"params", {{"name", tool}, {"arguments", args}}}}
                                    .dump()))["result"];
  };
  json r = call("pay", {{"amount", 3}});
  CHECK(r["isError"] == false);
  CHECK(r["structuredContent"]["pending"] == true);
  CHECK(r["structuredContent"]["approved"] == false);
  CHECK(r["structuredContent"]["ticket"].get<std::string>().size() == 32);
  CHECK(r["content"][0]["text"].get<std::string>().find("waits for an approval") !=
        std::string::npos);
  r = call("status", json::object());
  CHECK(r["structuredContent"]["state"]["balance"] == 10);  // nothing committed
  r = call("pay", {{"amount", 50}});  // rejected now: the ordinary rejection, no ticket
  CHECK(r["isError"] == true);
  CHECK_FALSE(r["structuredContent"].contains("pending"));
}

TEST_CASE("Approvals: on a shared ledger, any server answers a ticket once",
          "[server][approvals]") {
  const fs::path path = fs::temp_directory_path() / "clampai-serve-shared-approvals.jsonl";
  fs::remove(path);
  {
    // Two servers on one file ledger (as two processes on one database).
    Fixture one("", "file:" + path.string());
    Fixture two("", "file:" + path.string());
    two.now = one.now;  // one clock for both (the ledger's entries carry its time)
    two.open("", "file:" + path.string());
    const json asked = one.ask("dave", 3);
    REQUIRE(asked["pending"] == true);
    const std::string ticket = asked["ticket"];
    const json listed = two.pending();  // the other server lists it
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["ticket"] == ticket);
    CHECK(listed[0]["principal"] == "dave");
    auto r = two.answer(ticket, true, "dave");  // nobody approves their own request
    CHECK(r.status == 403);
    CHECK(message(r).find("`dave` asked for ticket") != std::string::npos);
    r = two.answer(ticket, true, "bob");
    REQUIRE(r.status == 200);
    CHECK(body(r)["executed"] == true);
    CHECK(two.state()["paid"] == 3);
    CHECK(one.state()["paid"] == 3);
    const auto again = one.answer(ticket, true, "carol");
    CHECK(again.status == 404);
    CHECK(code(again) == "unknown_ticket");
    CHECK(message(again).find("approved by `bob`") != std::string::npos);
    // Expired on the clock, recorded once whichever server lists it first.
    const std::string late = one.ask("alice", 1)["ticket"];
    *one.now += 61'000'000;
    CHECK(two.pending().empty());
    CHECK(one.pending().empty());
    CHECK(code(one.answer(late, true, "bob")) == "ticket_expired");
    std::size_t expired = 0;
    for (const json& e : one.trace()) expired += e["kind"] == "approval_expired";
    CHECK(expired == 1);
  }
  // A restart rebuilds the pending tickets from the ledger.
  std::string ticket;
  {
    Fixture one("", "file:" + path.string());
    ticket = one.ask("alice", 2)["ticket"];
  }
  Fixture restarted("", "file:" + path.string());
  const json pending = restarted.pending();
  REQUIRE(pending.size() == 1);
  CHECK(pending[0]["ticket"] == ticket);
  CHECK(restarted.answer(ticket, false, "bob").status == 200);
  fs::remove(path);
}
