// The server's part of issue 40's signed traces and decision log: every entry a request causes
// records its principal, seals and checkpoints are signed, and each decision is a log line.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
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

const std::string kToken = "a-token-of-twenty-bytes";

std::vector<json> json_lines(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

std::string fresh(const std::string& name) {
  const std::string path = clampai::test::temp_file(name);
  fs::remove_all(path);
  return path;
}

cs::Response call(cs::Service& s, const std::string& target, const std::string& body, bool auth) {
  return s.handle({"POST", target, auth ? "Bearer " + kToken : "", body});
}

}  // namespace

TEST_CASE("Serve: entries record the principal, seals and checkpoints are signed, decisions logged",
          "[server][sign]") {
  const bool auth = GENERATE(true, false);
  INFO("auth " << auth);
  const std::string dir = fresh("signed-data");
  fs::create_directories(dir);
  const std::string log = fresh("decisions.jsonl");
  const auto key = std::make_shared<ck::SigningKey>(ck::SigningKey::generate());
  cs::ServiceOptions o;
  o.data_dir = dir;
  if (auth) o.token = kToken;
  o.signer = [key](std::string_view bytes) { return key->sign_hex(bytes); };
  o.checkpoint_every = 2;
  o.decision_log = log;
  std::uint64_t committed_at = 0;
  {
    cs::Service s(o);
    s.add_task(ck::read_text_file(clampai::test::source_path("examples/autoscale.json")), "a.json");
    auto r =
        call(s, "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})", auth);
    REQUIRE(r.status == 200);
    committed_at = json::parse(r.body)["sequence"].get<std::uint64_t>();
    r = call(
        s, "/v1/tasks/autoscale/evaluate", R"({"action":"scale_up","params":{"n":1000}})", auth);
    REQUIRE(r.status == 200);
    r = call(s, "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":2}})", auth);
    REQUIRE(r.status == 200);
    r = call(s, "/v1/tasks/autoscale/rollback", "{}", auth);
    REQUIRE(r.status == 200);
    // Log rotation: the file moved away, the log reopened; the next line goes to a new file.
    fs::rename(log, log + ".1");
    s.reopen_decision_log();
    r = call(s, "/v1/tasks/autoscale/execute", R"({"params":{"n":1},"action":"scale_up"})", auth);
    REQUIRE(r.status == 200);
    s.shutdown();
  }
  const std::string trace = (fs::path(dir) / "autoscale.jsonl").string();
  const std::vector<json> entries = json_lines(trace);
  std::size_t checkpoints = 0;
  for (const json& e : entries) {
    INFO(e.dump());
    const std::string kind = e["kind"];
    if (kind == "executed" || kind == "rolled_back") {
      if (auth) {
        CHECK(e["principal"] == "token");
      } else {
        CHECK_FALSE(e.contains("principal"));
      }
    }
    if (kind == "checkpoint") ++checkpoints;
    CHECK(e.contains("signature") == (kind == "checkpoint" || kind == "sealed"));
  }
  CHECK(checkpoints >= 2);
  CHECK(entries.back()["kind"] == "sealed");
  {
    ck::TraceReader reader(trace);
    const ck::SignatureCheck c =
        ck::check_signatures(reader, ck::VerifyingKey::from_pem(key->public_pem(), "public key"));
    INFO(c.message);
    CHECK(c.ok);
    CHECK(c.uncovered == 0);
  }

  const std::vector<json> before = json_lines(log + ".1");
  const std::vector<json> after = json_lines(log);
  REQUIRE(before.size() == 3);  // execute, evaluate, execute (a rollback is no decision)
  REQUIRE(after.size() == 1);
  const auto model = ck::load_spec_file(clampai::test::source_path("examples/autoscale.json"));
  const ck::TaskModel& m = *model;
  for (const json& line : {before[0], before[1], before[2], after[0]}) {
    INFO(line.dump());
    CHECK(line.size() == 10);
    CHECK(line["task"] == "autoscale");
    CHECK(line["principal"] == (auth ? json("token") : json(nullptr)));
    CHECK(line["action"] == "scale_up");
    CHECK(line["spec_digest"] == m.digest);
    CHECK(line["time"].get<std::string>().size() == 27);
  }
  CHECK(before[0]["endpoint"] == "execute");
  CHECK(before[0]["outcome"] == "approved");
  CHECK(before[0]["trace_position"] == committed_at);
  CHECK(before[0]["params_sha256"] == ck::sha256_hex(R"({"n":1})"));
  CHECK(before[1]["endpoint"] == "evaluate");
  CHECK(before[1]["outcome"] == "rejected");
  CHECK_FALSE(before[1]["reasons"].empty());
  CHECK(before[1]["params_sha256"] == ck::sha256_hex(R"({"n":1000})"));
  CHECK(after[0]["params_sha256"] == before[0]["params_sha256"]);  // canonical: order aside
  fs::remove_all(dir);
  fs::remove(log);
  fs::remove(log + ".1");
}

TEST_CASE("Serve: on a shared ledger, checkpoints are signed and committed by each server",
          "[server][sign][ledger]") {
  // Two servers on one file ledger, signing with the group's key: a checkpoint every 2 entries
  // of the shared trace, whichever server noticed, and one at each shutdown.
  const std::string path = fresh("signed-ledger.jsonl");
  const auto key = std::make_shared<ck::SigningKey>(ck::SigningKey::generate());
  cs::ServiceOptions o;
  o.ledger = "file:" + path;
  o.signer = [key](std::string_view bytes) { return key->sign_hex(bytes); };
  o.checkpoint_every = 2;
  const std::string spec =
      ck::read_text_file(clampai::test::source_path("examples/autoscale.json"));
  {
    cs::Service a(o);
    cs::Service b(o);
    a.add_task(spec, "a.json");
    b.add_task(spec, "b.json");
    for (int i = 0; i < 5; ++i) {
      cs::Service& s = i % 2 == 0 ? a : b;
      const auto r = call(
          s, "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})", false);
      REQUIRE(r.status == 200);
    }
    REQUIRE(call(a, "/v1/tasks/autoscale/rollback", "{}", false).status == 200);
    a.shutdown();  // a checkpoint, not a seal: b goes on
    const auto r =
        call(b, "/v1/tasks/autoscale/execute", R"({"action":"scale_up","params":{"n":1}})", false);
    REQUIRE(r.status == 200);
    b.shutdown();
  }
  const std::vector<json> entries = json_lines(path);
  std::size_t checkpoints = 0;
  for (const json& e : entries) {
    INFO(e.dump());
    const std::string kind = e["kind"];
    CHECK(kind != "sealed");
    if (kind == "checkpoint") ++checkpoints;
    CHECK(e.contains("signature") == (kind == "checkpoint"));
  }
  CHECK(checkpoints >= 3);
  CHECK(entries.back()["kind"] == "checkpoint");
  ck::TraceReadOptions read;
  read.allow_unsealed = true;
  {
    ck::TraceReader reader(path, read);
    const ck::SignatureCheck c =
        ck::check_signatures(reader, ck::VerifyingKey::from_pem(key->public_pem(), "public key"));
    INFO(c.message);
    CHECK(c.ok);
    CHECK(c.uncovered == 0);
  }
  // Another key: the first checkpoint fails.
  const ck::SigningKey other = ck::SigningKey::generate();
  ck::TraceReader reader(path, read);
  CHECK_FALSE(
      ck::check_signatures(reader, ck::VerifyingKey::from_pem(other.public_pem(), "other")).ok);
  fs::remove(path);
}
