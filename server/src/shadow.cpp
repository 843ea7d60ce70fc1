// Shadow mode (docs/SERVE.md, "Shadow mode"): a task's executes decided as the kernel decides
// them and followed whatever the decision (`SafetyKernel::execute_unenforced`).
#include <variant>

#include "clampai/kernel/error.hpp"
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

void Task::enter_shadow_mode() {
  if (shared_)
    throw InvalidArgument("task `" + model_->name +
                          "` is on a shared ledger, whose steps every process on it makes: it "
                          "cannot run in shadow mode (serve it without --ledger)");
  if (!model_->budget.pool.empty())
    throw InvalidArgument("task `" + model_->name + "`: its budget is in pool `" +
                          model_->budget.pool +
                          "`, shared with other tasks that a step not enforced would overdraw: "
                          "it cannot run in shadow mode");
  shadow_ = true;
}

ck::ShadowStep Task::execute_shadow(std::string_view action,
                                    const ck::ParamMap& params,
                                    std::string_view principal) {
  if (!shadow_ || !kernel_)
    throw InvalidArgument("task `" + model_->name + "` is not in shadow mode");
  std::variant<ck::Proposal, ck::Reason> resolved =
      ck::resolve(*model_, action, params, ck::ParamCheck::fitted);
  ck::ShadowStep step = [&] {
    if (ck::Proposal* proposal = std::get_if<ck::Proposal>(&resolved)) {
      proposal->principal = std::string(principal);
      return kernel_->execute_unenforced(*proposal);
    }
    return kernel_->execute_unenforced(action, params);
  }();
  driver::StepResult done{
      step.outcome.receipt ? driver::StepOutcome::committed : driver::StepOutcome::rejected,
      step.outcome};
  (void)remember(std::move(done));  // the receipt, for rollback; a checkpoint if one is due
  return step;
}

}  // namespace clampai::server
