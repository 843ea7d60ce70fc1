// The run loop over a shared ledger.
#include "clampai/driver/shared_run.hpp"

#include "stop.hpp"

#include <algorithm>

namespace clampai::driver {

using kernel::Outcome;
using kernel::ReasonCode;
using kernel::Receipt;

RunResult run(kernel::SharedKernel& shared, Driver& driver, const RunOptions& options) {
  RunResult result;
  int refused_in_a_row = 0;  // on one head: a refusal on a newer head starts again
  std::uint64_t refused_at = 0;
  // This run's commits that recovery may undo, newest last (a rollback must be the top of the
  // shared trace's undo stack: once another process commits on top, it is refused).
  std::vector<std::pair<Receipt, Proposal>> undoable;
  auto tally = [&](const Decision& d) {
    ++result.rejected;
    for (const auto& r : d.reasons) ++result.rejections_by_reason[std::string(to_string(r.code))];
  };
  const TaskModel& m = shared.model();
  // Recovery when nothing is approvable on the latest head: roll back this run's last commit if
  // it is still the most recent action in effect, else take the first approvable emergency
  // action. True iff the run goes on (a rollback); `result.termination` is set on a stop.
  auto recover = [&]() -> bool {
    const SafetyKernel& local = shared.local();
    const bool steps_left = local.steps() < static_cast<std::uint64_t>(local.step_limit());
    if (steps_left && !undoable.empty() && !m.actions[undoable.back().first.action].emergency &&
        m.actions[undoable.back().first.action].reversible) {
      auto [receipt, proposal] = undoable.back();
      undoable.pop_back();
      try {
        const Outcome o = shared.rollback(receipt);
        ++result.rollbacks;
        result.recovery.push_back("rolled back `" + m.actions[receipt.action].id + "`");
        driver.rolled_back(o.state, proposal);
        return true;
      } catch (const InvalidArgument&) {
        // Another process committed on top of it: none of this run's commits can be undone.
        undoable.clear();
      }
    }
    for (std::size_t i = 0; i < m.actions.size(); ++i) {
      if (!m.actions[i].emergency) continue;
      const Proposal p = default_proposal(m, i);
      ++result.attempted;
      const Decision d = shared.record_rejection(p);
      if (!d.approved) {
        tally(d);
        continue;
      }
      const Outcome o = shared.execute(p);
      if (!o.decision.approved) {
        tally(o.decision);
        continue;
      }
      ++result.executed;
      ++result.emergencies;
      result.actions.push_back(m.actions[i].id);
      result.recovery.push_back("emergency action `" + m.actions[i].id + "`");
      result.termination = Termination::emergency_stop;
      return false;
    }
    return false;
  };
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
    // The driver screened these on the replica; recorded (on the latest head) when asked.
    if (shared.records_rejections()) {
      for (const Proposal& p : choice.rejected_proposals) (void)shared.record_rejection(p);
    }
    result.attempted += choice.rejected.size() + (choice.proposal ? 1 : 0);
    for (const auto& d : choice.rejected) tally(d);
    if (!choice.proposal) {
      // Nothing approvable on the head this process knows: on a newer one there may be.
      if (shared.refresh() > 0) continue;
      if (options.recover) {
        if (recover()) continue;
        if (result.termination == Termination::emergency_stop) break;
      }
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
    if (o.receipt) undoable.emplace_back(*o.receipt, std::move(*choice.proposal));
  }
  result.goal_reached = shared.local().goal_reached();
  return result;
}

}  // namespace clampai::driver
