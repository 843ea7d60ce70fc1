// The served task of the kill -9 approval test (approval_crash_test.py): the server's own code
// (`Service`, in process) on a data directory, stopped at the narrowest windows of an approval.
//   ask DIR                  alice asks for `pay` 3: prints the ticket
//   grant DIR TICKET WINDOW  bob approves it, and the process stops for good (DIR/paused, then
//                            waits to be killed) at WINDOW: `granted` (the `approval_granted`
//                            entry is in the trace file, the commit not yet: the pause is in
//                            the clock the kernel reads for the commit's entry) or `committed`
//                            (the commit is in the file, the answer not yet returned)
//   check DIR TICKET         restarts from DIR and prints what it finds (JSON): the pending
//                            tickets, the state, the budget, the `pay` commits in the trace,
//                            and what answering the ticket again gives
// A pause waits at most 120 s, then exits 3 (so nothing outlives a broken test).
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "clampai/kernel.hpp"
#include "clampai/server.hpp"

namespace cs = clampai::server;
namespace ck = clampai::kernel;
using nlohmann::json;

namespace {

const char* kSpec = R"J({"name": "pay",
  "variables": {"balance": {"type": "int", "initial": 10}, "paid": {"type": "int", "initial": 0}},
  "actions": [
    {"id": "pay", "cost": 1, "parameters": {"amount": {"type": "int", "min": 1, "max": 100}},
     "approval": {"ttl_s": 60},
     "effects": [{"variable": "balance", "mode": "decrement", "value": "amount"},
                 {"variable": "paid", "mode": "increment", "value": "amount"}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

constexpr std::int64_t kStart = 1'800'000'000'000'000;

std::string token(const std::string& who) { return "token-of-" + who + "-0123456789"; }

std::string principals() {
  json list = json::array();
  list.push_back({{"name", "alice"},
                  {"token_sha256", ck::sha256_hex(token("alice"))},
                  {"rights", {{"*", {"read", "execute"}}}}});
  list.push_back({{"name", "bob"},
                  {"token_sha256", ck::sha256_hex(token("bob"))},
                  {"rights", {{"*", {"read", "approve"}}}}});
  return json{{"principals", list}}.dump();
}

std::string dir;
std::atomic<bool> armed{false};

[[noreturn]] void pause_for_good() {
  std::ofstream(dir + "/paused") << "paused\n";
  for (int i = 0; i < 120 * 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::_Exit(3);
}

// The kind of the trace file's last entry.
std::string last_kind() {
  std::ifstream in(dir + "/pay.jsonl");
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  if (last.empty()) return "";
  return json::parse(last).value("kind", "");
}

std::unique_ptr<cs::Service> open_service() {
  cs::ServiceOptions o;
  o.principals = cs::parse_principals(principals(), "principals.json");
  o.data_dir = dir;
  o.clock = [] {
    if (armed && last_kind() == "approval_granted") pause_for_good();
    return kStart;
  };
  auto s = std::make_unique<cs::Service>(std::move(o));
  s->add_task(kSpec, "pay.json");
  return s;
}

cs::Response call(cs::Service& s,
                  const std::string& method,
                  const std::string& target,
                  const std::string& body,
                  const std::string& who) {
  return s.handle({method, target, "Bearer " + token(who), body, ""});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string mode = argv[1];
  dir = argv[2];
  auto service = open_service();
  if (mode == "ask") {
    const auto r = call(*service,
                        "POST",
                        "/v1/tasks/pay/execute",
                        R"({"action": "pay", "params": {"amount": 3}})",
                        "alice");
    if (r.status != 200) return 1;
    std::cout << json::parse(r.body).at("ticket").get<std::string>() << "\n";
    return 0;  // no shutdown: no seal, as a crash leaves it
  }
  if (mode == "grant" && argc == 5) {
    const std::string window = argv[4];
    armed = window == "granted";
    (void)call(*service,
               "POST",
               "/v1/tasks/pay/approvals/" + std::string(argv[3]),
               R"({"approve": true})",
               "bob");
    pause_for_good();  // `committed`: the answer is never returned
  }
  if (mode == "check" && argc == 4) {
    json out;
    out["pending"] = json::parse(call(*service, "GET", "/v1/tasks/pay/approvals", "", "bob").body);
    const json state = json::parse(call(*service, "GET", "/v1/tasks/pay/state", "", "bob").body);
    out["state"] = state;
    const auto again = call(*service,
                            "POST",
                            "/v1/tasks/pay/approvals/" + std::string(argv[3]),
                            R"({"approve": true})",
                            "bob");
    out["again_status"] = again.status;
    out["again"] = json::parse(again.body);
    auto t = call(*service, "GET", "/v1/tasks/pay/trace", "", "bob");
    std::string all, chunk;
    while (t.next_chunk && t.next_chunk(chunk)) all += chunk;
    json kinds = json::array();
    std::size_t at = 0;
    while (at < all.size()) {
      const std::size_t nl = all.find('\n', at);
      const json e = json::parse(all.substr(at, nl - at));
      kinds.push_back(e.value("kind", "") + ":" + e.value("action", ""));
      at = nl + 1;
    }
    out["trace"] = kinds;
    std::cout << out.dump() << "\n";
    return 0;
  }
  return 2;
}
