#include "serve_cmd.hpp"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <thread>

#include "clampai/kernel.hpp"
#include "clampai/ledger/ledger.hpp"
#include "clampai/server.hpp"
#include "output.hpp"
#include "sign_cmd.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace cs = clampai::server;

namespace {
// The smallest token accepted: 16 bytes (128 bits if random) make guessing hopeless.
constexpr std::size_t kMinToken = 16;
}  // namespace

bool is_loopback(const std::string& host) { return host == "::1" || host.starts_with("127."); }

std::string read_token(const std::string& path) {
  std::string token = ck::read_file(path, 64 * 1024);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t'))
    token.pop_back();
  if (token.empty()) throw InvalidArgument("--token-file `" + path + "`: the file is empty");
  if (token.size() < kMinToken)
    throw InvalidArgument("--token-file `" + path + "`: the token is " +
                          std::to_string(token.size()) + " bytes; at least " +
                          std::to_string(kMinToken) + " are needed");
  if (token.find_first_of(" \t\r\n") != std::string::npos)
    throw InvalidArgument("--token-file `" + path + "`: the token contains white space");
  return token;
}

namespace {

struct Args {
  std::vector<std::string> specs;
  std::string host = "127.0.0.1", token_file, principals_file, data_dir, ledger, tls_cert, tls_key,
              pools;
  std::string signing_key, decision_log;
  std::string mode = "enforce";
  std::vector<std::string> shadow;
  std::uint64_t checkpoint_every = 0;
  unsigned port = 8765;
  std::uint32_t request_timeout_ms = cs::Limits{}.request_timeout_ms;
  unsigned threads = 0;  // 0: one per core, at least 2
  bool insecure = false;
} args;

// The principals file, read whole (the limit is the one every small input file has).
std::vector<cs::Principal> read_principals(const std::string& path) {
  return cs::parse_principals(ck::read_file(path, 1024 * 1024), "--principals `" + path + "`");
}

int serve_command() {
  if (args.token_file.empty() && args.principals_file.empty() && !args.insecure)
    throw InvalidArgument(
        "give --token-file FILE (the bearer token clients must send) or --principals FILE (who "
        "may do what), or --insecure-no-auth to serve without one on a loopback address");
  if (args.insecure && !is_loopback(args.host))
    throw InvalidArgument(
        "--insecure-no-auth serves only a loopback address (127.0.0.1 or ::1), "
        "not `" +
        args.host + "`: give --token-file");
  cs::ServiceOptions options;
  options.data_dir = args.data_dir;
  if (!args.ledger.empty()) {
    // A file or memory ledger holds one task; a database holds every served task's.
    if (!ledger::is_postgres_url(args.ledger))
      throw InvalidArgument("--ledger `" + ledger::redact_url(args.ledger) +
                            "`: serve keeps its tasks in a postgresql://... ledger (a libpq URI)");
    if (!ledger::split_postgres_url(args.ledger).task.empty())
      throw InvalidArgument("--ledger `" + ledger::redact_url(args.ledger) +
                            "`: serve names each task's ledger by its spec's `name`; drop the "
                            "`#TASK` fragment");
    options.ledger = args.ledger;
  }
  options.limits.request_timeout_ms = args.request_timeout_ms;
  if (!args.signing_key.empty()) options.signer = signer_from_key_file(args.signing_key);
  options.checkpoint_every = args.checkpoint_every;
  options.decision_log = args.decision_log;
  options.shadow = args.shadow;
  options.shadow_all = args.mode == "shadow";

  if (!args.token_file.empty()) options.token = read_token(args.token_file);
  if (!args.principals_file.empty()) options.principals = read_principals(args.principals_file);
  static std::mutex log_mutex;
  options.log = [](const std::string& line) {
    std::lock_guard lock(log_mutex);
    std::cerr << "clampai serve: " << line << std::endl;
  };
  refuse_pools_file_on_ledger(args.pools, args.ledger);
  if (!args.pools.empty()) {
    options.pools = load_pools_option(args.pools, nullptr);
  }
  cs::Service service(options);
  for (const std::string& spec : args.specs) {
    try {
      service.add_task(ck::read_text_file(spec), spec);
    } catch (const SpecError& e) {
      throw InvalidArgument(describe(spec, e));
    }
  }
  // Each task --shadow names must be served (a misspelt name would leave a task enforcing).
  const std::vector<std::string> served = service.task_names();
  for (const std::string& name : args.shadow)
    if (std::find(served.begin(), served.end(), name) == served.end())
      throw InvalidArgument("--shadow `" + name + "`: no task of that name is served" +
                            ck::did_you_mean(name, served));
  cs::HttpOptions http;
  http.host = args.host;
  http.port = static_cast<unsigned short>(args.port);
  http.threads =
      args.threads != 0 ? args.threads : std::max(2U, std::thread::hardware_concurrency());
  http.tls_cert = args.tls_cert;
  http.tls_key = args.tls_key;
  http.limits = options.limits;
  if (!args.principals_file.empty() || !args.decision_log.empty() || !args.specs.empty())
    http.on_reload = [&service, &options] {
      // A bad new file keeps the old principals: the server never ends up open, nor closed.
      if (!args.principals_file.empty()) {
        try {
          auto principals = read_principals(args.principals_file);
          const std::size_t n = principals.size();
          service.set_principals(std::move(principals));
          options.log("SIGHUP: " + std::to_string(n) + " principal(s) read from `" +
                      args.principals_file + "`");
        } catch (const std::exception& e) {
          options.log(std::string("SIGHUP: keeping the old principals: ") + e.what());
        }
      }
      // Each --spec file read again: a changed one is a reload behind proofs (a refused one
      // keeps the task's spec in force).
      for (const std::string& spec : args.specs) {
        try {
          options.log("SIGHUP: " + service.reload_task(ck::read_text_file(spec), spec));
        } catch (const std::exception& e) {
          options.log(std::string("SIGHUP: ") + e.what());
        }
      }
      // Log rotation: the decision log's path is opened again (a failure keeps the old file).
      if (!args.decision_log.empty()) {
        try {
          service.reopen_decision_log();
          options.log("SIGHUP: decision log `" + args.decision_log + "` reopened");
        } catch (const std::exception& e) {
          options.log(std::string("SIGHUP: keeping the old decision log: ") + e.what());
        }
      }
    };
  cs::serve_http(service, http, [](const std::string& url) {
    std::cout << "listening on " << url << std::endl;  // flushed: scripts wait for this line
  });
  service.shutdown();
  std::cerr << "clampai serve: stopped" << std::endl;
  return 0;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve task specs over HTTP/JSON: every action an agent proposes is decided by the "
      "task's kernel (docs/SERVE.md)");
  set_help_footer(cmd,
                  "0 stopped by SIGTERM or SIGINT (every trace sealed), 2 bad input",
                  "clampai serve --spec examples/quickstart.json --port 8080",
                  "docs/SERVE.md");
  cmd->add_option("--spec",
                  args.specs,
                  "A task spec to serve, named by its `name` (repeatable); SIGHUP reads it "
                  "again and reloads a changed one behind proofs (docs/SERVE.md)")
      ->take_all();
  cmd->add_option("--host", args.host, "The address to listen on")->capture_default_str();
  cmd->add_option("--port", args.port, "The TCP port; 0 picks a free one")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  auto* token = cmd->add_option("--token-file",
                                args.token_file,
                                "A file holding the bearer token every request (but /v1/health) "
                                "must carry");
  auto* principals = cmd->add_option("--principals",
                                     args.principals_file,
                                     "A JSON file of principals: each a name, its token's SHA-256 "
                                     "and its rights per task; SIGHUP re-reads it (docs/SERVE.md)")
                         ->excludes(token);
  cmd->add_flag(
         "--insecure-no-auth", args.insecure, "Serve without a token (a loopback --host only)")
      ->excludes(token)
      ->excludes(principals);
  cmd->add_option("--data-dir",
                  args.data_dir,
                  "Keep each task's spec and trace (TASK.jsonl) here, and resume them on restart");
  cmd->add_option("--ledger",
                  args.ledger,
                  "Share each task's budget, state and trace with other processes through this "
                  "ledger: postgresql://... (a libpq URI; each task's ledger is named by its "
                  "spec's name); not with --data-dir");
  cmd->add_option("--pools",
                  args.pools,
                  "A pools file (JSON): the budget pools tasks' budget.pool names, shared by "
                  "every task served; a charge commits only if it fits every level "
                  "(docs/POOLS.md); GET /v1/pools shows them. Not with --ledger, whose pools "
                  "are the ledger's (`clampai ledger pools apply`)")
      ->option_text("FILE");
  cmd->add_option("--signing-key",
                  args.signing_key,
                  "Sign each task's seal and checkpoints with this Ed25519 private key (PEM, "
                  "PKCS#8: `clampai keygen`); with --ledger, the checkpoints this server commits "
                  "and one at shutdown (every process of a task signs with one key)")
      ->option_text("FILE");
  cmd->add_option("--checkpoint-every",
                  args.checkpoint_every,
                  "Append a checkpoint entry (signed with --signing-key) to a task's trace every "
                  "N entries")
      ->option_text("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  cmd->add_option("--decision-log",
                  args.decision_log,
                  "Append one JSON line per decision to this file "
                  "(schema/decision-log.schema.json); SIGHUP reopens it")
      ->option_text("FILE");
  cmd->add_option("--mode",
                  args.mode,
                  "enforce: every task's kernel blocks what it rejects; shadow: every task "
                  "decides and records each execute but blocks none (docs/SERVE.md); not with "
                  "--ledger")
      ->check(CLI::IsMember({"enforce", "shadow"}))
      ->capture_default_str();
  cmd->add_option("--shadow",
                  args.shadow,
                  "Run this served task in shadow mode: its executes are decided and recorded "
                  "(`enforced: false`) but never blocked (repeatable); not with --ledger")
      ->option_text("TASK")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* cert = cmd->add_option("--tls-cert", args.tls_cert, "PEM certificate chain: serve HTTPS");
  auto* key = cmd->add_option("--tls-key", args.tls_key, "PEM private key of --tls-cert");
  cert->needs(key);
  key->needs(cert);
  cmd->add_option("--request-timeout-ms",
                  args.request_timeout_ms,
                  "Milliseconds a client has to send a whole request, and to take a whole "
                  "answer; then the connection closes")
      ->check(CLI::Range(1U, 3600000U))
      ->capture_default_str();
  cmd->add_option("--threads",
                  args.threads,
                  "Event loops (threads) serving the connections; default one per core, at "
                  "least 2 (fewer when clients share the machine's cores)")
      ->check(CLI::Range(1U, 256U));
  return cmd;
}

int run_serve_command() {
  try {
    return serve_command();
  } catch (const Error& e) {
    return fail("text", "serve", "", e.what());
  } catch (const std::exception& e) {  // the data directory's file system errors
    return fail("text", "serve", "", e.what());
  }
}

}  // namespace clampai::cli
