// Attestors: the subprocess runner's allowlist, environment, limits, output cap and process-group
// kill (with hostile programs), the predicate, HTTP and multi-dimensional attestors.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "clampai/hardening.hpp"
#include "clampai/kernel.hpp"
#include "http_server.hpp"

namespace fs = std::filesystem;
using namespace clampai;
using Catch::Matchers::Contains;
using hardening::AttestationContext;
using hardening::ProgramAllowlist;
using hardening::SubprocessLimits;
using hardening::SubprocessRunner;

namespace {

std::string real(const char* p) { return fs::canonical(p).string(); }

// A fresh directory for one test.
fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("clampai_hardening_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

SubprocessRunner runner(std::vector<std::string> programs, SubprocessLimits limits = {}) {
  return SubprocessRunner(ProgramAllowlist(programs), limits);
}

// True once process `pid` is gone or a zombie (killed, waiting for its reaper).
bool dead(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!stat || !std::getline(stat, line)) return true;
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("Allowlist: entries must be absolute, existing, executable and not writable by others",
          "[hardening][subprocess]") {
  REQUIRE_THROWS_WITH(ProgramAllowlist({"true"}), Contains("`true` is not an absolute path"));
  REQUIRE_THROWS_WITH(ProgramAllowlist({"/no/such/program"}), Contains("/no/such/program"));
  REQUIRE_THROWS_WITH(ProgramAllowlist({"/tmp"}), Contains("is not a regular file"));
  const fs::path d = scratch("allow");
  const fs::path writable = d / "tool";
  std::ofstream(writable) << "#!/bin/sh\n";
  fs::permissions(writable, fs::perms::all);
  REQUIRE_THROWS_WITH(ProgramAllowlist({writable.string()}), Contains("writable by its group"));
  fs::permissions(writable, fs::perms::owner_read | fs::perms::owner_write);
  REQUIRE_THROWS_WITH(ProgramAllowlist({writable.string()}), Contains("is not executable"));
  fs::remove_all(d);
}

TEST_CASE("Allowlist: symlinks, `..`, PATH lookups and basenames are refused",
          "[hardening][subprocess]") {
  const std::string echo = real("/bin/echo");
  const ProgramAllowlist allow({echo});
  REQUIRE_FALSE(allow.refusal(echo));
  REQUIRE_THAT(*allow.refusal("echo"), Contains("never looked up in PATH"));
  const fs::path d = scratch("symlink");
  fs::create_symlink(echo, d / "echo");
  REQUIRE_THAT(*allow.refusal((d / "echo").string()), Contains("resolves to `" + echo + "`"));
  const std::string dotdot =
      (fs::path(echo).parent_path() / ".." / fs::path(echo).parent_path().filename() / "echo")
          .string();
  REQUIRE_THAT(*allow.refusal(dotdot), Contains("give the resolved path"));
  REQUIRE_THAT(*allow.refusal(real("/bin/cat")), Contains("is not in the allowlist"));
  // The runner refuses them without starting anything.
  const auto r = runner({echo}).run({(d / "echo").string(), "hi"});
  REQUIRE_FALSE(r.started);
  REQUIRE_THAT(r.error, Contains("refused"));
  fs::remove_all(d);
}

TEST_CASE("Subprocess: a pinned program swapped for another file is refused",
          "[hardening][subprocess]") {
  const fs::path d = scratch("swap");
  const fs::path tool = d / "tool";
  fs::copy_file(real("/bin/true"), tool);
  fs::permissions(tool, fs::perms::owner_all);
  const SubprocessRunner r = runner({tool.string()});
  REQUIRE(r.run({tool.string()}).exit_code == 0);
  fs::remove(tool);
  fs::copy_file(real("/bin/false"), tool);
  fs::permissions(tool, fs::perms::owner_all);
  const auto swapped = r.run({tool.string()});
  REQUIRE_FALSE(swapped.started);
  REQUIRE_THAT(swapped.error, Contains("no longer the file that was allowlisted"));
  fs::remove_all(d);
}

TEST_CASE("Subprocess: shell metacharacters in arguments are inert", "[hardening][subprocess]") {
  const fs::path d = scratch("meta");
  const std::string marker = (d / "pwned").string();
  const std::string hostile = "$(touch " + marker + "); `touch " + marker + "` | cat > " + marker +
                              " && rm -rf " + d.string() + " ; *";
  const auto r = runner({real("/bin/echo")}).run({real("/bin/echo"), hostile});
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output == hostile + "\n");
  REQUIRE_FALSE(fs::exists(marker));
  REQUIRE(fs::exists(d));

  // Through a state placeholder too: the value is one argument, whatever it holds.
  const auto model = kernel::load_spec(R"J({"variables": {"path": {"type": "string",
      "initial": "x; touch )J" + marker +
                                       R"J("}}, "actions": [], "budget": {"total": 1,
      "min_action_cost": 1}})J");
  const AttestationContext ctx{model.get(), &model->initial_state(), ""};
  const hardening::SubprocessAttestor a(
      "echo", {real("/bin/echo"), "value={path}", "{{literal}}"}, runner({real("/bin/echo")}));
  const auto att = hardening::run_attestor(a, ctx);
  REQUIRE(att.passed);
  REQUIRE(att.evidence == "value=x; touch " + marker + " {literal}\n");
  REQUIRE_FALSE(fs::exists(marker));
  REQUIRE_THROWS_WITH(hardening::SubprocessAttestor(
                          "bad", {real("/bin/echo"), "{path"}, runner({real("/bin/echo")})),
                      Contains("unclosed `{`"));
  const hardening::SubprocessAttestor unknown(
      "u", {real("/bin/echo"), "{nope}"}, runner({real("/bin/echo")}));
  const auto u = hardening::run_attestor(unknown, ctx);
  REQUIRE_FALSE(u.passed);
  REQUIRE_THAT(u.error, Contains("unknown variable `nope`"));
  fs::remove_all(d);
}

TEST_CASE("Subprocess: the environment is scrubbed", "[hardening][subprocess]") {
  ::setenv("CLAMPAI_TEST_SECRET", "hunter2", 1);
  const auto r = runner({real("/usr/bin/env")}).run({real("/usr/bin/env")});
  ::unsetenv("CLAMPAI_TEST_SECRET");
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output == "PATH=/usr/bin:/bin\nLC_ALL=C\n");
  REQUIRE_THROWS_WITH(SubprocessRunner(ProgramAllowlist{}, {}, {{"A=B", "c"}}),
                      Contains("invalid variable name `A=B`"));
}

TEST_CASE("Subprocess: the working directory is the one given", "[hardening][subprocess]") {
  const fs::path d = scratch("cwd");
  const std::string dir = fs::canonical(d).string();
  const std::string pwd = real("/bin/pwd");
  const auto r = SubprocessRunner(ProgramAllowlist({pwd}), {}, {{"PATH", "/usr/bin:/bin"}}, dir)
                     .run({pwd, "-P"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output == dir + "\n");
  REQUIRE_THROWS_WITH(SubprocessRunner(ProgramAllowlist{}, {}, {}, "relative/dir"),
                      Contains("an absolute path is needed"));
  REQUIRE_THROWS_WITH(SubprocessRunner(ProgramAllowlist{}, {}, {}, dir + "/missing"),
                      Contains("not an existing directory"));
  fs::remove_all(d);
}

TEST_CASE("Subprocess: a child that forks and ignores SIGTERM is killed with its group",
          "[hardening][subprocess]") {
  SubprocessLimits limits;
  limits.timeout = std::chrono::milliseconds(3000);  // ample time to print the pid
  const std::string sh = real("/bin/sh");
  const auto r =
      runner({sh}, limits).run({sh, "-c", "trap '' TERM; sleep 100 & echo $!; trap '' TERM; wait"});
  REQUIRE(r.started);
  REQUIRE(r.timed_out);
  REQUIRE(r.term_signal == SIGKILL);
  REQUIRE_THAT(r.error, Contains("timed out after 3000 ms (process group killed)"));
  const pid_t grandchild = static_cast<pid_t>(std::stol(r.output));
  REQUIRE(grandchild > 0);
  REQUIRE(dead(grandchild));
}

TEST_CASE("Subprocess: descendants do not outlive a program that exits",
          "[hardening][subprocess]") {
  const std::string sh = real("/bin/sh");
  const auto r = runner({sh}).run({sh, "-c", "sleep 100 >/dev/null 2>&1 & echo $!"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(dead(static_cast<pid_t>(std::stol(r.output))));
}

TEST_CASE("Subprocess: 1 GB of output is capped and the writer killed", "[hardening][subprocess]") {
  SubprocessLimits limits;
  limits.max_output_bytes = 64 * 1024;
  limits.timeout = std::chrono::seconds(60);  // the cap, not the clock, must end it
  const std::string head = real("/usr/bin/head");
  const auto r = runner({head}, limits).run({head, "-c", "1073741824", "/dev/zero"});
  REQUIRE(r.output_capped);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.output.size() == 64 * 1024);
  REQUIRE_THAT(r.error, Contains("output exceeded 65536 bytes"));
}

TEST_CASE("Subprocess: the CPU limit ends a busy loop", "[hardening][subprocess]") {
  SubprocessLimits limits;
  limits.cpu_seconds = 1;
  limits.timeout = std::chrono::seconds(60);
  const std::string sh = real("/bin/sh");
  const auto r = runner({sh}, limits).run({sh, "-c", "while :; do :; done"});
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.term_signal);
  REQUIRE((*r.term_signal == SIGXCPU || *r.term_signal == SIGKILL));
}

TEST_CASE("SubprocessAttestor: passes iff the program exits with 0", "[hardening][attestor]") {
  const std::string t = real("/bin/true");
  const std::string f = real("/bin/false");
  const AttestationContext ctx{};
  const auto ok =
      hardening::run_attestor(hardening::SubprocessAttestor("ok", {t}, runner({t, f})), ctx);
  REQUIRE(ok.passed);
  REQUIRE(ok.attestor == "ok");
  const auto no =
      hardening::run_attestor(hardening::SubprocessAttestor("no", {f}, runner({t, f})), ctx);
  REQUIRE_FALSE(no.passed);
  REQUIRE(no.error.empty());
  REQUIRE_THAT(no.evidence, Contains("exit status 1"));
}

TEST_CASE("PredicateAttestor: the callable decides; a throw fails closed",
          "[hardening][attestor]") {
  const hardening::PredicateAttestor yes("yes", [](const AttestationContext&, std::string& ev) {
    ev = "looked";
    return true;
  });
  const auto a = hardening::run_attestor(yes, {});
  REQUIRE(a.passed);
  REQUIRE(a.evidence == "looked");
  const hardening::PredicateAttestor boom("boom",
                                          [](const AttestationContext&, std::string&) -> bool {
                                            throw std::runtime_error("disk on fire");
                                          });
  const auto b = hardening::run_attestor(boom, {});
  REQUIRE_FALSE(b.passed);
  REQUIRE_THAT(b.error, Contains("disk on fire"));
  REQUIRE_THROWS_WITH(hardening::PredicateAttestor("x", nullptr), Contains("no predicate"));
}

TEST_CASE("MultiDimensionalAttestor: every dimension, or the declared quorum",
          "[hardening][attestor]") {
  auto fixed = [](std::string name, bool v) {
    return std::make_shared<hardening::PredicateAttestor>(
        std::move(name), [v](const AttestationContext&, std::string&) { return v; });
  };
  const std::vector<std::shared_ptr<const hardening::Attestor>> dims{
      fixed("exists", true), fixed("complete", true), fixed("quality", false)};
  const auto all = hardening::run_attestor(hardening::MultiDimensionalAttestor("all", dims), {});
  REQUIRE_FALSE(all.passed);
  REQUIRE(all.dimensions.size() == 3);
  REQUIRE_FALSE(all.dimensions[2].passed);
  REQUIRE_THAT(all.evidence, Contains("2 of 3 dimensions passed (3 required)"));
  REQUIRE_THAT(all.evidence, Contains("`quality` failed"));
  const auto two = hardening::run_attestor(hardening::MultiDimensionalAttestor("two", dims, 2), {});
  REQUIRE(two.passed);
  REQUIRE_THROWS_WITH(hardening::MultiDimensionalAttestor("q", dims, 4),
                      Contains("quorum 4 exceeds its 3 dimensions"));
  REQUIRE_THROWS_WITH(hardening::MultiDimensionalAttestor("d", {dims[0], dims[0]}),
                      Contains("dimension `exists` appears twice"));
}

TEST_CASE("HttpAttestor: status, body, redirects not followed, size cap, a hanging server",
          "[hardening][attestor][http]") {
  testing::HttpServer server;
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  auto attest = [&](hardening::HttpCheck check) {
    return hardening::run_attestor(hardening::HttpAttestor("http", std::move(check)), {});
  };
  hardening::HttpCheck ok{base + "/ok"};
  REQUIRE(attest(ok).passed);
  ok.expect_body_contains = "healthy";
  REQUIRE(attest(ok).passed);
  ok.expect_body_contains = "sick";
  REQUIRE_THAT(attest(ok).evidence, Contains("lacks `sick`"));
  const auto down = attest(hardening::HttpCheck{base + "/fail"});
  REQUIRE_FALSE(down.passed);
  REQUIRE_THAT(down.evidence, Contains("HTTP 503 (expected 200)"));
  const auto moved = attest(hardening::HttpCheck{base + "/redirect"});
  REQUIRE_FALSE(moved.passed);
  REQUIRE_THAT(moved.evidence, Contains("HTTP 302"));
  const auto big = attest(hardening::HttpCheck{base + "/big"});
  REQUIRE_FALSE(big.passed);
  REQUIRE_THAT(big.error, Contains("exceeded 65536 bytes"));
  hardening::HttpCheck hang{base + "/hang"};
  hang.timeout = std::chrono::milliseconds(200);
  const auto hung = attest(hang);
  REQUIRE_FALSE(hung.passed);
  REQUIRE_THAT(hung.error, Contains("failed"));
  REQUIRE_THROWS_WITH(hardening::HttpAttestor("f", {"file:///etc/passwd"}),
                      Contains("is not http:// or https://"));
}
