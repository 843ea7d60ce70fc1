#include "escrow_run.hpp"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "clampai/ledger/escrow.hpp"
#include "clampai/report.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace cl = clampai::ledger;

namespace {

// True iff every reason of `d` is the lease's budget (or its step bound) running out.
bool budget_only(const ck::Decision& d) {
  return !d.reasons.empty() && std::all_of(d.reasons.begin(), d.reasons.end(), [](const auto& r) {
    return r.code == ck::ReasonCode::budget_exceeded || r.code == ck::ReasonCode::step_limit;
  });
}

}  // namespace

int run_on_escrow(const LedgerRun& args) {
  const auto model = ck::load_spec_file(args.spec);
  const cl::EscrowUrl url = cl::split_escrow_url(args.ledger);
  const std::string task = url.task.empty() ? model->name : url.task;
  if (task.empty())
    throw InvalidArgument("the ledger `" + cl::redact_url(args.ledger) +
                          "` needs a task: name it after `#` (URL#TASK) or give the spec a "
                          "`name`");
  const auto slice = ck::Decimal::parse(url.slice)->rescaled(model->budget.scale);
  if (!slice)
    throw InvalidArgument("escrow=" + url.slice + " is finer than the budget's scale of " +
                          std::to_string(model->budget.scale) + " digits after the point");
  cl::EscrowOptions options;
  options.slice = slice->units;
  options.lifetime = url.lifetime;
  options.batch = url.batch;
  cl::EscrowKernel escrow(model, url.conninfo, task, options);

  driver::FirstApprovableDriver chooser;
  driver::RunResult r;
  ck::Amount spent = 0;
  auto tally = [&](const ck::Decision& d) {
    ++r.rejected;
    for (const auto& reason : d.reasons)
      ++r.rejections_by_reason[std::string(to_string(reason.code))];
  };
  report::Progress progress(report::Progress::for_stderr("run", quiet()));
  progress.phase("running in escrow mode on " + escrow.describe());
  while (true) {
    if (escrow.local().goal_reached()) {
      r.termination = driver::Termination::goal_reached;
      break;
    }
    if (args.max_steps && r.executed >= *args.max_steps) {
      r.termination = driver::Termination::max_steps;
      break;
    }
    driver::Choice choice = chooser.next(escrow.local());
    r.attempted += choice.rejected.size();
    ck::Proposal proposal;
    if (choice.proposal) {
      proposal = *choice.proposal;
    } else {
      // Nothing approvable on the lease: if only its budget is short, ask for a new slice by
      // proposing the first such action (execute leases anew, or refuses for the pool).
      const auto short_of_budget =
          std::find_if(choice.rejected.begin(), choice.rejected.end(), budget_only);
      if (short_of_budget == choice.rejected.end()) {
        for (const auto& d : choice.rejected) tally(d);
        r.termination = driver::Termination::no_approvable_action;
        for (const auto& d : choice.rejected)
          r.last_reasons.insert(r.last_reasons.end(), d.reasons.begin(), d.reasons.end());
        break;
      }
      proposal = driver::default_proposal(*model, short_of_budget->action);
    }
    ++r.attempted;
    const ck::Outcome o = escrow.execute(proposal);
    if (!o.receipt) {
      tally(o.decision);
      r.termination = budget_only(o.decision) ? driver::Termination::budget_exhausted
                                              : driver::Termination::no_approvable_action;
      r.last_reasons = o.decision.reasons;
      break;
    }
    ++r.executed;
    spent += o.receipt->cost;
    r.actions.push_back(model->actions[proposal.action].id);
  }
  escrow.close();
  progress.stop();
  r.goal_reached = escrow.local().goal_reached();
  const cl::EscrowStats stats = escrow.stats();

  report::RunReport rep;
  rep.spec = args.spec;
  rep.model = model.get();
  rep.result = &r;
  rep.steps = r.executed;  // this process's, across its leases
  rep.step_limit = model->budget.step_limit;
  rep.total = model->budget.total;
  rep.net = spent;
  rep.gross = spent;
  rep.trace_entries = stats.commits;
  rep.trace_head = escrow.local().trace().back().hash;
  rep.trace_verified = true;  // every entry was made by this process's kernels
  rep.trace_file = escrow.describe();
  std::ostringstream out;
  report::write_run(out, format_of(args.format), rep);
  if (args.format == "json") {
    nlohmann::json j = nlohmann::json::parse(out.str());
    j["ledger"] = {{"url", escrow.describe()},
                   {"mode", "escrow"},
                   {"leases", stats.leases},
                   {"flushes", stats.flushes},
                   {"commits", stats.commits},
                   {"expired", stats.expired}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << out.str() << "ledger: " << escrow.describe() << ": " << stats.commits
              << " commits by this process in " << stats.leases << " leases, " << stats.flushes
              << " flushes; " << stats.expired << " stale leases of others expired\n";
  }
  return r.goal_reached ? 0 : 1;
}

}  // namespace clampai::cli
