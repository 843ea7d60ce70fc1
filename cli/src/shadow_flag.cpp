#include "shadow_flag.hpp"

#include "clampai/driver/committer.hpp"
#include "clampai/kernel/error.hpp"

namespace clampai::cli {

CLI::Option* add_shadow_flag(CLI::App* cmd, bool& shadow, const std::string& what) {
  return cmd->add_flag("--shadow",
                       shadow,
                       "Shadow mode: each step decided by the kernel and followed whatever it "
                       "decides (nothing blocked, nothing waits for an approval), its trace "
                       "entry marked `enforced: false`; " +
                           what);
}

void refuse_shadow(const ShadowUse& use) {
  if (!use.ledger.empty()) driver::refuse_shadow_on_ledger("--shadow");
  if (use.model != nullptr) driver::refuse_shadow_in_pool(*use.model);
  if (!use.approvals.empty())
    throw InvalidArgument(
        "--approvals cannot be used with --shadow: in shadow mode nothing waits for an "
        "approval (an action that asks for one is followed, as `serve --mode shadow` does)");
  if (use.record_rejections)
    throw InvalidArgument(
        "--record-rejections cannot be used with --shadow: a shadow run traces every step it "
        "takes, the ones the kernel would reject included, and none of the proposals its "
        "chooser only screened");
  if (use.upstream)
    throw InvalidArgument(
        "--upstream cannot be used with --shadow yet: a step the kernel would reject would "
        "reach the upstream tool, and the gateway's outcome entries are enforced steps'");
}

}  // namespace clampai::cli
