// Approvals from the command line (`clampai run`, `clampai agent`; docs/CLI.md, "Approvals"):
// an action whose spec asks for an approval is put to the person at the terminal, denied, or
// left waiting, as `--approvals` says. Private to the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "clampai/driver/driver.hpp"

namespace clampai::cli {

/// Adds `--approvals prompt|deny|skip` to `cmd`.
void add_approvals_option(CLI::App* cmd, std::string& mode);

/// What answers the run's approval requests (driver::RunOptions::approve) for `mode`:
/// `prompt` asks on standard error and reads the answer from standard input (`y` or `yes`
/// approves, anything else denies, end of input leaves the ticket waiting), `deny` denies every
/// request, `skip` leaves every one waiting; empty: `prompt` when standard input is a terminal,
/// else `skip`.
std::function<driver::ApprovalAnswer(const driver::Ticket&, const kernel::Decision&)> make_approver(
    const std::string& mode);

}  // namespace clampai::cli
