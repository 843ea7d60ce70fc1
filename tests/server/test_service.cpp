// The HTTP API without sockets (Service::handle) and the MCP session: routes, errors with
// their stable codes, authentication, limits, and durability across a restart.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <malloc.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <streambuf>
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

std::string read(const std::string& path) { return ck::read_text_file(path); }

std::string spec_text(const std::string& name = "examples/autoscale.json") {
  return read(clampai::test::source_path(name));
}

cs::Response call(cs::Service& s,
                  const std::string& method,
                  const std::string& target,
                  const std::string& body = "",
                  const std::string& auth = "") {
  return s.handle({method, target, auth, body});
}

json body_of(const cs::Response& r) { return json::parse(r.body); }

std::string code_of(const cs::Response& r) { return body_of(r)["error"]["code"]; }

// The whole streamed body of a response.
std::string drain(cs::Response& r) {
  std::string all, chunk;
  while (r.next_chunk && r.next_chunk(chunk)) all += chunk;
  return all;
}

std::string fresh_dir() {
  const std::string dir = clampai::test::temp_file("data");
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("Service: evaluate and execute answer 200 with the decision, approved or not",
          "[server][service]") {
  cs::Service s({});
  s.add_task(spec_text(), "autoscale.json");
  auto r =
      call(s, "POST", "/v1/tasks/autoscale/evaluate", R"({"action":"scale_up","params":{"n":2}})");
  REQUIRE(r.status == 200);
  REQUIRE(body_of(r)["approved"] == true);
  REQUIRE(body_of(r)["changes"]["instances"] == 6);
  r = call(s, "POST", "/v1/tasks/autoscale/evaluate", R"({"action":"scale_up","params":{"n":50}})");
  REQUIRE(r.status == 200);
  REQUIRE(body_of(r)["approved"] == false);
  REQUIRE(!body_of(r)["reasons"].empty());
  r = call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":2}})");
  REQUIRE(r.status == 200);
  REQUIRE(body_of(r)["executed"] == true);
  REQUIRE(body_of(r)["state"]["instances"] == 6);
  r = call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":50}})");
  REQUIRE(body_of(r)["executed"] == false);
  REQUIRE(body_of(r)["sequence"].is_null());
  REQUIRE(body_of(r)["state"]["instances"] == 6);  // T5: nothing changed
  r = call(s, "GET", "/v1/tasks/autoscale/state");
  REQUIRE(body_of(r)["steps"] == 1);
  REQUIRE(body_of(r)["budget"]["net"] == "1.000");
}

TEST_CASE("Service: every error is JSON with a stable code", "[server][service]") {
  cs::Service s({});
  s.add_task(spec_text(), "autoscale.json");
  const auto eval = [&](const std::string& body) {
    return call(s, "POST", "/v1/tasks/autoscale/evaluate", body);
  };
  auto r = eval("{\"action\":");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "malformed_json");
  r = eval(std::string(100, '[') + std::string(100, ']'));
  CHECK(r.status == 400);
  CHECK(code_of(r) == "json_too_deep");
  r = eval(R"({"action":"scale_up","parms":{}})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "invalid_request");
  CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("unknown key `parms`"));
  r = eval(R"({"params":{}})");
  CHECK(code_of(r) == "invalid_request");
  r = eval(R"({"action":"scale_up","params":{"n":true}})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "invalid_params");
  CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("params.n"));
  r = eval(R"({"action":"scale_upp"})");
  CHECK(r.status == 404);
  CHECK(code_of(r) == "unknown_action");
  CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("did you mean `scale_up`"));
  r = call(s, "POST", "/v1/tasks/autoscal/evaluate", R"({"action":"scale_up"})");
  CHECK(r.status == 404);
  CHECK(code_of(r) == "unknown_task");
  r = call(s, "GET", "/v1/nothing");
  CHECK(r.status == 404);
  CHECK(code_of(r) == "not_found");
  r = call(s, "GET", "/v1/tasks/autoscale/evaluate");
  CHECK(r.status == 405);
  CHECK(code_of(r) == "method_not_allowed");
  r = call(s, "POST", "/v1/tasks", spec_text());
  CHECK(r.status == 409);
  CHECK(code_of(r) == "task_exists");
  r = call(s, "POST", "/v1/tasks", R"({"name":"x"})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "invalid_spec");
  r = call(s, "POST", "/v1/tasks/autoscale/rollback");
  CHECK(r.status == 409);
  CHECK(code_of(r) == "rollback_refused");
  // A spec the reference monitor must enforce is refused, not served by a bare kernel.
  r = call(s, "POST", "/v1/tasks", spec_text("tests/data/hardening/leaky.json"));
  CHECK(r.status == 400);
  CHECK(code_of(r) == "invalid_spec");
  CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("declares what the reference monitor enforces"));
  CHECK(call(s, "GET", "/v1/tasks/leaky/state").status == 404);
}

TEST_CASE("Service: a malformed request never changes a kernel", "[server][service]") {
  cs::Service s({});
  s.add_task(spec_text(), "autoscale.json");
  const std::string before = call(s, "GET", "/v1/tasks/autoscale/state").body;
  const std::string valid = R"({"action":"scale_up","params":{"n":2}})";
  std::mt19937 rng(19);
  for (int i = 0; i < 300; ++i) {
    std::string body = valid;
    // Cut, or flip a byte, or drop a byte: most mutants are malformed; a well-formed mutant
    // may only evaluate (which changes nothing either).
    switch (rng() % 3) {
      case 0:
        body.resize(rng() % body.size());
        break;
      case 1:
        body[rng() % body.size()] = static_cast<char>(rng() % 256);
        break;
      default:
        body.erase(rng() % body.size(), 1);
    }
    const auto r = call(s, "POST", "/v1/tasks/autoscale/evaluate", body);
    REQUIRE(r.status != 500);
    REQUIRE(json::accept(r.body));
  }
  REQUIRE(call(s, "GET", "/v1/tasks/autoscale/state").body == before);
}

TEST_CASE("Service: the bearer token guards every route but health", "[server][service]") {
  cs::ServiceOptions o;
  o.token = "0123456789abcdef-secret";
  cs::Service s(o);
  s.add_task(spec_text(), "autoscale.json");
  CHECK(call(s, "GET", "/v1/health").status == 200);
  auto r = call(s, "GET", "/v1/tasks/autoscale/state");
  CHECK(r.status == 401);
  CHECK(code_of(r) == "unauthorized");
  r = call(s, "GET", "/v1/tasks/autoscale/state", "", "Bearer 0123456789abcdef-secreT");
  CHECK(r.status == 401);
  r = call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up"})", "Basic x");
  CHECK(r.status == 401);
  CHECK(call(s, "GET", "/metrics").status == 401);
  r = call(s, "GET", "/v1/tasks/autoscale/state", "", "Bearer 0123456789abcdef-secret");
  CHECK(r.status == 200);
  CHECK(body_of(r)["steps"] == 0);  // the refused execute changed nothing
  CHECK(cs::token_matches("abc", "abc"));
  CHECK_FALSE(cs::token_matches("abc", "abd"));
  CHECK_FALSE(cs::token_matches("abc", "abcd"));
  CHECK_FALSE(cs::token_matches("", "abc"));
}

TEST_CASE("Service: the live page needs no token, holds no secret, under a strict policy",
          "[server][service][live]") {
  cs::ServiceOptions o;
  o.token = "0123456789abcdef-secret";
  cs::Service s(o);
  s.add_task(spec_text(), "autoscale.json");
  const auto header = [](const cs::Response& r, const std::string& name) {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return std::string();
  };
  const cs::Response page = call(s, "GET", "/");
  CHECK(page.status == 200);
  CHECK(page.content_type == "text/html; charset=utf-8");
  CHECK(page.body.find("<script>") != std::string::npos);
  CHECK(page.body.find("secret") == std::string::npos);
  const std::string policy = header(page, "Content-Security-Policy");
  CHECK(policy.starts_with("default-src 'none'; script-src 'sha256-"));
  CHECK(policy.find("connect-src 'self'") != std::string::npos);
  CHECK(policy.find("frame-ancestors 'none'") != std::string::npos);
  CHECK(policy.find("unsafe") == std::string::npos);
  CHECK(header(page, "X-Content-Type-Options") == "nosniff");
  // The same bytes whatever the token, the tasks or the query: nothing of the server in it.
  cs::ServiceOptions other;
  other.token = "another-token-0123456789";
  cs::Service s2(other);
  CHECK(call(s2, "GET", "/?token=x").body == page.body);
  CHECK(call(s, "GET", "/", "", "Bearer 0123456789abcdef-secret").body == page.body);
  auto r = call(s, "POST", "/", "{}");
  CHECK(r.status == 405);
  CHECK(code_of(r) == "method_not_allowed");
  // What it polls needs the token.
  r = call(s, "GET", "/v1/live");
  CHECK(r.status == 401);
  r = call(s,
           "POST",
           "/v1/tasks/autoscale/execute",
           R"({"action":"scale_up","params":{"n":2}})",
           "Bearer 0123456789abcdef-secret");
  REQUIRE(body_of(r)["executed"] == true);
  r = call(s, "GET", "/v1/live", "", "Bearer 0123456789abcdef-secret");
  REQUIRE(r.status == 200);
  const json live = body_of(r);
  REQUIRE(live["tasks"].size() == 1);
  CHECK(live["tasks"][0]["recent"][0]["outcome"] == "executed");
  CHECK(live["tasks"][0]["recent"][0]["principal"] == "token");
  CHECK(live["tasks"][0]["charts"]["timeline"].get<std::string>().find("data-executed=\"1\"") !=
        std::string::npos);
  CHECK(live["pools"] == json::array());
}

namespace {

// A principals file: one principal a right set, as `{"NAME": {TASK: [RIGHT...]}}` in JSON.
std::string principals_json(const json& who) {
  json list = json::array();
  for (const auto& [name, rights] : who.items())
    list.push_back({{"name", name},
                    {"token_sha256", ck::sha256_hex("token-of-" + name + "-0123456789")},
                    {"rights", rights}});
  return json{{"principals", list}}.dump();
}

std::string bearer(const std::string& name) { return "Bearer token-of-" + name + "-0123456789"; }

struct RouteCase {
  const char* method;
  const char* target;
  const char* body;
  cs::Right needs;
  bool any_task;  // the right on any task is enough (else on the task, or `*` when taskless)
};

// Every route but health, and the right it needs (docs/SERVE.md's table).
const std::vector<RouteCase>& route_table() {
  static const std::vector<RouteCase> table{
      {"GET", "/metrics", "", cs::Right::read, false},
      {"GET", "/v1/pools", "", cs::Right::read, false},
      {"GET", "/v1/live", "", cs::Right::read, true},
      {"GET", "/v1/tasks", "", cs::Right::read, true},
      {"POST", "/v1/tasks", "", cs::Right::admin, false},  // the body: quickstart's spec
      {"GET", "/v1/tasks/autoscale/state", "", cs::Right::read, false},
      {"GET", "/v1/tasks/autoscale/trace", "", cs::Right::read, false},
      {"GET", "/v1/tasks/autoscale/approvals", "", cs::Right::read, false},
      {"POST",
       "/v1/tasks/autoscale/evaluate",
       R"({"action":"scale_up"})",
       cs::Right::decide,
       false},
      {"POST",
       "/v1/tasks/autoscale/lookahead",
       R"({"action":"scale_up"})",
       cs::Right::decide,
       false},
      {"POST", "/v1/tasks/autoscale/repair", R"({"action":"scale_up"})", cs::Right::decide, false},
      {"POST", "/v1/tasks/autoscale/verify", "", cs::Right::decide, false},
      {"POST",
       "/v1/tasks/autoscale/execute",
       R"({"action":"scale_up"})",
       cs::Right::execute,
       false},
      {"POST", "/v1/tasks/autoscale/rollback", "", cs::Right::admin, false},
  };
  return table;
}

}  // namespace

TEST_CASE("Service: every right against every route (the 403 table)", "[server][service]") {
  const std::vector<cs::Right> rights{
      cs::Right::read, cs::Right::decide, cs::Right::execute, cs::Right::approve, cs::Right::admin};
  for (const bool on_star : {true, false}) {
    for (const cs::Right right : rights) {
      const std::string rn(cs::right_name(right));
      // One right on every task, or on this task (and on no other).
      const json who = {{"p", {{on_star ? "*" : "autoscale", {rn}}}}};
      for (const RouteCase& c : route_table()) {
        cs::ServiceOptions o;
        o.principals = cs::parse_principals(principals_json(who), "principals.json");
        cs::Service s(o);
        s.add_task(spec_text(), "autoscale.json");
        const std::string body =
            std::string(c.target) == "/v1/tasks" && std::string(c.method) == "POST"
                ? spec_text("examples/quickstart.json")
                : c.body;
        auto r = call(s, c.method, c.target, body, bearer("p"));
        const bool taskless = std::string(c.target).find("/autoscale/") == std::string::npos;
        const bool allowed = right == c.needs && (on_star || !taskless || c.any_task);
        INFO(c.method << " " << c.target << " with `" << rn << "` on "
                      << (on_star ? "*" : "autoscale") << ": " << r.status << " " << r.body);
        if (allowed) {
          CHECK(r.status != 403);
          CHECK(r.status < 500);
        } else {
          CHECK(r.status == 403);
          CHECK(code_of(r) == "forbidden");
          CHECK(body_of(r)["error"]["message"].get<std::string>().find(
                    "`" + std::string(cs::right_name(c.needs)) + "`") != std::string::npos);
        }
        // A refused request changes nothing: no step, no task added.
        if (!allowed) {
          CHECK(s.task_names() == std::vector<std::string>{"autoscale"});
          auto state = call(s, "GET", "/v1/tasks/autoscale/state", "", "");
          CHECK(state.status == 401);
        }
      }
    }
  }
}

TEST_CASE("Service: a principal's rights on a task are the union of its own and of `*`",
          "[server][service]") {
  cs::ServiceOptions o;
  o.principals = cs::parse_principals(
      principals_json({{"ci", {{"*", {"read"}}, {"autoscale", {"execute"}}}},
                       {"other", {{"other-task", {"read", "decide", "execute", "admin"}}}}}),
      "principals.json");
  cs::Service s(o);
  s.add_task(spec_text(), "autoscale.json");
  CHECK(call(s, "GET", "/metrics", "", bearer("ci")).status == 200);
  CHECK(call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up"})", bearer("ci"))
            .status == 200);
  auto r = call(s, "GET", "/v1/tasks/autoscale/state", "", bearer("ci"));
  CHECK(r.status == 200);
  CHECK(body_of(r)["steps"] == 1);
  r = call(s, "POST", "/v1/tasks/autoscale/evaluate", R"({"action":"scale_up"})", bearer("ci"));
  CHECK(r.status == 403);
  CHECK(body_of(r)["error"]["message"] ==
        "principal `ci` lacks the right `decide` on task `autoscale`");
  // Rights on another task give none on this one, and list none of it.
  CHECK(call(s, "GET", "/v1/tasks/autoscale/state", "", bearer("other")).status == 403);
  r = call(s, "GET", "/v1/tasks", "", bearer("other"));
  CHECK(r.status == 200);
  CHECK(body_of(r)["tasks"].empty());
  CHECK(call(s, "GET", "/metrics", "", bearer("other")).status == 403);
  // An unknown token is 401, never 403.
  CHECK(call(s, "GET", "/v1/tasks", "", "Bearer token-of-nobody-0123456789").status == 401);
  // A token file is one principal with every right; it cannot be combined with principals.
  o.token = "0123456789abcdef-secret";
  o.principals = cs::parse_principals(principals_json({{"ci", {{"*", {"read"}}}}}), "p.json");
  CHECK_THROWS_WITH(cs::Service(o), Catch::Contains("cannot be combined"));
}

TEST_CASE("Service: replaced principals revoke at once; a server without auth takes none",
          "[server][service]") {
  cs::ServiceOptions o;
  o.principals =
      cs::parse_principals(principals_json({{"ci", {{"*", {"read"}}}}}), "principals.json");
  cs::Service s(o);
  CHECK(call(s, "GET", "/v1/tasks", "", bearer("ci")).status == 200);
  s.set_principals(
      cs::parse_principals(principals_json({{"ops", {{"*", {"read"}}}}}), "principals.json"));
  CHECK(call(s, "GET", "/v1/tasks", "", bearer("ci")).status == 401);
  CHECK(call(s, "GET", "/v1/tasks", "", bearer("ops")).status == 200);
  CHECK_THROWS_WITH(s.set_principals({}), Catch::Contains("old ones stay"));
  CHECK(call(s, "GET", "/v1/tasks", "", bearer("ops")).status == 200);
  cs::Service open{cs::ServiceOptions{}};
  CHECK_THROWS_WITH(
      open.set_principals(cs::parse_principals(principals_json({{"ops", {{"*", {"read"}}}}}), "p")),
      Catch::Contains("without authentication"));
}

TEST_CASE("parse_principals: every bad file names the entry and the key", "[server][service]") {
  const std::string hex(64, 'a');
  const auto entry = [&](const std::string& rest) {
    return R"({"principals": [{"name": "a", "token_sha256": ")" + std::string(64, 'b') +
           R"(", "rights": {}}, )" + rest + "]}";
  };
  const std::vector<std::pair<std::string, std::string>> cases{
      {entry(R"({"name": "ci", "token_sha256": ")" + hex + R"(", "rights": {"deploy": ["exec"]}})"),
       "p.json: principals[1].rights.deploy[0]: unknown right `exec` (did you mean `execute`?)"},
      {entry(R"({"name": "ci", "token_sha256": "abc", "rights": {}})"),
       "p.json: principals[1].token_sha256: expected the token's SHA-256 as 64 hex digits"},
      {entry(R"({"name": "ci", "token_sha256": ")" + std::string(63, 'a') + R"(g", "rights": {}})"),
       "principals[1].token_sha256: expected"},
      {entry(R"({"name": "a", "token_sha256": ")" + hex + R"(", "rights": {}})"),
       "principals[1].name: `a` names an earlier principal too"},
      {entry(R"({"name": "ci", "token_sha256": ")" + std::string(64, 'B') + R"(", "rights": {}})"),
       "principals[1].token_sha256: an earlier principal has the same token"},
      {entry(R"({"name": "ci", "token_sha256": ")" + hex + R"(", "right": {}})"),
       "principals[1]: unknown key `right` (did you mean `rights`?)"},
      {entry(R"({"name": "ci", "token_sha256": ")" + hex + R"("})"),
       "principals[1]: missing key `rights`"},
      {entry(R"({"name": "ci", "token_sha256": ")" + hex + R"(", "rights": {"a b": ["read"]}})"),
       "principals[1].rights.a b: not a task name"},
      {entry(R"({"name": "ci", "token_sha256": ")" + hex + R"(", "rights": {"*": "read"}})"),
       "principals[1].rights.*: expected an array of rights"},
      {entry(R"({"name": "ci", "token_sha256": ")" + hex + R"(", "rights": {"*": [1]}})"),
       "principals[1].rights.*[0]: expected a right (a string)"},
      {entry(R"({"name": 7, "token_sha256": ")" + hex + R"(", "rights": {}})"),
       "principals[1].name: expected a string"},
      {entry("[]"), "principals[1]: expected an object"},
      {R"({"principals": []})", "principals: empty"},
      {R"({"principal": []})", "unknown key `principal` (did you mean `principals`?)"},
      {R"([])", "expected an object"},
      {R"({"principals": [})", "p.json: "},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(cs::parse_principals(text, "p.json"), Catch::Contains(message));
  }
  // Hex digits in either case name the same token.
  const auto ok = cs::parse_principals(
      R"({"principals": [{"name": "ci", "token_sha256": ")" + std::string(64, 'A') +
          R"(", "rights": {"*": ["read"], "deploy": ["decide", "execute"]}}]})",
      "p.json");
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].token_sha256 == hex);
  CHECK(ok[0].on("deploy") ==
        (static_cast<cs::Rights>(cs::Right::read) | static_cast<cs::Rights>(cs::Right::decide) |
         static_cast<cs::Rights>(cs::Right::execute)));
  CHECK(ok[0].on("other") == static_cast<cs::Rights>(cs::Right::read));
}

TEST_CASE("Service: tasks added at run time, listed, and measured", "[server][service]") {
  cs::Service s({});
  auto r = call(s, "POST", "/v1/tasks", spec_text("examples/quickstart.json"));
  REQUIRE(r.status == 201);
  REQUIRE(body_of(r)["task"] == "quickstart");
  REQUIRE(body_of(r)["actions"] == json::array({"process_batch"}));
  r = call(s, "GET", "/v1/tasks");
  REQUIRE(body_of(r)["tasks"].size() == 1);
  call(s, "POST", "/v1/tasks/quickstart/execute", R"({"action":"process_batch"})");
  call(
      s, "POST", "/v1/tasks/quickstart/evaluate", R"({"action":"process_batch","params":{"z":1}})");
  r = call(s, "GET", "/metrics");
  REQUIRE(r.content_type.starts_with("text/plain"));
  CHECK_THAT(
      r.body,
      Catch::Matchers::Contains(
          R"(clampai_decisions_total{task="quickstart",endpoint="execute",outcome="approved"} 1)"));
  CHECK_THAT(r.body,
             Catch::Matchers::Contains(
                 R"(clampai_rejections_total{task="quickstart",reason="invalid_parameter"} 1)"));
  CHECK_THAT(r.body,
             Catch::Matchers::Contains("clampai_request_duration_seconds_bucket{le=\"+Inf\"}"));
  r = call(
      s,
      "POST",
      "/v1/tasks",
      R"({"name":"has space","variables":{},"actions":[],"budget":{"total":1,"min_action_cost":1}})");
  CHECK(r.status == 400);
}

TEST_CASE("Service: rollback undoes the last commit, and the trace streams as JSON Lines",
          "[server][service]") {
  cs::Service s({});
  s.add_task(spec_text(), "autoscale.json");
  call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})");
  auto r =
      call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":3}})");
  const auto seq = body_of(r)["sequence"].get<std::uint64_t>();
  r = call(
      s, "POST", "/v1/tasks/autoscale/rollback", R"({"sequence":)" + std::to_string(seq - 1) + "}");
  CHECK(r.status == 409);  // not the most recent
  r = call(s, "POST", "/v1/tasks/autoscale/rollback", "{}");
  REQUIRE(r.status == 200);
  CHECK(body_of(r)["state"]["instances"] == 5);
  r = call(s, "GET", "/v1/tasks/autoscale/trace");
  REQUIRE(r.content_type == "application/jsonl");
  const std::string lines = drain(r);
  const std::string file = clampai::test::temp_file("trace.jsonl");
  std::ofstream(file) << lines;
  const ck::TraceCheck check = ck::verify_trace_file(file, /*allow_unsealed=*/true);
  CHECK(check.ok);
  CHECK(check.entries == 4);  // genesis, two executions, the rollback
}

TEST_CASE("Service: a request whose body could not be read is refused, never taken as empty",
          "[server][service]") {
  // Issue 35: `Transfer-Encoding: gzip` on a rollback of sequence 999999 was read as an empty
  // body, and the rollback undid the latest commit. The transport now says the body is lost,
  // and no route reads it as empty.
  cs::Service s({});
  s.add_task(spec_text(), "autoscale.json");
  auto r =
      call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})");
  REQUIRE(r.status == 200);
  for (const std::string op : {"rollback", "execute", "evaluate"}) {
    cs::Request req{"POST", "/v1/tasks/autoscale/" + op, "", ""};
    req.body_unreadable = "Transfer-Encoding `gzip`: its length cannot be determined";
    r = s.handle(req);
    CHECK(r.status == 400);
    CHECK(code_of(r) == "malformed_request");
    CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
               Catch::Matchers::Contains("Transfer-Encoding `gzip`"));
  }
  r = call(s, "GET", "/v1/tasks/autoscale/state");
  CHECK(body_of(r)["steps"] == 1);  // nothing rolled back
  r = call(s, "GET", "/metrics");
  CHECK_THAT(r.body, Catch::Matchers::Contains("clampai_malformed_requests_total 3\n"));
  CHECK_THAT(r.body, Catch::Matchers::Contains("clampai_accept_errors_total 0\n"));
  s.note_accept_error("Too many open files");
  r = call(s, "GET", "/metrics");
  CHECK_THAT(r.body, Catch::Matchers::Contains("clampai_accept_errors_total 1\n"));
}

TEST_CASE("Service: lookahead, repair and verify answer with the command line's reports",
          "[server][service][slow]") {
  cs::Service s({});
  s.add_task(spec_text(), "autoscale.json");
  auto r = call(s,
                "POST",
                "/v1/tasks/autoscale/lookahead",
                R"({"action":"scale_up","params":{"n":1},"depth":2})");
  REQUIRE(r.status == 200);
  CHECK(body_of(r)["depth"] == 2);
  r = call(s, "POST", "/v1/tasks/autoscale/lookahead", R"({"action":"scale_up","depth":99})");
  CHECK(r.status == 400);
  r = call(s, "POST", "/v1/tasks/autoscale/repair", R"({"action":"scale_up","params":{"n":50}})");
  REQUIRE(r.status == 200);
  CHECK(body_of(r)["status"] == "repaired");
  r = call(s, "POST", "/v1/tasks/autoscale/repair", R"({"action":"scale_up","params":{"m":5}})");
  CHECK(r.status == 400);
  CHECK(code_of(r) == "invalid_params");
  r = call(s, "POST", "/v1/tasks/autoscale/verify");
  REQUIRE(r.status == 200);
  CHECK(body_of(r).contains("obligations"));
}

TEST_CASE("Service: a restart resumes a trace larger than the input limit, read as it streams",
          "[server][service][durability]") {
  const std::string dir = fresh_dir();
  cs::ServiceOptions o;
  o.data_dir = dir;
  std::string state;
  {
    cs::Service s(o);
    s.add_task(spec_text(), "autoscale.json");
    for (int i = 0; i < 30; ++i) {
      const auto r = call(s,
                          "POST",
                          "/v1/tasks/autoscale/execute",
                          std::string(R"({"action":"set_throttle","params":{"fraction":)") +
                              (i % 2 == 0 ? "0.5" : "0.6") + "}}");
      REQUIRE(body_of(r)["approved"] == true);
    }
    state = call(s, "GET", "/v1/tasks/autoscale/state").body;
  }
  // The limit is for specs and requests (the spec, about 2 KiB, is read within it), never for
  // a trace: a restart used to refuse the task's trace as too large.
  struct Limit {
    std::size_t before = ck::max_input_bytes();
    Limit() { ck::set_max_input_bytes(4096); }
    ~Limit() { ck::set_max_input_bytes(before); }
    Limit(const Limit&) = delete;
    Limit& operator=(const Limit&) = delete;
  } limit;
  REQUIRE(fs::file_size(dir + "/autoscale.jsonl") > 3 * ck::max_input_bytes());
  {
    cs::Service s(o);
    REQUIRE(s.task_names() == std::vector<std::string>{"autoscale"});
    REQUIRE(call(s, "GET", "/v1/tasks/autoscale/state").body == state);
    s.shutdown();  // sealed
  }
  {
    cs::Service s(o);  // the sealed trace is kept whole; the live one continues before the seal
    REQUIRE(body_of(call(s, "GET", "/v1/tasks/autoscale/state"))["state"] ==
            json::parse(state)["state"]);
    const auto r = call(s, "POST", "/v1/tasks/autoscale/rollback", "{}");
    REQUIRE(r.status == 200);  // the receipts are rebuilt from the trace as it streams
  }
  REQUIRE(ck::verify_trace_file(dir + "/autoscale.jsonl", /*allow_unsealed=*/true).ok);
}

TEST_CASE("Service: with a data directory, a restarted server resumes every task from its trace",
          "[server][service][durability]") {
  const std::string dir = fresh_dir();
  cs::ServiceOptions o;
  o.data_dir = dir;
  std::string state;
  {
    cs::Service s(o);
    s.add_task(spec_text(), "autoscale.json");
    for (int n : {1, 2, 50, 3})
      call(s,
           "POST",
           "/v1/tasks/autoscale/execute",
           R"({"action":"scale_up","params":{"n":)" + std::to_string(n) + "}}");
    state = call(s, "GET", "/v1/tasks/autoscale/state").body;
    // Destroyed without shutdown: as after kill -9, only what was flushed remains.
  }
  REQUIRE(fs::exists(dir + "/autoscale.jsonl"));
  REQUIRE(fs::exists(dir + "/autoscale.spec.json"));
  {
    cs::Service s(o);  // restored from the directory alone
    REQUIRE(s.task_names() == std::vector<std::string>{"autoscale"});
    REQUIRE(call(s, "GET", "/v1/tasks/autoscale/state").body == state);
    // A torn last line (a crash mid-write) is dropped on the next start.
  }
  const auto size = fs::file_size(dir + "/autoscale.jsonl");
  std::ofstream(dir + "/autoscale.jsonl", std::ios::app) << "{\"action\":\"scale";
  {
    cs::Service s(o);
    REQUIRE(fs::file_size(dir + "/autoscale.jsonl") == size);
    REQUIRE(call(s, "GET", "/v1/tasks/autoscale/state").body == state);
    s.add_task(spec_text(), "autoscale.json");  // the same spec again: kept
    call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})");
    state = call(s, "GET", "/v1/tasks/autoscale/state").body;
    s.shutdown();  // SIGTERM: sealed and flushed
    auto r = call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up"})");
    CHECK(r.status == 409);
    CHECK(code_of(r) == "task_sealed");
  }
  REQUIRE(ck::verify_trace_file(dir + "/autoscale.jsonl").sealed);
  {
    cs::Service s(o);
    auto after = body_of(call(s, "GET", "/v1/tasks/autoscale/state"));
    auto expected = json::parse(state);
    expected["trace_entries"] = after["trace_entries"];  // the seal is archived, not counted
    REQUIRE(after == expected);
    const auto sealed_copies = std::count_if(
        fs::directory_iterator(dir), fs::directory_iterator(), [](const fs::directory_entry& e) {
          return e.path().string().ends_with(".sealed.jsonl");
        });
    REQUIRE(sealed_copies == 1);
    // T1 across the restarts.
    REQUIRE(after["budget"]["remaining"].get<std::string>().front() != '-');
    // Rollback works across restarts: the receipts and undo records are rebuilt from the trace.
    const auto r = call(s, "POST", "/v1/tasks/autoscale/rollback", "{}");
    REQUIRE(r.status == 200);
    REQUIRE(body_of(r)["state"]["instances"] == expected["state"]["instances"].get<int>() - 1);
  }
  const auto model = ck::load_spec(spec_text());
  REQUIRE(!ck::replay_trace(model, ck::read_trace_file(dir + "/autoscale.jsonl")).has_value());
  // Another spec under the same name is refused at start.
  std::string other = spec_text();
  other.replace(other.find("\"initial\": 4"), 12, "\"initial\": 5");
  cs::Service s(o);
  REQUIRE_THROWS_WITH(s.add_task(other, "other.json"), Catch::Matchers::Contains("differs"));
}

TEST_CASE("Service: POST /v1/tasks over an orphan trace is 409, leaves nothing, and restarts",
          "[server][service][durability]") {
  // An orphan: the sealed trace of a task whose spec file is gone (or an earlier server's).
  const std::string dir = fresh_dir();
  cs::ServiceOptions o;
  o.data_dir = dir;
  {
    cs::Service s(o);
    s.add_task(spec_text(), "autoscale.json");
    call(s, "POST", "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})");
    s.shutdown();
  }
  fs::remove(dir + "/autoscale.spec.json");
  const std::string orphan = dir + "/autoscale.jsonl";
  const std::string before = read(orphan);
  const auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  };
  REQUIRE(listing() == std::vector<std::string>{"autoscale.jsonl"});
  std::string other = spec_text();
  other.replace(other.find("\"initial\": 4"), 12, "\"initial\": 5");
  {
    cs::Service s(o);
    REQUIRE(s.task_names().empty());
    for (const std::string& spec : {other, spec_text()}) {
      const auto r = call(s, "POST", "/v1/tasks", spec);
      CHECK(r.status == 409);
      CHECK(code_of(r) == "task_exists");
      CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
                 Catch::Matchers::Contains("`" + orphan + "`") &&
                     Catch::Matchers::Contains("move it away or remove it"));
      // Nothing left behind: no spec, no archive, the trace as it was.
      CHECK(listing() == std::vector<std::string>{"autoscale.jsonl"});
      CHECK(read(orphan) == before);
    }
    CHECK(s.task_names().empty());
  }
  {
    cs::Service s(o);  // the directory still starts
    CHECK(s.task_names().empty());
  }
  // Once the orphan is moved away, the task is added, and a restart resumes it.
  fs::rename(orphan, dir + "/old.jsonl.bak");
  {
    cs::Service s(o);
    const auto r = call(s, "POST", "/v1/tasks", other);
    REQUIRE(r.status == 201);
    CHECK(listing() ==
          std::vector<std::string>{"autoscale.jsonl", "autoscale.spec.json", "old.jsonl.bak"});
    CHECK(read(dir + "/autoscale.spec.json") == other);
  }
  cs::Service s(o);
  CHECK(s.task_names() == std::vector<std::string>{"autoscale"});
  CHECK(body_of(call(s, "GET", "/v1/tasks/autoscale/state"))["state"]["instances"] == 5);
}

TEST_CASE("Service: the JSON depth limit is exact and configurable, and changes nothing",
          "[server][service]") {
  cs::ServiceOptions o;
  o.limits.max_json_depth = 4;
  cs::Service s(o);
  s.add_task(spec_text(), "autoscale.json");
  const std::string before = call(s, "GET", "/v1/tasks/autoscale/state").body;
  const auto nested = [](std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
  };
  for (const std::string route : {"/v1/tasks/autoscale/evaluate",
                                  "/v1/tasks/autoscale/execute",
                                  "/v1/tasks/autoscale/rollback",
                                  "/v1/tasks"}) {
    CAPTURE(route);
    // Four levels are within the limit: refused for what they are, not for their depth.
    auto r = call(s, "POST", route, nested(4));
    CHECK(r.status == 400);
    CHECK(code_of(r) != "json_too_deep");
    r = call(s, "POST", route, nested(5));
    CHECK(r.status == 400);
    CHECK(code_of(r) == "json_too_deep");
    CHECK_THAT(body_of(r)["error"]["message"].get<std::string>(),
               Catch::Matchers::Contains("request body") &&
                   Catch::Matchers::Contains("nested more than 4"));
    // Deep inside an otherwise valid body.
    r = call(s, "POST", route, R"({"action":"scale_up","params":{"n":)" + nested(4) + "}}");
    CHECK(code_of(r) == "json_too_deep");
  }
  CHECK(call(s, "GET", "/v1/tasks/autoscale/state").body == before);
  // The default limit, 32 levels.
  cs::Service d({});
  d.add_task(spec_text(), "autoscale.json");
  CHECK(code_of(call(d, "POST", "/v1/tasks/autoscale/evaluate", nested(32))) == "invalid_request");
  CHECK(code_of(call(d, "POST", "/v1/tasks/autoscale/evaluate", nested(33))) == "json_too_deep");
}

TEST_CASE("Service: malformed requests are counted, and their rate logged at most every 10 s",
          "[server][service]") {
  std::vector<std::string> lines;
  cs::ServiceOptions o;
  o.log = [&](const std::string& line) { lines.push_back(line); };
  cs::Service s(o);
  s.add_task(spec_text(), "autoscale.json");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 30; ++i)
    (void)call(s, "POST", "/v1/tasks/autoscale/evaluate", "{\"action\": " + std::to_string(i));
  s.note_refused(413, "body_too_large");  // as the transport reports what it refused
  s.note_refused(431, "headers_too_large");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The first is logged at once with its code and message; the others fall within the same
  // 10 s (a line for each further 10 s the loop may have taken on a slow machine).
  REQUIRE(!lines.empty());
  CHECK(lines.size() <= 1 + static_cast<std::size_t>(seconds / 10));
  CHECK_THAT(lines.front(),
             Catch::Matchers::StartsWith("1 malformed request(s) (1 in all); the last: 400 "
                                         "malformed_json: request body:"));
  // Requests that are refused for another reason than their form are not counted.
  (void)call(s, "POST", "/v1/tasks/nope/evaluate", "{}");
  const std::string metrics = call(s, "GET", "/metrics").body;
  CHECK_THAT(metrics, Catch::Matchers::Contains("clampai_malformed_requests_total 32\n"));
  CHECK_THAT(metrics,
             Catch::Matchers::Contains("clampai_http_responses_total{status=\"413\"} 1\n"));
  CHECK_THAT(metrics,
             Catch::Matchers::Contains("clampai_http_responses_total{status=\"400\"} 30\n"));
}

TEST_CASE("McpSession: tools from the actions, calls decided by the kernel", "[server][mcp]") {
  cs::McpSession m(ck::load_spec(spec_text()));
  const auto ask = [&](const std::string& msg) { return json::parse(m.handle(msg)); };
  auto r = ask(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  CHECK(r["result"]["protocolVersion"] == "2025-06-18");
  r = ask(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}})");
  CHECK(r["result"]["protocolVersion"] == std::string(cs::mcp_protocol_versions[0]));
  CHECK(m.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  r = ask(R"({"jsonrpc":"2.0","id":"a","method":"tools/list"})");
  REQUIRE(r["id"] == "a");
  const auto& tools = r["result"]["tools"];
  REQUIRE(tools.size() == 2 + 3);
  CHECK(tools[0]["name"] == "scale_up");
  CHECK(tools[0]["inputSchema"]["properties"]["n"]["type"] == "integer");
  CHECK(tools[0]["inputSchema"]["properties"]["n"]["maximum"] == 100);
  r = ask(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"scale_up","arguments":{"n":2}}})");
  CHECK(r["result"]["isError"] == false);
  CHECK(r["result"]["structuredContent"]["state"]["instances"] == 6);
  r = ask(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"scale_up","arguments":{"n":50}}})");
  CHECK(r["result"]["isError"] == true);
  CHECK(r["result"]["structuredContent"]["approved"] == false);
  CHECK(r["result"]["structuredContent"]["closest_approved_params"]["n"].is_number());
  r = ask(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"status"}})");
  CHECK(r["result"]["structuredContent"]["state"]["instances"] ==
        6);  // the rejection changed nothing
  r = ask(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"scale_upp"}})");
  CHECK(r["error"]["code"] == -32602);
  CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Matchers::Contains("unknown tool"));
  r = ask(
      R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"scale_up","arguments":{"n":"two"}}})");
  CHECK(r["error"]["code"] == -32602);
  r = ask(
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"scale_up","arguments":{"n":1.5}}})");
  CHECK(r["error"]["code"] == -32602);
  r = ask(R"({"jsonrpc":"2.0","id":8,"method":"resources/list"})");
  CHECK(r["error"]["code"] == -32601);
  r = ask("{not json");
  CHECK(r["error"]["code"] == -32700);
  CHECK(r["id"].is_null());
  r = ask(R"({"id":9,"method":"ping"})");
  CHECK(r["error"]["code"] == -32600);
  r = ask(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  CHECK(r["error"]["code"] == -32600);
  r = ask(R"({"jsonrpc":"2.0","id":10,"method":"ping"})");
  CHECK(r["result"] == json::object());
}

TEST_CASE("McpSession: the reports of lookahead and repair are answered on one line",
          "[server][mcp]") {
  // Found by fuzz_mcp: the reports were inserted indented, so the answer spanned many lines
  // and broke the stdio transport (one message a line).
  cs::McpSession m(ck::load_spec(spec_text()));
  for (
      const std::string msg :
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookahead","arguments":{"action":"scale_up","params":{"n":1},"depth":2}}})",
       R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"repair","arguments":{"action":"scale_up","params":{"n":50}}}})"}) {
    const std::string answer = m.handle(msg);
    CAPTURE(answer);
    CHECK(answer.find('\n') == std::string::npos);
    const json r = json::parse(answer);
    CHECK(r["result"]["isError"] == false);
    // The structured content is the same report as the text.
    CHECK(r["result"]["structuredContent"] ==
          json::parse(r["result"]["content"][0]["text"].get<std::string>()));
  }
}

TEST_CASE("McpSession: an action named like a built-in tool is refused", "[server][mcp]") {
  std::string spec = spec_text("examples/quickstart.json");
  spec.replace(spec.find("\"process_batch\""), 15, "\"status\"");
  REQUIRE_THROWS_WITH(cs::McpSession(ck::load_spec(spec)),
                      Catch::Matchers::Contains("action `status` has the name of a built-in tool"));
}

TEST_CASE("McpSession: valid JSON refused is answered with its id when it can be read",
          "[server][mcp]") {
  // Issue 35: a number beyond the fixed-point range or a duplicate key was answered with
  // `id: null` although the id was there to read.
  cs::McpSession m(ck::load_spec(spec_text()));
  const auto ask = [&](const std::string& msg) { return json::parse(m.handle(msg)); };
  const std::string call = R"("method":"tools/call","params":{"name":"scale_up","arguments":)";
  struct Case {
    std::string message;
    json id;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"jsonrpc":"2.0","id":7,)" + call + R"({"n":1e400}}})", 7},
           {R"({"jsonrpc":"2.0",)" + call + R"({"n":1e400}},"id":"after"})", "after"},
           {R"({"jsonrpc":"2.0",)" + call + R"({"n":1e400,"m":-1e999}},"id":8})", 8},
           {R"({"jsonrpc":"2.0","id":9,)" + call + R"({"n":1,"n":2}}})", 9},
           {R"({"jsonrpc":"2.0","jsonrpc":"2.0","method":"ping","id":10})", 10},
           {R"({"jsonrpc":"2.0","method":"ping","id":null,"x":1e400})", nullptr},
           // No id to read: twice, beyond range, not a string or an integer, or not there.
           {R"({"jsonrpc":"2.0","method":"ping","id":1,"id":2})", nullptr},
           {R"({"jsonrpc":"2.0","method":"ping","id":1e400})", nullptr},
           {R"({"jsonrpc":"2.0","method":"ping","id":{"a":1},"b":1e400})", nullptr},
           {R"({"jsonrpc":"2.0","method":"ping","id":1.5,"b":1e400})", nullptr},
           {R"({"jsonrpc":"2.0","method":"ping","b":1e400})", nullptr},
           {R"([{"id":1,"a":1e400}])", nullptr},
       }) {
    CAPTURE(c.message);
    const json r = ask(c.message);
    CHECK(r["id"] == c.id);
    CHECK(r["error"]["code"] == -32600);  // JSON, but not a request this server takes
    CHECK_THAT(r["error"]["message"].get<std::string>(),
               Catch::Matchers::StartsWith("invalid request: "));
  }
  // Malformed JSON is a parse error, its id unread.
  for (const std::string bad : {R"({"jsonrpc":"2.0","id":5,"method":"ping")",
                                R"({"jsonrpc":"2.0","id":5,"x":1e400,})",
                                R"({"id":5} x)"}) {
    CAPTURE(bad);
    const json r = ask(bad);
    CHECK(r["error"]["code"] == -32700);
    CHECK(r["id"].is_null());
  }
  CHECK(ask(R"({"jsonrpc":"2.0","id":11,"method":"ping"})")["result"] == json::object());
}

namespace {

// A stream of one line of `size` bytes (made as it is read, never held), then `rest`; it notes
// the most memory the heap held while the line was being read.
class LongLine : public std::streambuf {
 public:
  LongLine(std::size_t size, std::string rest) : left_(size), rest_(std::move(rest)) {}
  std::size_t peak_growth() const { return peak_ - base_; }

 protected:
  int_type underflow() override {
    if (left_ > 0) {
      note_heap();
      const std::size_t n = std::min(left_, block_.size());
      left_ -= n;
      setg(block_.data(), block_.data(), block_.data() + n);
    } else if (!rest_done_) {
      rest_done_ = true;
      setg(rest_.data(), rest_.data(), rest_.data() + rest_.size());
    } else {
      return traits_type::eof();
    }
    return gptr() == egptr() ? traits_type::eof() : traits_type::to_int_type(*gptr());
  }

 private:
  void note_heap() {
    const struct mallinfo2 mi = mallinfo2();
    const std::size_t used = mi.uordblks + mi.hblkhd;
    if (base_ == 0) base_ = used;
    peak_ = std::max(peak_, used);
  }

  std::size_t left_;
  std::string rest_;
  bool rest_done_ = false;
  std::array<char, 1 << 16> block_ = [] {
    std::array<char, 1 << 16> a{};
    a.fill('a');
    return a;
  }();
  std::size_t base_ = 0;
  std::size_t peak_ = 0;
};

std::vector<json> answers_of(const std::string& out) {
  std::vector<json> all;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) all.push_back(json::parse(line));
  return all;
}

}  // namespace

TEST_CASE("serve_mcp: an over-long line is discarded as it is read, and the session goes on",
          "[server][mcp]") {
  // Issue 35: a whole line was read before the 1 MiB limit applied (a 64 MiB line cost 200 MB,
  // a larger one all memory). Now memory stays within the limit, whatever the line.
  constexpr std::size_t kLimit = std::size_t{1} << 20;
  LongLine in_buf(64 * kLimit, "\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
  std::istream in(&in_buf);
  std::ostringstream out;
  CHECK(cs::serve_mcp(ck::load_spec(spec_text()), in, out) == 0);
  const auto answers = answers_of(out.str());
  REQUIRE(answers.size() == 2);
  CHECK(answers[0]["id"].is_null());
  CHECK(answers[0]["error"]["code"] == -32600);
  CHECK_THAT(answers[0]["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("longer than 1048576 bytes"));
  CHECK(answers[1]["id"] == 1);
  CHECK(answers[1]["result"] == json::object());
  // The heap grew by less than the limit and one block (getline had held all 64 MiB).
  CHECK(in_buf.peak_growth() < kLimit + (std::size_t{1} << 18));

  // The limit is exact; a last line without its newline is read all the same.
  const std::string fits = "[" + std::string(kLimit - 2, ' ') + "]";
  std::istringstream exact(fits + "\n" + fits + " \n" +
                           R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  out.str("");
  CHECK(cs::serve_mcp(ck::load_spec(spec_text()), exact, out) == 0);
  const auto more = answers_of(out.str());
  REQUIRE(more.size() == 3);
  CHECK_THAT(more[0]["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("batches are not supported"));
  CHECK_THAT(more[1]["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains("longer than 1048576 bytes"));
  CHECK(more[2]["id"] == 2);
}

// Budget pools (issue 41): tasks served in one pool tree; a charge that one level cannot take
// is refused naming it, and GET /v1/pools and /metrics show the spend at every level.
TEST_CASE("Service: tasks in budget pools, GET /v1/pools and the pools' metrics",
          "[server][service][pools]") {
  const auto pooled = [](const std::string& name, const std::string& pool) {
    return R"({"name": ")" + name + R"(", "variables": {"n": {"type": "int", "initial": 0}},
      "actions": [{"id": "spend", "cost": 3, "effects": [{"variable": "n", "mode": "increment",
        "value": 1}]}],
      "budget": {"total": 20, "min_action_cost": 1, "pool": ")" +
           pool + R"("}})";
  };
  {
    cs::Service bare({});
    REQUIRE_THROWS_WITH(bare.add_task(pooled("a", "team-a"), "a.json"), Catch::Contains("--pools"));
    const auto r = call(bare, "GET", "/v1/pools");
    REQUIRE(r.status == 200);
    REQUIRE(body_of(r)["pools"].empty());
  }
  cs::ServiceOptions o;
  o.pools = ck::load_pools(R"({"pools": {"org": {"total": 10},
      "team-a": {"total": 7, "parent": "org"}, "team-b": {"total": 20, "parent": "org"}}})");
  cs::Service s(o);
  s.add_task(pooled("a", "team-a"), "a.json");
  s.add_task(pooled("b", "team-b"), "b.json");
  REQUIRE(body_of(call(s, "POST", "/v1/tasks/a/execute", R"({"action":"spend"})"))["executed"] ==
          true);
  auto r = call(s, "POST", "/v1/tasks/a/execute", R"({"action":"spend"})");
  REQUIRE(body_of(r)["executed"] == true);
  // The charge at every level, the task's own pool first.
  REQUIRE(body_of(r)["pools"].size() == 2);
  REQUIRE(body_of(r)["pools"][0]["pool"] == "team-a");
  REQUIRE(body_of(r)["pools"][0]["amount"] == "3.000");
  REQUIRE(body_of(r)["pools"][0]["net"] == "6.000");
  REQUIRE(body_of(r)["pools"][1]["pool"] == "org");
  // team-a has 1 left.
  r = call(s, "POST", "/v1/tasks/a/execute", R"({"action":"spend"})");
  REQUIRE(r.status == 200);
  REQUIRE(body_of(r)["executed"] == false);
  REQUIRE(body_of(r)["reasons"][0]["code"] == "budget_exceeded");
  REQUIRE(body_of(r)["reasons"][0]["subject"] == "pool:team-a");
  // org has 4 left: b's first charge fits, its second is refused by org.
  REQUIRE(body_of(call(s, "POST", "/v1/tasks/b/execute", R"({"action":"spend"})"))["executed"] ==
          true);
  r = call(s, "POST", "/v1/tasks/b/evaluate", R"({"action":"spend"})");
  REQUIRE(body_of(r)["approved"] == false);
  REQUIRE(body_of(r)["reasons"][0]["subject"] == "pool:org");
  r = call(s, "GET", "/v1/pools");
  REQUIRE(r.status == 200);
  const json pools = body_of(r)["pools"];
  REQUIRE(pools.size() == 3);
  REQUIRE(pools[0]["name"] == "org");
  REQUIRE(pools[0]["parent"].is_null());
  REQUIRE(pools[0]["net"] == "9.000");
  REQUIRE(pools[0]["remaining"] == "1.000");
  REQUIRE(pools[1]["name"] == "team-a");
  REQUIRE(pools[1]["net"] == "6.000");
  REQUIRE(pools[1]["tasks"] == 1);
  REQUIRE(pools[2]["net"] == "3.000");
  REQUIRE(call(s, "POST", "/v1/pools").status == 405);
  // A task added at run time in an unknown pool, or in none while the server has none: 400.
  r = call(s, "POST", "/v1/tasks", pooled("c", "team-c"));
  REQUIRE(r.status == 400);
  REQUIRE(code_of(r) == "invalid_spec");
  REQUIRE(body_of(r)["error"]["message"].get<std::string>().find("team-c") != std::string::npos);
  REQUIRE(call(s, "POST", "/v1/tasks", pooled("c", "team-b")).status == 201);
  r = call(s, "GET", "/metrics");
  REQUIRE(r.body.find("clampai_pool_net{pool=\"org\"} 9.000") != std::string::npos);
  REQUIRE(r.body.find("clampai_pool_total{pool=\"team-a\"} 7.000") != std::string::npos);
  // A rollback returns to every level.
  REQUIRE(call(s, "POST", "/v1/tasks/b/rollback").status == 200);
  REQUIRE(body_of(call(s, "GET", "/v1/pools"))["pools"][0]["net"] == "6.000");
  REQUIRE(body_of(call(s, "GET", "/v1/pools"))["pools"][0]["gross"] == "9.000");
}
