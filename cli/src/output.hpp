// Output helpers shared by the `clampai` subcommands (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/value.hpp"
#include "clampai/report/format.hpp"
#include "clampai/report/verify.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::cli {

/// `clampai verify --depth K`: can the goal be reached from the initial state within K steps
/// and the budget? `infeasible` (not reachable, proved for every run) when the search was
/// complete, K covers the T2 step bound and there is no emergency action (which could add steps).
/// The search stops, incomplete, at `deadline` (the run's `--timeout`).
report::GoalSummary check_goal(
    const kernel::TaskModel& m,
    unsigned depth,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

/// The default of `--jobs`: one worker per core (verdicts do not depend on it).
unsigned default_jobs();

/// Adds `--timeout SECONDS` (the whole run's wall-time limit, 0: none) to `cmd`: `verify` and
/// `compose`.
void add_run_timeout_option(CLI::App* cmd, double& seconds);
/// The `--timeout` in milliseconds (0: none; a positive value is at least 1 ms).
std::uint64_t run_timeout_ms(double seconds);

/// Parameter values from a JSON object (`{"n": 3, "amount": "12.50"}`): numbers read exactly
/// from their text, or strings holding exact decimals (kernel::parse_named_numbers). An empty
/// text is no parameters.
/// @throws SpecError naming `option` (or `option.NAME`) for malformed input.
kernel::ParamMap parse_params(const std::string& text, const std::string& option = "--params");

/// Loads `spec` and the situation to work in: its initial one, with the state `state` if that
/// is not empty: inline JSON when it starts with `{`, else the name of a JSON file.
/// @throws SpecError naming the file at fault.
std::pair<std::shared_ptr<const kernel::TaskModel>, kernel::Situation> load_situation(
    const std::string& spec, const std::string& state);

/// `--quiet` of every subcommand: no progress on stderr (errors are still printed).
bool& quiet();
/// Adds `-q,--quiet` to `cmd`, setting `quiet()`.
void add_quiet_flag(CLI::App* cmd);

/// Ends `clampai CMD --help` with the command's exit codes, one example of it and the page that
/// documents it (`docs/VERIFY.md`), one line each.
void set_help_footer(CLI::App* cmd,
                     const std::string& exit_codes,
                     const std::string& example,
                     const std::string& doc);

/// The format named by a validated `--format` value (text for anything else).
report::Format format_of(const std::string& name);

/// The text of an error about `input` (the file named on the command line): for a spec error,
/// one line per problem, `INPUT:LINE:COLUMN: json.path: message` as compilers write them (a
/// problem with an option, whose path starts with `--`, is not located in the file); otherwise
/// `INPUT: message`.
std::string describe(const std::string& input, const clampai::Error& e);

/// The pools file of `--pools FILE` for a task of `model` (docs/POOLS.md), or null when `file`
/// is empty. `option` names the flag in errors.
/// @throws SpecError at `budget.pool` if the spec names a pool and no file is given; SpecError
/// at `--pools` naming the file, line and column if the file is bad; FileError if it cannot be
/// read.
std::shared_ptr<kernel::PoolTree> load_pools_option(const std::string& file,
                                                    const kernel::TaskModel* model,
                                                    const std::string& option = "--pools");
/// @throws InvalidArgument if both `--pools FILE` and `--ledger URL` are given: on a ledger the
/// pools are the ledger's (`clampai ledger pools apply`, docs/POOLS.md).
void refuse_pools_file_on_ledger(const std::string& pools, const std::string& ledger);
/// The same for several tasks (serve): every spec naming a pool needs the file.
std::shared_ptr<kernel::PoolTree> load_pools_option(
    const std::string& file,
    const std::vector<std::shared_ptr<const kernel::TaskModel>>& models,
    const std::string& option = "--pools");

/// Reports a command that could not do its work: `clampai: error: MESSAGE` on stderr (each line
/// of a message of several lines so prefixed) and, with
/// `format` json, sarif or junit, a report carrying the error on stdout (so CI shows it rather
/// than an empty file). `input` is the file named on the command line; a message that starts
/// with a position in it (`FILE: LINE:COLUMN: ...`) locates the error there. Returns 2.
int fail(const std::string& format,
         const std::string& command,
         const std::string& input,
         const std::string& message,
         bool internal = false);

}  // namespace clampai::cli
