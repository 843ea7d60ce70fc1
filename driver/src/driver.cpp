// The deterministic driver and the run loop.
#include "clampai/driver/driver.hpp"

#include "stop.hpp"

#include <algorithm>

namespace clampai::driver {

using kernel::Action;
using kernel::Decimal;
using kernel::Outcome;
using kernel::Parameter;
using kernel::ReasonCode;
using kernel::Receipt;
using kernel::Value;

std::string_view to_string(Termination t) {
  static constexpr std::string_view kNames[] = {"goal_reached",
                                                "no_approvable_action",
                                                "budget_exhausted",
                                                "step_limit",
                                                "max_steps",
                                                "emergency_stop",
                                                "goal_not_attested",
                                                "environment_drift"};
  return kNames[static_cast<int>(t)];
}

Proposal default_proposal(const TaskModel& model, std::size_t index) {
  Proposal p{index, {}};
  for (const Parameter& param : model.actions.at(index).parameters) {
    p.params.push_back(Value::number(param.default_value ? *param.default_value
                                     : param.min         ? *param.min
                                                         : Decimal{}));
  }
  return p;
}

void Driver::rolled_back(const State& /*state*/, const Proposal& /*undone*/) {}

void FirstApprovableDriver::rolled_back(const State& state, const Proposal& undone) {
  avoid_.emplace_back(state, undone.action);
}

Choice FirstApprovableDriver::next(const SafetyKernel& kernel) {
  Choice choice;
  const TaskModel& m = kernel.model();
  const std::optional<State> now =
      avoid_.empty() ? std::nullopt : std::optional<State>(kernel.state());
  for (std::size_t i = 0; i < m.actions.size(); ++i) {
    const Action& a = m.actions[i];
    if (a.emergency) continue;
    if (std::any_of(avoid_.begin(), avoid_.end(), [&](const auto& entry) {
          return entry.second == i && entry.first == *now;
        }))
      continue;
    bool ready = true;
    for (auto dep : a.dependencies) ready = ready && kernel.completions(dep) > 0;
    if (!ready) continue;
    Proposal p = default_proposal(m, i);
    Decision d = kernel.evaluate(p);
    if (d.approved) {
      choice.proposal = std::move(p);
      return choice;
    }
    choice.rejected.push_back(std::move(d));
    choice.rejected_proposals.push_back(std::move(p));
  }
  return choice;
}

namespace {

// The first approvable emergency action, if any (`tally` counts the rejected ones).
template <typename Tally>
std::optional<Proposal> approvable_emergency(SafetyKernel& kernel,
                                             RunResult& result,
                                             Tally&& tally) {
  const TaskModel& m = kernel.model();
  for (std::size_t i = 0; i < m.actions.size(); ++i) {
    if (!m.actions[i].emergency) continue;
    Proposal p = default_proposal(m, i);
    ++result.attempted;
    const Decision d = kernel.record_rejection(p);
    if (d.approved) return p;
    tally(d);
  }
  return std::nullopt;
}

}  // namespace

RunResult run(SafetyKernel& kernel, Driver& driver, const RunOptions& options) {
  RunResult result;
  // This run's commits still in effect, newest last: what recovery may undo (an emergency
  // commit on top stops it: recovery rolls back only reversible non-emergency actions).
  std::vector<std::pair<Receipt, Proposal>> undoable;
  // Proposals the kernel rejected at execute since the last commit: a driver whose choice the
  // kernel keeps refusing (another thread, or a guard the driver does not consult) must not
  // make the run spin.
  int refused_in_a_row = 0;
  auto tally = [&](const Decision& d) {
    ++result.rejected;
    for (const auto& r : d.reasons) ++result.rejections_by_reason[std::string(to_string(r.code))];
  };
  while (true) {
    if (kernel.goal_reached()) {
      result.termination = Termination::goal_reached;
      break;
    }
    if (options.max_steps && result.executed >= *options.max_steps) {
      result.termination = Termination::max_steps;
      break;
    }
    Choice choice = driver.next(kernel);
    // The driver screened these with evaluate; a kernel that records rejections traces them.
    if (kernel.records_rejections()) {
      for (const Proposal& p : choice.rejected_proposals) (void)kernel.record_rejection(p);
    }
    result.attempted += choice.rejected.size() + (choice.proposal ? 1 : 0);
    for (const auto& d : choice.rejected) tally(d);
    if (!choice.proposal && options.recover) {
      const bool steps_left = kernel.steps() < static_cast<std::uint64_t>(kernel.step_limit());
      if (steps_left && !undoable.empty() &&
          !kernel.model().actions[undoable.back().first.action].emergency &&
          kernel.model().actions[undoable.back().first.action].reversible) {
        auto [receipt, proposal] = undoable.back();
        undoable.pop_back();
        // Throws only if another thread committed since: then nothing of this run is undoable.
        Outcome o = kernel.rollback(receipt);
        ++result.rollbacks;
        result.recovery.push_back("rolled back `" + kernel.model().actions[receipt.action].id +
                                  "`");
        driver.rolled_back(o.state, proposal);
        continue;
      }
      if (auto p = approvable_emergency(kernel, result, tally)) {
        Outcome o = kernel.execute(*p);
        if (o.decision.approved) {
          ++result.executed;
          ++result.emergencies;
          const std::string& id = kernel.model().actions[p->action].id;
          result.actions.push_back(id);
          result.recovery.push_back("emergency action `" + id + "`");
          result.termination = Termination::emergency_stop;
          result.goal_reached = kernel.goal_reached();
          return result;
        }
        tally(o.decision);
      }
    }
    if (!choice.proposal) {
      detail::record_stop(kernel, choice, result);
      break;
    }
    Outcome o = kernel.execute(*choice.proposal);
    if (!o.decision.approved) {  // another thread changed the state in between, or a guard
      ++result.attempted;
      tally(o.decision);
      if (++refused_in_a_row < 2) continue;
      result.termination = Termination::no_approvable_action;
      result.last_reasons = o.decision.reasons;
      break;
    }
    refused_in_a_row = 0;
    ++result.executed;
    result.actions.push_back(kernel.model().actions[choice.proposal->action].id);
    if (o.receipt) undoable.emplace_back(*o.receipt, std::move(*choice.proposal));
  }
  result.goal_reached = kernel.goal_reached();
  return result;
}

}  // namespace clampai::driver
