// Approvals (docs/SERVE.md): a served task's tickets are the driver's ticket book
// (driver::Approvals) on the task's committer: its own kernel, or the shared ledger's chain.
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

std::int64_t Task::now() const { return approvals_->now(); }

Task::Asked Task::ask(const ck::Proposal& proposal) { return approvals_->ask(proposal); }

std::vector<Ticket> Task::pending() { return approvals_->pending(); }

Task::Answered Task::answer(std::string_view id,
                            bool approve,
                            const std::string& principal,
                            const std::function<void(const Ticket&)>& check) {
  // A granted ticket commits through the task's execute: its receipt kept for rollback.
  return approvals_->answer(
      id, approve, principal, check, [this](const ck::Proposal& p) { return execute(p); });
}

}  // namespace clampai::server
