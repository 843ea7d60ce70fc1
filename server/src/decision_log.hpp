// `clampai serve --decision-log FILE`: one JSON line per decision, for SIEMs
// (schema/decision-log.schema.json, docs/SERVE.md). SIGHUP reopens the file (log rotation).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/json.hpp"

namespace clampai::server {

/// One decision as the log records it.
struct LoggedDecision {
  std::string_view task;
  std::string_view principal;  // empty: no authentication (written as null)
  std::string_view endpoint;   // `evaluate` or `execute`
  std::string_view action;
  std::string params_sha256;  // of the request's `params` in RFC 8785 canonical form
  std::string_view outcome;   // `approved` or `rejected`
  const std::vector<kernel::Reason>* reasons = nullptr;
  std::string_view spec_digest;
  std::uint64_t trace_position = 0;  // a commit's entry, else the trace's length then
};

/// The decision log: appended to (created with mode 0600 if missing), a line a write, under the
/// project's file rule (never through a symbolic link nor into a special file).
class DecisionLog {
 public:
  /// @throws FileError naming the file if it cannot be opened.
  explicit DecisionLog(std::string path);
  /// Appends the line of `d` (its `time` now).
  /// @throws FileError if the file cannot be written.
  void write(const LoggedDecision& d);
  /// Opens the path again (after a rotation moved the file away): lines go to the new file.
  /// @throws FileError if it cannot be opened; the old file is kept then.
  void reopen();
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::mutex mutex_;
  std::unique_ptr<kernel::OutputFile> file_;
};

/// The SHA-256 (hex) of the canonical form of `params` (a request's `params`; `{}` when null).
std::string params_digest(const kernel::jsonio::JsonNode* params);

}  // namespace clampai::server
