#include "ledger_cmd.hpp"

#include <iostream>
#include <string_view>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "clampai/ledger/escrow.hpp"
#include "clampai/ledger/ledger.hpp"
#include "clampai/report.hpp"
#include "escrow_run.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace cl = clampai::ledger;

int run_on_ledger(const LedgerRun& args) {
  if (cl::is_escrow_url(args.ledger)) return run_on_escrow(args);
  const auto model = ck::load_spec_file(args.spec);
  const auto ledger = cl::open_ledger(args.ledger, model->name);
  ck::SharedOptions shared_options;
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
  report::Progress progress(report::Progress::for_stderr("run", quiet()));
  progress.phase("running on " + ledger->describe());
  progress.status([&shared] { return std::to_string(shared.length()) + " entries"; });
  const driver::RunResult r = driver::run(shared, chooser, options);
  progress.stop();
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
  report::write_run(std::cout, format_of(args.format), rep);
  return r.goal_reached ? 0 : 1;
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
                        std::size_t undo_depth) {
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
  report::write_trace_check(std::cout, format_of(format), {ledger.describe(), spec, replay, check});
  return check.ok ? 0 : 1;
}

}  // namespace clampai::cli
