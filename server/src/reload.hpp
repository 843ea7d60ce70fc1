// Reloads behind proofs (docs/SERVE.md, "Reloads"): a task's spec is replaced only if the new
// one is well-formed, `verify` refutes nothing, and the task's current state satisfies every
// blocking invariant of the new spec; the trace records the change (`spec_changed`) and the
// data directory keeps each spec by digest, so a restart replays a trace spanning several.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "task.hpp"

namespace clampai::server {

/// A task's spec file in a data directory: DATA/TASK.spec.json (the spec in force).
std::string spec_file(const std::string& data_dir, const std::string& task);

/// The directory of a data directory where each spec is kept by digest: DATA/specs.
std::string specs_dir(const std::string& data_dir);

/// The specs a task's trace may need: `current`, and those kept by digest in the data
/// directory (DATA/specs/DIGEST.json, each checked to have the digest it is named by).
kernel::SpecsByDigest kept_specs(const std::string& data_dir,
                                 std::shared_ptr<const kernel::TaskModel> current);

/// Writes DATA/TASK.spec.json again from the kept spec of `model`, the spec the trace says is
/// in force (a crash after a reload's `spec_changed` entry and before its spec file was
/// replaced leaves the old one): the trace is the commit point.
void restore_spec_file(const std::string& data_dir,
                       const kernel::TaskModel& model,
                       const std::function<void(const std::string&)>& log);

/// Why the service cannot serve `model` (its name is no task name, it needs the reference
/// monitor, an approval names an unknown right), naming the field; nullopt if it can.
std::optional<std::string> serve_refusal(const kernel::TaskModel& model);

/// A reload refused: which check failed (`spec`, `verify`, `state`, or `ledger` for a task on
/// a shared ledger) and the details (the loader's error, the refuted obligations, the
/// violated invariants and other state that cannot be carried over).
struct ReloadRefused : std::runtime_error {
  ReloadRefused(std::string which, const std::string& message, std::vector<std::string> why)
      : std::runtime_error(message), failed(std::move(which)), details(std::move(why)) {}
  std::string failed;
  std::vector<std::string> details;
};

struct ReloadOptions {
  bool dry_run = false;                    // check only
  std::string principal{};                 // who asks (recorded in the `spec_changed` entry)
  std::uint32_t solver_timeout_ms = 5000;  // each verify obligation's
  TaskStorage storage{};                   // how the task's kernel is made (as open_task)
  /// Test hook: called at `reload:spec-stored` (the new spec kept by digest, nothing else
  /// done) and `reload:trace-appended` (the `spec_changed` entry written, the spec file not
  /// yet replaced).
  std::function<void(std::string_view)> pause{};
  std::function<void(const std::string&)> log{};
};

/// What a reload did (or, on a dry run, would do).
struct Reloaded {
  bool changed = false;  // false: the spec is the one in force already
  std::string previous{}, digest{};
  std::optional<std::uint64_t> sequence{};  // the `spec_changed` entry
  std::vector<std::string> added{}, dropped{};
  std::size_t proved = 0, unknown = 0;  // verify's obligations (unknown is no refutation)
};

/// Replaces `task`'s spec with `text` behind the three checks (`dry_run`: checks only). The
/// checks of the spec and of verify run first, without blocking the task; the state is
/// checked and the kernel replaced holding `task.reload_mutex` exclusively. Must be called
/// without holding it.
/// @throws ReloadRefused (the old spec stays); InvalidArgument if the task is sealed;
/// TraceError or FileError if the trace or the data directory cannot be written.
Reloaded reload_task(Task& task, std::string_view text, const ReloadOptions& options);

/// The answer of `PUT /v1/tasks/{task}/spec`: `task`, `changed`, `dry_run`, `spec_digest`,
/// `previous_digest`, `sequence`, `added`, `dropped`, `verify` (`proved`, `unknown`).
std::string reloaded_json(std::string_view task, const Reloaded& r, bool dry_run);

/// The refusal `{"error": {"code": "reload_refused", "message", "failed", "details"}}`.
std::string refused_json(const ReloadRefused& r);

/// Whether the query of `target` asks for a dry run (`dry_run=1|true|0|false`, nothing else).
/// @throws InvalidArgument for another query parameter or value.
bool dry_run_of(std::string_view target);

}  // namespace clampai::server
