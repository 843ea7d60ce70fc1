// The `clampai` command: the only place that formats output for people and CI.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cstdio>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "agent_cmd.hpp"
#include "approval_prompt.hpp"
#include "bench.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/driver.hpp"
#include "clampai/hardening/patterns.hpp"
#include "clampai/kernel.hpp"
#include "clampai/report.hpp"
#include "clampai/server/gateway.hpp"
#include "clampai/verifier.hpp"
#include "compose_cmd.hpp"
#include "evaluate_cmd.hpp"
#include "gateway_cmd.hpp"
#include "ledger_cmd.hpp"
#include "lookahead_cmd.hpp"
#include "mcp_cmd.hpp"
#include "monitor_setup.hpp"
#include "output.hpp"
#include "repair_cmd.hpp"
#include "report_cmd.hpp"
#include "serve_cmd.hpp"
#include "shadow_flag.hpp"
#include "sign_cmd.hpp"
#include "suggestions.hpp"

namespace cd = clampai::driver;
namespace ck = clampai::kernel;
namespace cv = clampai::verifier;

namespace {

// Exit codes (DESIGN §4).
constexpr int kOk = 0;
constexpr int kFinding = 1;
constexpr int kBadInput = 2;
constexpr int kOutOfMemory = 4;

// What `run` keeps in memory, whatever its length (README, `clampai run`).
constexpr std::size_t kRunTraceWindow = 4096;  // trace entries
constexpr std::size_t kRunUndoDepth = 1024;    // committed actions that can be rolled back

struct Common {
  std::string format = "text";
};

void add_format(CLI::App* cmd, Common& common) {
  cmd->add_option("--format", common.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  clampai::cli::add_quiet_flag(cmd);
}

// ---- check ----

int cmd_check(const std::string& path, const Common& common) {
  const auto model = ck::load_spec_file(path);
  ck::SafetyKernel kernel(model);  // refuses an initial state that breaks a blocking invariant
  clampai::report::write_check(std::cout, clampai::cli::format_of(common.format), path, *model);
  return kOk;
}

// ---- run ----

struct RunArgs {
  std::string spec;
  std::string trace;
  std::string flush = "flush";
  bool append = false;
  bool force = false;
  std::optional<std::uint64_t> max_steps;
  bool record_rejections = false;
  std::optional<unsigned> lookahead;
  std::uint32_t lookahead_timeout_ms = 1000;
  bool recover = false;
  std::string ledger;
  std::string pools;  // --pools FILE
  std::vector<std::string> allow_programs;
  std::string signing_key;
  std::uint64_t checkpoint_every = 0;
  std::string approvals;  // --approvals: empty, prompt, deny or skip
  bool shadow = false;    // --shadow
};

// True iff `a` and `b` name one file (the same inode), however they are spelt.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// Why the existing trace `path` cannot be continued by a run of `model` with --append, or ""
// if it can: its chain must verify, it must not be sealed, and it must be this spec's.
std::string why_not_continued(const std::string& path,
                              const std::shared_ptr<const ck::TaskModel>& model) {
  try {
    const ck::TraceCheck check = ck::verify_trace_file(path, /*allow_unsealed=*/true);
    if (!check.ok) return check.message;
    if (check.sealed) return "it is sealed (its run finished; nothing may follow a seal)";
    ck::TraceReadOptions read;
    read.allow_unsealed = true;
    ck::TraceReader reader(path, read);
    ck::TraceEntry genesis;
    if (!reader.next(genesis)) return "it holds no entry";
    ck::TraceReplay replay(model, 0);
    if (auto mismatch = replay.add(genesis)) return *mismatch;
  } catch (const clampai::Error& e) {
    return e.what();
  }
  return "";
}

// Opens the trace file of `run` (after the spec is loaded: a spec error never touches it) and,
// with --append, reads and checks the trace it continues.
void open_trace(const RunArgs& args,
                const std::shared_ptr<const ck::TaskModel>& model,
                ck::KernelOptions& options) {
  if (same_file(args.trace, args.spec))
    throw clampai::TraceError("the trace `" + args.trace + "` is the spec file `" + args.spec +
                              "`: give the trace its own file");
  const ck::FlushPolicy policy = args.flush == "buffered" ? ck::FlushPolicy::buffered
                                 : args.flush == "fsync"  ? ck::FlushPolicy::fsync
                                                          : ck::FlushPolicy::flush;
  const ck::TraceOpen mode = args.append  ? ck::TraceOpen::append
                             : args.force ? ck::TraceOpen::overwrite
                                          : ck::TraceOpen::create;
  std::shared_ptr<ck::TraceWriter> writer;
  try {
    writer = std::make_shared<ck::TraceWriter>(args.trace, policy, mode);  // locks it
  } catch (const clampai::TraceError& e) {
    std::error_code ec;
    if (mode != ck::TraceOpen::create ||
        !std::filesystem::is_regular_file(std::filesystem::symlink_status(args.trace, ec)))
      throw;
    // It exists: --append is offered only for a trace that can be continued.
    const std::string why = why_not_continued(args.trace, model);
    throw clampai::TraceError(
        std::string(e.what()) +
        (why.empty() ? ": --append continues it, --force replaces it"
                     : ": --force replaces it (it cannot be continued with --append: " + why +
                           "), or write a new trace"));
  }
  if (args.append && !writer->discards()) {  // /dev/null keeps nothing to continue
    const ck::TraceCheck check = ck::verify_trace_file(args.trace, /*allow_unsealed=*/true);
    if (!check.ok)
      throw clampai::TraceError("cannot append to `" + args.trace + "`: " + check.message);
    if (check.sealed)
      throw clampai::TraceError("cannot append to `" + args.trace +
                                "`: the trace is sealed (its run finished; nothing may follow "
                                "a seal): write a new trace");
    // Read again as the kernel continues it, streaming (any length, bounded memory), each entry
    // replayed as `trace verify --spec` replays it.
    ck::TraceReadOptions read;
    read.allow_unsealed = true;
    auto reader = std::make_shared<ck::TraceReader>(args.trace, read);
    auto replay = std::make_shared<ck::TraceReplay>(model, kRunUndoDepth);
    options.resume_from = [reader, replay, path = args.trace](ck::TraceEntry& e) {
      if (!reader->next(e)) {
        const ck::TraceCheck again = reader->finish();  // changed since it was checked
        if (!again.ok)
          throw clampai::TraceError("cannot append to `" + path + "`: " + again.message);
        return false;
      }
      if (auto mismatch = replay->add(e)) {
        throw clampai::TraceError("cannot append to `" + path + "`: entry " +
                                  std::to_string(replay->entries() - 1) + ": " + *mismatch);
      }
      return true;
    };
    writer->continue_from(check.entries);
  }
  options.writer = std::move(writer);
}

int cmd_run(const RunArgs& args, const Common& common) {
  if (args.shadow) clampai::cli::refuse_shadow({.ledger = args.ledger});
  if (!args.ledger.empty()) {
    clampai::cli::refuse_pools_file_on_ledger(args.pools, args.ledger);
    const auto model = ck::load_spec_file(args.spec);
    clampai::cli::refuse_monitor_on_ledger(*model);
    return clampai::cli::run_on_ledger({args.spec,
                                        args.ledger,
                                        common.format,
                                        args.max_steps,
                                        args.record_rejections,
                                        args.lookahead,
                                        args.lookahead_timeout_ms,
                                        args.recover,
                                        args.signing_key,
                                        args.checkpoint_every,
                                        args.approvals});
  }
  const auto model = ck::load_spec_file(args.spec);
  if (args.shadow)
    clampai::cli::refuse_shadow({.model = model.get(),
                                 .approvals = args.approvals,
                                 .record_rejections = args.record_rejections});
  ck::KernelOptions options;
  options.pools = clampai::cli::load_pools_option(args.pools, model.get());
  options.record_rejections = args.record_rejections;
  // Bounded memory on long runs: the trace goes to its file as it grows (when there is one);
  // the kernel keeps the last entries and the undo records that --recover can use.
  options.trace_window = kRunTraceWindow;
  options.undo_depth = kRunUndoDepth;
  // The key is read before the trace is opened: a bad key touches no file.
  if (!args.signing_key.empty())
    options.signer = clampai::cli::signer_from_key_file(args.signing_key);
  if (!args.trace.empty()) open_trace(args, model, options);
  if (args.lookahead) {
    cd::LookaheadOptions lookahead;
    lookahead.depth = *args.lookahead;
    lookahead.timeout_ms = args.lookahead_timeout_ms;
    options.guard = cd::lookahead_guard(model, lookahead);
  }
  // A spec's hardening sections are enforced by the reference monitor around the kernel.
  std::unique_ptr<clampai::hardening::ReferenceMonitor> monitor =
      clampai::cli::make_monitor(model, options, args.allow_programs);
  std::optional<ck::SafetyKernel> own;
  if (!monitor) own.emplace(model, options);
  ck::SafetyKernel& kernel = monitor ? monitor->kernel() : *own;
  cd::FirstApprovableDriver driver;
  cd::RunOptions run_options;
  run_options.max_steps = args.max_steps;
  run_options.recover = args.recover;
  run_options.approve = clampai::cli::make_approver(args.approvals);
  ck::Checkpoints checkpoints(args.checkpoint_every, kernel.trace_length());
  if (args.checkpoint_every > 0)
    run_options.between_steps = [&checkpoints, &kernel] { (void)checkpoints.after(kernel); };
  clampai::report::Progress progress(
      clampai::report::Progress::for_stderr("run", clampai::cli::quiet()));
  progress.phase("running");
  progress.status([&kernel] { return std::to_string(kernel.steps()) + " steps"; });
  // Shadow mode: each step followed whatever the kernel decides (driver::ShadowCommitter).
  std::unique_ptr<cd::Committer> committer;
  if (args.shadow)
    committer = std::make_unique<cd::ShadowCommitter>(kernel);
  else
    committer = std::make_unique<cd::LocalCommitter>(kernel);
  cd::RunResult r = cd::run(*committer, driver, run_options);
  progress.stop();
  if (monitor) {
    if (auto verdict = clampai::cli::finish_monitored(*monitor, r.goal_reached)) {
      r.goal_reached = false;
      r.termination = verdict->termination == "environment_drift"
                          ? cd::Termination::environment_drift
                          : cd::Termination::goal_not_attested;
      r.last_reasons = {verdict->reason};
    }
  }
  const ck::TraceEntry seal = kernel.seal();
  const auto budget = kernel.budget();
  const ck::TraceCheck check = kernel.verify_trace();

  clampai::report::RunReport report;
  report.spec = args.spec;
  report.model = model.get();
  report.result = &r;
  report.steps = kernel.steps();
  report.emergency_steps = kernel.emergency_steps();
  report.step_limit = kernel.step_limit();
  report.total = budget.total();
  report.net = budget.net();
  report.gross = budget.gross();
  report.trace_entries = seal.sequence + 1;
  report.trace_head = seal.hash;
  report.trace_verified = check.ok;
  report.trace_file = args.trace;
  report.trace_appended = args.append;
  report.lookahead = args.lookahead;
  report.recover = args.recover;
  if (options.pools) report.pools = options.pools->status();
  clampai::report::write_run(std::cout, clampai::cli::format_of(common.format), report);
  return r.goal_reached ? kOk : kFinding;
}

// ---- trace verify ----

struct TraceArgs {
  std::string file;
  std::string spec;                // the first --spec
  std::vector<std::string> specs;  // every --spec (repeatable: files or directories)
  std::string public_key;
  bool allow_unsealed = false;
  std::size_t undo_depth = ck::default_replay_undo_depth;
};

int cmd_trace_verify(const TraceArgs& args, const Common& common) {
  if (clampai::cli::names_ledger(args.file))
    return clampai::cli::verify_ledger_trace(
        args.file, args.spec, common.format, args.undo_depth, args.public_key);
  if (const auto path = clampai::cli::ledger_file(args.file)) {  // file:PATH, as --ledger takes it
    TraceArgs file = args;
    file.file = *path;
    file.allow_unsealed = true;  // a ledger is live: its task goes on
    return cmd_trace_verify(file, common);
  }
  // Streaming, at any length: the chain first (every core), then with --spec the trace again,
  // each entry replayed as it is read (the replay keeps its state and `--undo-depth` undo
  // records, never the trace).
  // The key first: a bad key file is bad input (2), not a broken trace.
  std::optional<ck::VerifyingKey> key;
  if (!args.public_key.empty()) key.emplace(clampai::cli::public_key_from_file(args.public_key));
  ck::TraceCheck check = ck::verify_trace_file(args.file, args.allow_unsealed);
  // With --public-key: every seal and checkpoint signed by it, streaming like the chain.
  std::optional<ck::SignatureCheck> signatures;
  if (key && check.ok) {
    ck::TraceReadOptions read;
    read.allow_unsealed = args.allow_unsealed;
    ck::TraceReader reader(args.file, read);
    signatures = clampai::cli::check_signed(reader, *key, check);
  }
  std::string replay = "not requested";
  std::optional<std::vector<std::uint64_t>> unresolved;
  if (check.ok && !args.spec.empty()) {
    // Every --spec: a trace spanning several specs (a server's reloads) is replayed with the
    // spec of each digest it names, from its genesis entry and at each `spec_changed` entry.
    std::vector<std::shared_ptr<const ck::TaskModel>> models;
    for (const std::string& given : args.specs) {
      std::vector<std::string> files;
      if (std::filesystem::is_directory(given)) {  // e.g. a data directory's specs/
        for (const auto& e : std::filesystem::directory_iterator(given))
          if (e.path().extension() == ".json") files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
        if (files.empty())
          throw clampai::InvalidArgument("--spec `" + given + "`: the directory has no *.json");
      } else {
        files.push_back(given);
      }
      // A spec's error names its file, line and column, as for every command.
      for (const std::string& f : files) models.push_back(ck::load_spec_file(f));
    }
    const auto model = models.front();
    ck::TraceReadOptions read;
    read.allow_unsealed = args.allow_unsealed;
    ck::TraceReader reader(args.file, read);
    ck::TraceReplay replaying(model, args.undo_depth);
    replaying.set_specs([models](std::string_view digest) -> std::shared_ptr<const ck::TaskModel> {
      for (const auto& m : models)
        if (m->digest == digest) return m;
      return nullptr;
    });
    // A gateway's spec (with bindings): which forwarded steps have no outcome.
    std::optional<clampai::server::OutcomeTracker> outcomes;
    if (!std::filesystem::is_directory(args.spec) &&
        ck::jsonio::parse_json(ck::read_text_file(args.spec), args.spec).find("bindings") !=
            nullptr)
      outcomes.emplace();
    bool mismatched = false;
    const ck::TraceCheck replayed = ck::replay_stream(
        reader,
        replaying,
        [&outcomes](const ck::TraceEntry& entry, const ck::TraceReplay&) {
          if (outcomes) outcomes->add(entry);
        },
        &mismatched);
    if (mismatched) {
      check.ok = false;
      check.first_bad = replayed.first_bad;
      check.message = replayed.message;
      replay = "failed";
    } else if (!replayed.ok) {
      check = replayed;  // the file changed since its chain was checked
    } else {
      replay = "ok";
    }
    if (outcomes && !mismatched) unresolved = outcomes->pending();
  }
  clampai::report::write_trace_check(
      std::cout,
      clampai::cli::format_of(common.format),
      {args.file, args.spec, replay, check, std::move(unresolved), std::move(signatures)});
  return check.ok ? kOk : kFinding;
}

// ---- verify ----

struct VerifyArgs {
  std::string spec;
  unsigned jobs = clampai::cli::default_jobs();
  unsigned timeout_ms = 10000;
  double timeout_s = 0;
  bool fail_on_unknown = false;
  std::string smtlib_dir;
  unsigned depth = 0;
};

int cmd_verify(const VerifyArgs& args, const Common& common) {
  // Wall-clock time of the whole command: loading, proving and the goal search.
  clampai::report::Progress progress(
      clampai::report::Progress::for_stderr("verify", clampai::cli::quiet()));
  cv::VerifyOptions options;
  options.deadline = cv::Deadline::after(clampai::cli::run_timeout_ms(args.timeout_s));
  progress.phase("loading the spec");
  const auto model = ck::load_spec_file(args.spec);
  options.jobs = args.jobs;
  options.timeout_ms = args.timeout_ms;
  options.smtlib_dir = args.smtlib_dir;
  options.depth = args.depth;
  options.progress = [&progress](std::size_t done, std::size_t total) {
    progress.update(done, total);
  };
  if (!options.smtlib_dir.empty()) std::filesystem::create_directories(options.smtlib_dir);
  progress.phase("preservation obligations");
  const cv::Report report = cv::verify(model, options);
  clampai::report::VerifyReport out;
  if (args.depth > 0 && model->goal) {
    progress.phase("goal search within " + std::to_string(args.depth) + " steps");
    out.goal = clampai::cli::check_goal(*model, args.depth, options.deadline.at());
  }
  out.seconds = progress.seconds();
  progress.stop();
  out.spec = args.spec;
  out.model = model.get();
  out.report = &report;
  clampai::report::add_information_flows(out);
  clampai::report::write_verify(std::cout, clampai::cli::format_of(common.format), out);
  if (out.goal && out.goal->infeasible) return kFinding;
  if (!out.downward_flows.empty()) return kFinding;
  const int code = report.exit_code(args.fail_on_unknown);
  // A goal search the run's time limit cut short is unfinished too.
  if (code == 0 && out.goal && !out.goal->complete && options.deadline.passed())
    return args.fail_on_unknown ? kFinding : 3;
  return code;
}

// A usage error (a bad option value, a missing argument) of a subcommand whose `--format` asks
// for a machine-readable report: that report, carrying the error, on stdout; CLI11 has already
// printed the message on stderr.
void parse_failure_report(const CLI::App& app, const std::string& message) {
  for (const CLI::App* sub : app.get_subcommands()) {
    while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
    const CLI::Option* format = sub->get_option_no_throw("--format");
    if (format == nullptr || format->count() == 0) continue;
    const auto chosen = clampai::report::parse_format(format->results().back());
    if (!chosen || *chosen == clampai::report::Format::text) continue;
    clampai::report::Failure f;
    f.command = sub->get_parent() != nullptr && sub->get_parent()->get_parent() != nullptr
                    ? sub->get_parent()->get_name() + " " + sub->get_name()
                    : sub->get_name();
    f.message = message;
    clampai::report::write_failure(std::cout, *chosen, f);
  }
}

}  // namespace

int main(int argc, char** argv) {
  cv::tune_allocator_for_solving();              // this process runs many solver checks
  clampai::hardening::install_pattern_engine();  // specs with pattern templates load
  CLI::App app{
      "clampai: verify and run AI agent task specs under a formally specified safety kernel"};
  app.require_subcommand(1);
  app.fallthrough();  // inherited by the subcommands: --max-input-bytes may follow them
  // The release, then what certificates record: the release and a digest of the sources that
  // decide verdicts.
  app.set_version_flag("--version",
                       std::string("clampai ") + CLAMPAI_VERSION +
                           "\ntoolkit: " + std::string(clampai::composition::toolkit_version()));
  Common common;

  std::string check_spec;
  auto* check = app.add_subcommand(
      "check", "Load and type-check a task spec; print its summary and the T2 step bound");
  clampai::cli::set_help_footer(check,
                                "0 ok, 2 bad input (the spec does not load, or its initial state "
                                "breaks a blocking invariant; each problem with its place)",
                                "clampai check examples/quickstart.json",
                                "docs/SPEC.md");
  check->add_option("SPEC", check_spec, "Task spec (JSON)")->required();
  add_format(check, common);

  RunArgs run_args;
  auto* run = app.add_subcommand(
      "run", "Drive a task spec through the safety kernel with the deterministic driver");
  clampai::cli::set_help_footer(
      run,
      "0 goal reached, 1 not reached, 2 bad input (a bad spec, trace file or ledger)",
      "clampai run examples/cloud_deploy.json --trace cloud.jsonl",
      "docs/SPEC.md (13. The trace), docs/LEDGER.md (--ledger), docs/HARDENING.md");
  run->add_option("SPEC", run_args.spec, "Task spec (JSON)")->required();
  run->add_option("--trace",
                  run_args.trace,
                  "Write the hash-chained trace to this JSON Lines file: a new file (an existing "
                  "one is an error unless --append or --force); its directory must exist; never "
                  "a symbolic link or a special file, but /dev/null discards it");
  auto* append_flag = run->add_flag(
      "--append",
      run_args.append,
      "Continue the unsealed trace in --trace: its chain is verified and replayed through the "
      "kernel first, and the run resumes from its last state, budget and counters");
  run->add_flag("--force",
                run_args.force,
                "Replace the regular file given to --trace if it exists (never through a link)")
      ->excludes(append_flag);
  run->add_option(
         "--flush",
         run_args.flush,
         "When trace entries are made durable: buffered, flush (each entry), fsync (each entry)")
      ->check(CLI::IsMember({"buffered", "flush", "fsync"}))
      ->capture_default_str();
  run->add_option("--max-steps",
                  run_args.max_steps,
                  "Stop after this many executed actions (besides the kernel's T2 bound)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint64_t n = 0;
            const auto r = std::from_chars(text.data(), text.data() + text.size(), n);
            if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
              return "`" + text + "` is not a whole number from 0 to 18446744073709551615";
            return "";
          },
          "N"));
  run->add_flag(
      "--record-rejections", run_args.record_rejections, "Record rejected proposals in the trace");
  run->add_option("--lookahead",
                  run_args.lookahead,
                  "Reject actions after which a capture basin is reachable within K more steps "
                  "(reason lookahead_trap)")
      ->option_text("K")
      ->check(CLI::Range(0U, 64U));
  run->add_option("--lookahead-timeout-ms",
                  run_args.lookahead_timeout_ms,
                  "Time limit of each lookahead search; a search that reaches it vetoes only "
                  "the traps it found")
      ->check(CLI::Range(1U, 3600000U))
      ->capture_default_str();
  run->add_flag("--recover",
                run_args.recover,
                "When nothing is approvable: roll back the last action if reversible, else take "
                "an emergency action and stop");
  auto* ledger_opt =
      run->add_option("--ledger",
                      run_args.ledger,
                      "Share the budget, state and trace with other processes through this "
                      "ledger: postgresql://...[#TASK] (a libpq URI; the task defaults to the "
                      "spec's name), file:PATH or memory:; `actions` lists what this process "
                      "committed");
  run->add_option("--pools",
                  run_args.pools,
                  "A pools file (JSON): the budget pools the spec's budget.pool names; a charge "
                  "commits only if it fits every level (docs/POOLS.md). Not with --ledger, "
                  "whose pools are the ledger's (`clampai ledger pools apply`)")
      ->option_text("FILE");
  clampai::cli::add_allow_program_option(run, run_args.allow_programs);
  run->add_option("--signing-key",
                  run_args.signing_key,
                  "Sign the seal and every checkpoint with this Ed25519 private key (PEM, "
                  "PKCS#8: `clampai keygen`); `trace verify --public-key` checks them. With "
                  "--ledger: the checkpoints this process commits, and one at its end")
      ->option_text("FILE");
  run->add_option("--checkpoint-every",
                  run_args.checkpoint_every,
                  "Append a checkpoint entry (signed with --signing-key) every N trace entries")
      ->option_text("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  clampai::cli::add_approvals_option(run, run_args.approvals);
  clampai::cli::add_shadow_flag(
      run,
      run_args.shadow,
      "where nothing is approvable, the first ready action the kernel rejects is taken, within "
      "the step bound (T2); the report lists the steps the kernel would have rejected");
  for (const char* other : {"--trace", "--append", "--force", "--flush", "--allow-program"})
    ledger_opt->excludes(run->get_option(other));
  add_format(run, common);

  VerifyArgs verify_args;
  auto* verify_cmd = app.add_subcommand("verify",
                                        "Prove with Z3 that every action preserves every blocking "
                                        "invariant, or show a counterexample the kernel replays");
  clampai::cli::set_help_footer(verify_cmd,
                                "0 all proved, 1 refuted (an obligation, an information flow or "
                                "the goal), 2 bad input, 3 unknown",
                                "clampai verify examples/quickstart.json --format sarif",
                                "docs/VERIFY.md");
  verify_cmd->add_option("SPEC", verify_args.spec, "Task spec (JSON)")->required();
  verify_cmd
      ->add_option("--jobs", verify_args.jobs, "Worker threads (the report does not depend on it)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  verify_cmd
      ->add_option(
          "--timeout-ms", verify_args.timeout_ms, "Solver time limit per solver call (obligation)")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  clampai::cli::add_run_timeout_option(verify_cmd, verify_args.timeout_s);
  verify_cmd->add_flag("--fail-on-unknown",
                       verify_args.fail_on_unknown,
                       "Exit 1 (not 3) when an obligation is unknown");
  verify_cmd
      ->add_option(
          "--depth",
          verify_args.depth,
          "Search each refuted pair from the initial state, up to K steps (bounded model checking)")
      ->check(CLI::Range(0, 50))
      ->capture_default_str();
  verify_cmd->add_option(
      "--smtlib",
      verify_args.smtlib_dir,
      "Also write each preservation obligation to this directory as a standalone SMT-LIB 2 file");
  verify_cmd->add_option("--format", common.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "sarif", "junit"}))
      ->capture_default_str();
  clampai::cli::add_quiet_flag(verify_cmd);

  auto* trace = app.add_subcommand("trace", "Work with execution traces");
  trace->require_subcommand(1);
  TraceArgs trace_args;
  auto* verify = trace->add_subcommand(
      "verify",
      "Verify a trace file's hash chain (and, with --spec, replay it through the kernel)");
  clampai::cli::set_help_footer(
      verify,
      "0 intact, 1 broken or truncated (or the replay differs), 2 unreadable or bad input",
      "clampai trace verify cloud.jsonl --spec examples/cloud_deploy.json",
      "docs/SPEC.md (13. The trace)");
  verify
      ->add_option(
          "FILE", trace_args.file, "Trace (JSON Lines), or a ledger: postgresql://...#TASK")
      ->required();
  verify->add_option("--spec",
                     trace_args.specs,
                     "Replay the trace through a kernel for this spec (repeatable, or a "
                     "directory of specs: a trace spanning several, a server's reloads, is "
                     "replayed with the spec of each digest it names)");
  verify
      ->add_option("--public-key",
                   trace_args.public_key,
                   "Check that every seal and checkpoint is signed by the private key of this "
                   "Ed25519 public key (PEM, SPKI: the `.pub` of `clampai keygen`); a trace with "
                   "no signature fails")
      ->option_text("FILE");
  verify->add_flag("--allow-unsealed",
                   trace_args.allow_unsealed,
                   "Accept a trace without a seal entry (a run that did not finish); with --spec, "
                   "its entries are replayed but there is no final state to compare");
  verify
      ->add_option("--undo-depth",
                   trace_args.undo_depth,
                   "With --spec: the committed actions whose undo records the replay keeps, "
                   "most recent first (a rollback of an older one is a mismatch); 0 keeps all. "
                   "The replay's memory is the state plus these records, whatever the trace's "
                   "length")
      ->capture_default_str();
  add_format(verify, common);
  auto* bench = clampai::cli::add_bench_command(app, common.format);
  auto* compose = clampai::cli::add_compose_command(app);
  auto* evaluate = clampai::cli::add_evaluate_command(app);
  auto* lookahead = clampai::cli::add_lookahead_command(app);
  auto* repair = clampai::cli::add_repair_command(app);
  auto* report_cmd = clampai::cli::add_report_command(app);
  auto* agent = clampai::cli::add_agent_command(app);
  auto* serve = clampai::cli::add_serve_command(app);
  auto* mcp = clampai::cli::add_mcp_command(app);
  auto* gateway = clampai::cli::add_gateway_command(app);
  auto* keygen = clampai::cli::add_keygen_command(app);
  auto* ledger_cmd = clampai::cli::add_ledger_command(app);

  std::string max_input;
  app.add_option("--max-input-bytes",
                 max_input,
                 "Largest input file read (spec, state, manifest, cache entry), in bytes or "
                 "with K, M, G; default 64M, or CLAMPAI_MAX_INPUT_BYTES. Traces are read "
                 "streaming, at any size")
      ->option_text("BYTES");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const std::string hint = clampai::cli::parse_error_hint(app, argc, argv); !hint.empty()) {
      std::cerr << "clampai: error: " << hint << "\n";
      parse_failure_report(app, hint);
      return kBadInput;
    }
    const int rc = app.exit(e);
    if (rc == 0) return kOk;
    parse_failure_report(app, e.what());
    return kBadInput;
  }
  try {
    if (!max_input.empty()) {
      ck::set_max_input_bytes(ck::parse_byte_count(max_input, "--max-input-bytes"));
    } else {
      (void)ck::max_input_bytes();  // a malformed CLAMPAI_MAX_INPUT_BYTES is reported now
    }
  } catch (const clampai::Error& e) {
    std::cerr << "clampai: error: " << e.what() << "\n";
    return kBadInput;
  }

  if (!trace_args.specs.empty()) trace_args.spec = trace_args.specs.front();
  const std::string command = check->parsed()        ? "check"
                              : run->parsed()        ? "run"
                              : verify_cmd->parsed() ? "verify"
                                                     : "trace verify";
  // Spec errors name the spec; `trace verify` reads a spec only with --spec.
  const std::string input = check->parsed()            ? check_spec
                            : run->parsed()            ? run_args.spec
                            : verify_cmd->parsed()     ? verify_args.spec
                            : !trace_args.spec.empty() ? trace_args.spec
                                                       : trace_args.file;
  const auto fail = [&](const std::string& message, bool internal = false) {
    return clampai::cli::fail(common.format, command, input, message, internal);
  };
  try {
    if (check->parsed()) return cmd_check(check_spec, common);
    if (run->parsed()) return cmd_run(run_args, common);
    if (verify->parsed()) return cmd_trace_verify(trace_args, common);
    if (verify_cmd->parsed()) return cmd_verify(verify_args, common);
    if (bench->parsed()) return clampai::cli::run_bench_command();
    if (compose->parsed()) return clampai::cli::run_compose_command();
    if (evaluate->parsed()) return clampai::cli::run_evaluate_command();
    if (lookahead->parsed()) return clampai::cli::run_lookahead_command();
    if (repair->parsed()) return clampai::cli::run_repair_command();
    if (report_cmd->parsed()) return clampai::cli::run_report_command();
    if (agent->parsed()) return clampai::cli::run_agent_command();
    if (serve->parsed()) return clampai::cli::run_serve_command();
    if (mcp->parsed()) return clampai::cli::run_mcp_command();
    if (gateway->parsed()) return clampai::cli::run_gateway_command();
    if (keygen->parsed()) return clampai::cli::run_keygen_command();
    if (ledger_cmd->parsed()) return clampai::cli::run_ledger_command();
  } catch (const clampai::SpecError& e) {
    // One line per problem: `FILE:LINE:COLUMN: json.path: message`, as compilers write them.
    return fail(clampai::cli::describe(input, e));
  } catch (const clampai::TraceError& e) {
    return fail(e.what());
  } catch (const clampai::FileError& e) {  // the message names the file
    return fail(e.what());
  } catch (const clampai::Error& e) {
    return fail(input + ": " + e.what());
  } catch (const cv::InternalError& e) {
    return fail(e.what(), true);
  } catch (const std::bad_alloc&) {
    fail("out of memory (the input is too large for the memory available to this process)");
    return kOutOfMemory;
  } catch (const std::exception& e) {  // I/O: --smtlib directory, trace file system errors
    return fail(e.what());
  }
  return kBadInput;
}
