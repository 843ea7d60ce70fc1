// Shadow mode (docs/SERVE.md, "Shadow mode"): a task's executes decided as the kernel decides
// them and followed whatever the decision, through the driver's one shadow step
// (`driver::ShadowCommitter`).
#include "clampai/kernel/error.hpp"
#include "json_out.hpp"
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

void Task::enter_shadow_mode() {
  if (shared_) driver::refuse_shadow_on_ledger("task `" + model_->name + "`: shadow mode");
  committer_ = committer_for(*kernel_, true);  // refuses a budget in a pool
  shadow_ = true;
}

void write_shadow_members(JsonOut& j,
                          const ck::TaskModel& m,
                          std::string_view id,
                          const ck::Decision& would_be,
                          bool pending) {
  j.key("enforced").value(false).key("shadow").begin_object().key("task").value(m.name);
  if (pending) {
    ck::Decision waits = would_be;
    waits.approved = false;
    write_decision_members(j, m, id, waits);
    j.key("pending").value(true);
  } else {
    write_decision_members(j, m, id, would_be);
  }
  j.end_object();
}

std::unique_ptr<driver::Committer> Task::committer_for(ck::SafetyKernel& kernel, bool shadow) {
  if (shadow) return std::make_unique<driver::ShadowCommitter>(kernel);
  return std::make_unique<driver::LocalCommitter>(kernel);
}

}  // namespace clampai::server
