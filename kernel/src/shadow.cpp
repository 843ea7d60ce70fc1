// Shadow mode (issue 40): a step decided as `execute` decides it and committed whatever the
// decision, its trace entry marked `enforced: false`. Kept apart from the enforcing commit path
// (safety_kernel.cpp), whose cost it does not touch.
#include <mutex>
#include <optional>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "decide.hpp"
#include "store.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {

ShadowStep SafetyKernel::unenforced_rejection_locked(TraceEntry entry,
                                                     Decision&& decision,
                                                     std::string* line) {
  entry.kind = EntryKind::rejected;
  entry.enforced = false;
  entry.changes.clear();
  entry.cost = model_->format_amount(0);
  entry.reasons = decision.reasons;
  entry.warnings = decision.warnings;
  append_locked(entry, steps_, emergency_steps_, budget_, line);
  impl_->trim(options_.trace_window);
  Decision done = decision;
  return ShadowStep{std::move(decision), Outcome{std::move(done), std::nullopt, state_, {}}};
}

ShadowStep SafetyKernel::execute_unenforced(const Proposal& proposal) {
  std::string line;
  std::uint64_t sequence = 0;
  std::optional<ShadowStep> out;
  {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    if (pool_)
      throw InvalidArgument("task `" + model_->name + "`: its budget is in pool `" +
                            model_->budget.pool +
                            "`, shared with other tasks: a step that is not enforced would "
                            "overdraw them, so it cannot run in shadow mode");
    // The would-be decision: exactly `execute`'s (decide_at, the guard, the pools).
    Decision d = evaluate_locked(state_, proposal);
    // What the step does, computed the same way without a check.
    Amount cost = 0;
    Changes changes;
    std::vector<Value> operands;
    bool computed = detail::preview_at(*model_, state_, proposal, cost, changes, &operands);
    BudgetController budget_after = budget_;
    if (computed) {
      try {
        budget_after.charge_unenforced(cost);
      } catch (const InvalidArgument&) {  // a negative cost, or gross spend out of range
        computed = false;
      }
    }
    TraceEntry entry;
    entry.principal = proposal.principal;
    if (proposal.action < model_->actions.size()) {
      const Action& a = model_->actions[proposal.action];
      entry.action = a.id;
      entry.params = detail::named_params(a, proposal.params);
    }
    std::string* writer_line = options_.writer ? &line : nullptr;
    if (!computed) {
      // Nothing the state could follow: recorded, nothing committed.
      if (d.reasons.empty())  // unreachable: decide_at fails whatever preview_at fails on
        d.reasons.push_back(detail::reason(
            ReasonCode::overflow, entry.action, "the effects of `" + entry.action + "` overflow"));
      out = unenforced_rejection_locked(std::move(entry), std::move(d), writer_line);
      sequence = impl_->next_sequence() - 1;
    } else {
      const Action& a = model_->actions[proposal.action];
      State next = state_.with(changes);
      entry.kind = EntryKind::executed;
      entry.enforced = false;
      for (const auto& [id, v] : changes) entry.changes.emplace_back(model_->variables[id].name, v);
      entry.cost = model_->format_amount(cost);
      entry.emergency = a.emergency;
      entry.reasons = d.reasons;  // the would-be rejection's, empty if it would be approved
      entry.warnings = d.warnings;
      Impl& k = *impl_;
      sequence = k.next_sequence();
      k.push_undo(sequence, proposal.action, a, cost, operands, state_, changes, proposal.params);
      try {
        append_locked(entry,
                      steps_ + (a.emergency ? 0 : 1),
                      emergency_steps_ + (a.emergency ? 1 : 0),
                      budget_after,
                      writer_line);
      } catch (...) {
        k.pop_undo_back();
        throw;
      }
      // Commit: nothing below throws. The theorems' invariants (budget-safe, step-bound,
      // state-valid) are not kept by this step: that is what shadow mode is.
      commit_step_locked(
          sequence, proposal.action, a.emergency, budget_after, changes, std::move(next));
      k.trim(options_.trace_window);
      Decision done;
      done.approved = true;
      done.action = proposal.action;
      done.cost = cost;
      done.emergency = a.emergency;
      done.warnings = d.warnings;
      done.changes = std::move(changes);
      out.emplace(ShadowStep{
          std::move(d),
          Outcome{std::move(done), Receipt{sequence, proposal.action, cost}, state_, {}}});
    }
  }
  if (options_.writer) write_line(sequence, std::move(line));
  return std::move(*out);
}

ShadowStep SafetyKernel::execute_unenforced(std::string_view action_id, const ParamMap& params) {
  auto resolved = kernel::resolve(*model_, action_id, params, ParamCheck::fitted);
  if (auto* p = std::get_if<Proposal>(&resolved)) return execute_unenforced(*p);
  // What does not resolve is rejected by `execute` too, for the same reason: recorded as
  // given, nothing committed.
  Decision d;
  // The decision `execute` answers: with checked parameters (a bound the fitted resolve
  // passes is reported as `execute` reports it).
  auto checked = resolve(action_id, params);
  d.reasons.push_back(std::get_if<Reason>(&checked) != nullptr ? std::get<Reason>(checked)
                                                               : std::get<Reason>(resolved));
  std::string line;
  std::uint64_t sequence = 0;
  std::optional<ShadowStep> out;
  {
    std::lock_guard lock(mutex_);
    if (sealed_) throw InvalidArgument("the kernel is sealed: nothing can execute after the seal");
    TraceEntry entry;
    entry.action = std::string(action_id);
    entry.params = params;
    out = unenforced_rejection_locked(
        std::move(entry), std::move(d), options_.writer ? &line : nullptr);
    sequence = impl_->next_sequence() - 1;
  }
  if (options_.writer) write_line(sequence, std::move(line));
  return std::move(*out);
}

}  // namespace clampai::kernel
