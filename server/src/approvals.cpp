// Approvals (docs/SERVE.md): a served task's tickets are the driver's ticket book
// (driver::Approvals) on the task's own kernel; a task on a shared ledger keeps none yet.
#include <chrono>

#include "clampai/kernel/error.hpp"
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

std::int64_t Task::now() const {
  if (approvals_) return approvals_->now();
  if (clock_) return clock_();
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Task::Asked Task::ask(const ck::Proposal& proposal) {
  if (!approvals_)
    throw InvalidArgument("task `" + model_->name +
                          "` is on a shared ledger, where approvals are not kept");
  return approvals_->ask(proposal);
}

std::vector<Ticket> Task::pending() {
  if (!approvals_) return {};
  return approvals_->pending();
}

Task::Answered Task::answer(std::string_view id,
                            bool approve,
                            const std::string& principal,
                            const std::function<void(const Ticket&)>& check) {
  if (!approvals_)
    throw TicketRefused(
        TicketRefused::Why::unknown,
        "task `" + model_->name + "` has no pending ticket `" + std::string(id) + "`");
  // A granted ticket commits through the task's execute: its receipt kept for rollback.
  return approvals_->answer(
      id, approve, principal, check, [this](const ck::Proposal& p) { return execute(p); });
}

}  // namespace clampai::server
