#include "ledger_cmd.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string_view>

#include "approval_prompt.hpp"
#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/ledger/escrow.hpp"
#include "clampai/ledger/ledger.hpp"
#include "clampai/report.hpp"
#include "escrow_run.hpp"
#include "output.hpp"
#include "sign_cmd.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace cl = clampai::ledger;

int run_on_ledger(const LedgerRun& args) {
  if (cl::is_escrow_url(args.ledger)) {
    if (!args.signing_key.empty() || args.checkpoint_every > 0)
      throw InvalidArgument("--signing-key and --checkpoint-every: the ledger `" +
                            cl::redact_url(args.ledger) +
                            "` is in escrow mode, whose trace is not checkpointed; drop escrow= "
                            "for the shared mode, or the options");
    return run_on_escrow(args);
  }
  const auto model = ck::load_spec_file(args.spec);
  ck::SharedOptions shared_options;
  // The key is read before the ledger is opened: a bad key touches no ledger.
  if (!args.signing_key.empty()) shared_options.signer = signer_from_key_file(args.signing_key);
  shared_options.checkpoint_every = args.checkpoint_every;
  const auto ledger = cl::open_ledger(args.ledger, model->name);
  shared_options.record_rejections = args.record_rejections;
  if (args.lookahead) {
    driver::LookaheadOptions lookahead;
    lookahead.depth = *args.lookahead;
    lookahead.timeout_ms = args.lookahead_timeout_ms;
    shared_options.guard = driver::lookahead_guard(model, lookahead);
  }
  ck::SharedKernel shared(model, ledger, shared_options);
  driver::FirstApprovableDriver chooser;
  driver::RunOptions options;
  options.max_steps = args.max_steps;
  options.recover = args.recover;
  options.between_steps = [&shared] { (void)shared.checkpoint(); };
  options.approve = make_approver(args.approvals);
  report::Progress progress(report::Progress::for_stderr("run", quiet()));
  progress.phase("running on " + ledger->describe());
  progress.status([&shared] { return std::to_string(shared.length()) + " entries"; });
  const driver::RunResult r = driver::run(shared, chooser, options);
  progress.stop();
  // The run's end: a checkpoint (the other processes go on: never a seal).
  (void)shared.checkpoint(/*final=*/true);
  const ck::SafetyKernel& local = shared.local();
  const auto budget = local.budget();
  const ck::SharedStats stats = shared.stats();

  report::RunReport rep;
  rep.spec = args.spec;
  rep.model = model.get();
  rep.result = &r;
  rep.steps = local.steps();
  rep.emergency_steps = local.emergency_steps();
  rep.step_limit = local.step_limit();
  rep.total = budget.total();
  rep.net = budget.net();
  rep.gross = budget.gross();
  rep.trace_entries = shared.length();
  rep.trace_head = shared.head();
  // Every entry, this process's and the others', was replayed to its recorded hash.
  rep.trace_verified = local.verify_trace().ok;
  rep.trace_file = ledger->describe();
  rep.lookahead = args.lookahead;
  rep.recover = args.recover;
  rep.ledger = report::LedgerSection{ledger->describe(), stats};
  // The pools of the task's path as the ledger has them now (every task's spend).
  if (!model->budget.pool.empty())
    rep.pools = cl::pool_status(ledger->pool_path(model->budget.pool), true);
  report::write_run(std::cout, format_of(args.format), rep);
  return r.goal_reached ? 0 : 1;
}

namespace {

struct LedgerArgs {
  std::string file;
  std::string ledger;
  std::string format = "text";
};
LedgerArgs ledger_args;
CLI::App* pools_apply_cmd = nullptr;
CLI::App* pools_show_cmd = nullptr;

// The libpq URI of `--ledger` (a fragment naming a task is ignored: pools are the database's).
std::string pools_conninfo(const std::string& url) {
  if (!cl::is_postgres_url(url))
    throw InvalidArgument("--ledger: budget pools are kept on a PostgreSQL ledger only, not `" +
                          cl::redact_url(url) + "`: give postgresql://...");
  return cl::split_postgres_url(url).conninfo;
}

void write_pools_json(const std::vector<cl::PoolChange>& pools, bool changes) {
  std::string out = "{\"ledger\":";
  ck::jsonio::append_json_string(out, cl::redact_url(ledger_args.ledger));
  out += ",\"pools\":[";
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const cl::PoolChange& p = pools[i];
    out += i == 0 ? "{" : ",{";
    const auto member = [&out](const char* key, const std::string& value, bool first = false) {
      out += first ? "\"" : ",\"";
      out += key;
      out += "\":";
      if (value.empty() && std::string_view(key) == "parent") {
        out += "null";
      } else {
        ck::jsonio::append_json_string(out, value);
      }
    };
    member("name", p.name, true);
    member("parent", p.parent);
    if (changes) {
      member("action", p.action);
      if (!p.previous_total.empty()) member("previous_total", p.previous_total);
    }
    member("total", p.total);
    member("gross", p.gross);
    member("net", p.net);
    out += "}";
  }
  out += "]}";
  std::cout << out << "\n";
}

int run_pools_apply() {
  const std::string conninfo = pools_conninfo(ledger_args.ledger);
  std::vector<ck::PoolDecl> decls;
  try {
    decls = ck::parse_pools(ck::read_file(ledger_args.file));
  } catch (const SpecError& e) {
    throw InvalidArgument(describe(ledger_args.file, e));
  }
  const std::vector<cl::PoolChange> changes = cl::apply_pools(conninfo, decls);
  if (ledger_args.format == "json") {
    write_pools_json(changes, true);
    return 0;
  }
  std::size_t changed = 0;
  for (const cl::PoolChange& c : changes) {
    std::cout << c.action << " " << c.name;
    if (c.action == "changed") {
      std::cout << ": total " << c.previous_total << " -> " << c.total;
    } else {
      std::cout << ": total " << c.total;
    }
    std::cout << ", net " << c.net << ", gross " << c.gross
              << (c.parent.empty() ? "" : ", in " + c.parent) << "\n";
    if (c.action == "created" || c.action == "changed") ++changed;
  }
  std::cout << "ok: " << changed << " of " << decls.size() << " pools created or changed on "
            << cl::redact_url(conninfo) << "\n";
  return 0;
}

int run_pools_show() {
  const std::vector<ck::LedgerPool> rows = cl::read_pools(pools_conninfo(ledger_args.ledger));
  std::vector<cl::PoolChange> pools;
  pools.reserve(rows.size());
  for (const ck::LedgerPool& r : rows)
    pools.push_back({r.name, r.parent, "", "", r.total, r.gross, r.net});
  if (ledger_args.format == "json") {
    write_pools_json(pools, false);
    return 0;
  }
  if (pools.empty()) std::cout << "no budget pools on the ledger\n";
  for (const cl::PoolChange& p : pools)
    std::cout << p.name << ": total " << p.total << ", net " << p.net << ", gross " << p.gross
              << (p.parent.empty() ? "" : ", in " + p.parent) << "\n";
  return 0;
}

}  // namespace

CLI::App* add_ledger_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ledger", "Administer a PostgreSQL ledger: its budget pools");
  cmd->require_subcommand(1);
  auto* pools = cmd->add_subcommand(
      "pools", "The budget pools of a PostgreSQL ledger, which tasks on it charge in each commit");
  pools->require_subcommand(1);
  pools_apply_cmd = pools->add_subcommand(
      "apply",
      "Create and change the ledger's pools to match a pools file, in one transaction: a new "
      "pool is created with nothing spent, a changed total is raised or lowered (never below "
      "the pool's net spend); idempotent. Pools the file does not name are kept");
  set_help_footer(pools_apply_cmd,
                  "0 applied, 2 bad input or the ledger unreachable (a bad file, a total below "
                  "what is spent, a changed parent: nothing applied)",
                  "clampai ledger pools apply pools.json --ledger postgresql:///clampai",
                  "docs/POOLS.md");
  pools_apply_cmd->add_option("FILE", ledger_args.file, "The pools file (JSON)")->required();
  pools_show_cmd = pools->add_subcommand(
      "show", "Print every pool of the ledger: total, net and gross spend, parent");
  set_help_footer(pools_show_cmd,
                  "0 shown, 2 the ledger cannot be reached",
                  "clampai ledger pools show --ledger postgresql:///clampai",
                  "docs/POOLS.md");
  for (CLI::App* c : {pools_apply_cmd, pools_show_cmd}) {
    c->add_option("--ledger", ledger_args.ledger, "The ledger: postgresql://... (a libpq URI)")
        ->required();
    c->add_option("--format", ledger_args.format, "Output format")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }
  return cmd;
}

int run_ledger_command() {
  const std::string command =
      pools_apply_cmd->parsed() ? "ledger pools apply" : "ledger pools show";
  try {
    return pools_apply_cmd->parsed() ? run_pools_apply() : run_pools_show();
  } catch (const Error& e) {  // the message names the pool, the file or the ledger
    return fail(ledger_args.format, command, ledger_args.file, e.what());
  }
}

bool names_ledger(const std::string& target) { return cl::is_postgres_url(target); }

std::optional<std::string> ledger_file(const std::string& target) {
  if (target.rfind("memory:", 0) == 0)
    throw InvalidArgument(
        "a memory: ledger lives only in the process that opened it: there is nothing to verify "
        "(use file:PATH or postgresql://...#TASK)");
  for (const std::string_view scheme : {"file://", "file:"})
    if (target.rfind(scheme, 0) == 0) return target.substr(scheme.size());
  return std::nullopt;
}

int verify_ledger_trace(const std::string& url,
                        const std::string& spec,
                        const std::string& format,
                        std::size_t undo_depth,
                        const std::string& public_key) {
  // The key first: a bad key file is bad input (2), not a broken trace.
  std::optional<ck::VerifyingKey> key;
  if (!public_key.empty()) key.emplace(public_key_from_file(public_key));
  cl::PostgresUrl parts = cl::split_postgres_url(url);
  std::shared_ptr<const ck::TaskModel> model;
  if (!spec.empty()) model = ck::load_spec_file(spec);
  if (parts.task.empty() && model) parts.task = model->name;
  if (parts.task.empty())
    throw InvalidArgument("name the task to verify: `" + cl::redact_url(url) + "#TASK`");
  cl::PostgresLedger ledger(parts.conninfo, parts.task, cl::Access::read_only);
  if (!ledger.has_task())
    throw TraceError("no task `" + parts.task + "` in the ledger " +
                     cl::redact_url(parts.conninfo));
  // Read page by page (the sequence number the cursor), streaming as a file is: the chain,
  // then with --spec the entries again, each replayed as it is read.
  ck::TraceReadOptions read;
  read.allow_unsealed = true;  // a ledger is live: its task goes on
  ck::TraceCheck check = ck::read_ledger(ledger, read)->finish();
  std::optional<ck::SignatureCheck> signatures;
  if (key && check.ok) signatures = check_signed(*ck::read_ledger(ledger, read), *key, check);
  std::string replay = "not requested";
  if (check.ok && model) {
    const auto reader = ck::read_ledger(ledger, read);
    ck::TraceReplay replaying(model, undo_depth);
    bool mismatched = false;
    const ck::TraceCheck replayed = ck::replay_stream(*reader, replaying, {}, &mismatched);
    if (mismatched) {
      check.ok = false;
      check.first_bad = replayed.first_bad;
      check.message = replayed.message;
      replay = "failed";
    } else if (!replayed.ok) {
      check = replayed;
    } else {
      replay = "ok";
    }
  }
  report::write_trace_check(std::cout,
                            format_of(format),
                            {ledger.describe(), spec, replay, check, {}, std::move(signatures)});
  return check.ok ? 0 : 1;
}

}  // namespace clampai::cli
