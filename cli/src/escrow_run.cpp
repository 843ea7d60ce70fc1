#include "escrow_run.hpp"

#include <algorithm>
#include <iostream>

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

// Escrow mode as a committer: decides on the lease's kernel, leases anew when only the lease's
// budget is short, and refuses for the budget only when the pool has no slice left.
class EscrowCommitter final : public driver::Committer {
 public:
  explicit EscrowCommitter(cl::EscrowKernel& escrow) : escrow_(escrow) {}
  [[nodiscard]] const ck::SafetyKernel& view() const override { return escrow_.local(); }
  ck::Outcome commit(const ck::Proposal& proposal) override {
    ck::Outcome o = escrow_.execute(proposal);
    if (o.receipt) spent += o.receipt->cost;
    return o;
  }
  ck::Decision record_rejection(const ck::Proposal& proposal) override {
    return escrow_.local().evaluate(proposal);  // a lease's chain records no rejections
  }
  [[nodiscard]] bool records_rejections() const override { return false; }
  std::optional<ck::Outcome> rollback(const ck::Receipt& receipt) override {
    return escrow_.rollback(receipt);
  }
  // Nothing approvable on the lease: if only its budget is short, propose the first such action
  // (committing it leases anew, or is refused for the pool).
  std::optional<ck::Proposal> when_stuck(const driver::Choice& choice) override {
    const auto short_of_budget =
        std::find_if(choice.rejected.begin(), choice.rejected.end(), budget_only);
    if (short_of_budget == choice.rejected.end()) return std::nullopt;
    return driver::default_proposal(escrow_.model(), short_of_budget->action);
  }
  // A refusal on the lease is final: the pool is out of budget, or the decision is the same on
  // any lease (escrow mode accepts only specs whose decisions read no shared state).
  std::optional<driver::Termination> on_refusal(const ck::Decision& d) override {
    return budget_only(d) ? driver::Termination::budget_exhausted
                          : driver::Termination::no_approvable_action;
  }

  ck::Amount spent = 0;

 private:
  cl::EscrowKernel& escrow_;
};

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
  EscrowCommitter committer(escrow);
  driver::RunOptions run_options;
  run_options.max_steps = args.max_steps;
  report::Progress progress(report::Progress::for_stderr("run", quiet()));
  progress.phase("running in escrow mode on " + escrow.describe());
  driver::RunResult r = driver::run(committer, chooser, run_options);
  const ck::Amount spent = committer.spent;
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
  rep.ledger = report::LedgerSection{
      escrow.describe(),
      report::EscrowLedgerStats{stats.leases, stats.flushes, stats.commits, stats.expired}};
  report::write_run(std::cout, format_of(args.format), rep);
  return r.goal_reached ? 0 : 1;
}

}  // namespace clampai::cli
