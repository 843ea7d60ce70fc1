#include "approval_prompt.hpp"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

namespace clampai::cli {

namespace cd = clampai::driver;

void add_approvals_option(CLI::App* cmd, std::string& mode) {
  cmd->add_option("--approvals",
                  mode,
                  "What happens to an action whose spec asks for an approval: prompt (ask on "
                  "the terminal and wait for the answer), deny (deny it), skip (leave its ticket "
                  "waiting and go on without it); default: prompt when standard input is a "
                  "terminal, else skip")
      ->option_text("MODE")
      ->check(CLI::IsMember({"prompt", "deny", "skip"}));
}

namespace {

// Who answers at this terminal: `terminal:NAME`, the user's login name.
std::string terminal_principal() {
  const passwd* pw = getpwuid(geteuid());
  return std::string("terminal:") + (pw != nullptr && pw->pw_name != nullptr
                                         ? pw->pw_name
                                         : std::to_string(geteuid()).c_str());
}

cd::ApprovalAnswer ask_on_terminal(const cd::Ticket& t, const std::string& principal) {
  std::string what = "`" + t.action + "`";
  if (!t.params.empty()) {
    what += " (";
    for (std::size_t i = 0; i < t.params.size(); ++i)
      what += (i ? ", " : "") + t.params[i].first + "=" + t.params[i].second.to_string();
    what += ")";
  }
  const std::int64_t ttl = (t.expires_us - t.requested_us) / 1'000'000;
  std::cerr << "clampai: " << what << " needs an approval (ticket " << t.id << ", valid " << ttl
            << " s)\napprove " << what << "? [y/N] " << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) {
    std::cerr << "\nclampai: no answer (end of input): ticket " << t.id << " stays waiting\n";
    return {cd::ApprovalAnswer::Kind::wait, {}};
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  while (!line.empty() && line.front() == ' ') line.erase(0, 1);
  const bool yes = line == "y" || line == "Y" || line == "yes" || line == "YES" || line == "Yes";
  return {yes ? cd::ApprovalAnswer::Kind::grant : cd::ApprovalAnswer::Kind::deny, principal};
}

}  // namespace

std::function<cd::ApprovalAnswer(const cd::Ticket&, const kernel::Decision&)> make_approver(
    const std::string& mode) {
  const std::string m = !mode.empty() ? mode : isatty(STDIN_FILENO) == 1 ? "prompt" : "skip";
  if (m == "deny")
    return [](const cd::Ticket&, const kernel::Decision&) {
      return cd::ApprovalAnswer{cd::ApprovalAnswer::Kind::deny, "--approvals deny"};
    };
  if (m == "prompt")
    return [principal = terminal_principal()](const cd::Ticket& t, const kernel::Decision&) {
      return ask_on_terminal(t, principal);
    };
  return [](const cd::Ticket&, const kernel::Decision&) { return cd::ApprovalAnswer{}; };
}

}  // namespace clampai::cli
