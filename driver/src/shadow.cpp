// Shadow mode's committer (committer.hpp): the local kernel, each step followed whatever its
// decision. The one shadow step of every front end: `run --shadow`, `agent --shadow`,
// `mcp --shadow` and `serve`'s shadow tasks.
#include "clampai/driver/driver.hpp"
#include "clampai/kernel/error.hpp"

namespace clampai::driver {

using kernel::Outcome;

void refuse_shadow_on_ledger(std::string_view flags) {
  throw InvalidArgument(std::string(flags) +
                        " cannot be used with --ledger: a task on a shared ledger commits steps "
                        "every process on it relies on, so none can be left unenforced");
}

void refuse_shadow_in_pool(const kernel::TaskModel& model) {
  if (model.budget.pool.empty()) return;
  throw InvalidArgument("task `" + model.name + "`: its budget is in pool `" + model.budget.pool +
                        "`, shared with other tasks that a step not enforced would overdraw: "
                        "it cannot run in shadow mode");
}

kernel::ShadowStep Committer::follow(const Proposal& /*proposal*/) {
  throw InvalidArgument("this committer enforces its decisions: it follows no step unenforced");
}
kernel::ShadowStep Committer::follow(std::string_view action_id,
                                     const kernel::ParamMap& /*params*/) {
  throw InvalidArgument("this committer enforces its decisions: it follows no step (`" +
                        std::string(action_id) + "`) unenforced");
}

ShadowCommitter::ShadowCommitter(kernel::SafetyKernel& kernel) : kernel_(kernel) {
  refuse_shadow_in_pool(kernel.model());
}

kernel::ShadowStep ShadowCommitter::follow(const Proposal& proposal) {
  return kernel_.execute_unenforced(proposal);
}
kernel::ShadowStep ShadowCommitter::follow(std::string_view action_id,
                                           const kernel::ParamMap& params) {
  return kernel_.execute_unenforced(action_id, params);
}
Outcome ShadowCommitter::commit(const Proposal& proposal) {
  return std::move(follow(proposal).outcome);
}
Outcome ShadowCommitter::commit_named(std::string_view action_id, const kernel::ParamMap& params) {
  return std::move(follow(action_id, params).outcome);
}
Decision ShadowCommitter::record_rejection(const Proposal& proposal) {
  return kernel_.evaluate(proposal);
}
std::optional<Outcome> ShadowCommitter::rollback(const kernel::Receipt& receipt) {
  return kernel_.rollback(receipt);
}

std::optional<Proposal> ShadowCommitter::when_stuck(const Choice& choice) {
  // What the enforcing run would have stopped at: the chooser's first screened rejection,
  // followed; the kernel's step bound ends the run (each such step counts against it).
  if (choice.rejected_proposals.empty() || !steps_left(kernel_)) return std::nullopt;
  return choice.rejected_proposals.front();
}

}  // namespace clampai::driver
