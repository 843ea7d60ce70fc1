// The run loop over a shared ledger.
#include "clampai/driver/shared_run.hpp"

#include "stop.hpp"

#include <algorithm>

namespace clampai::driver {

using kernel::Outcome;
using kernel::ReasonCode;

RunResult run(kernel::SharedKernel& shared, Driver& driver, const RunOptions& options) {
  RunResult result;
  int refused_in_a_row = 0;  // on one head: a refusal on a newer head starts again
  std::uint64_t refused_at = 0;
  auto tally = [&](const Decision& d) {
    ++result.rejected;
    for (const auto& r : d.reasons) ++result.rejections_by_reason[std::string(to_string(r.code))];
  };
  const TaskModel& m = shared.model();
  while (true) {
    const SafetyKernel& local = shared.local();
    if (local.goal_reached()) {
      result.termination = Termination::goal_reached;
      break;
    }
    if (options.max_steps && result.executed >= *options.max_steps) {
      result.termination = Termination::max_steps;
      break;
    }
    Choice choice = driver.next(local);
    result.attempted += choice.rejected.size() + (choice.proposal ? 1 : 0);
    for (const auto& d : choice.rejected) tally(d);
    if (!choice.proposal) {
      // Nothing approvable on the head this process knows: on a newer one there may be.
      if (shared.refresh() > 0) continue;
      detail::record_stop(local, choice, result);
      break;
    }
    const Outcome o = shared.execute(*choice.proposal);
    if (!o.decision.approved) {  // refused on the latest head: another process got there first
      ++result.attempted;
      tally(o.decision);
      if (shared.length() != refused_at) {
        refused_at = shared.length();
        refused_in_a_row = 0;
      }
      if (++refused_in_a_row < 2) continue;
      result.termination = Termination::no_approvable_action;
      result.last_reasons = o.decision.reasons;
      break;
    }
    refused_in_a_row = 0;
    ++result.executed;
    result.actions.push_back(m.actions[choice.proposal->action].id);
  }
  result.goal_reached = shared.local().goal_reached();
  return result;
}

}  // namespace clampai::driver
