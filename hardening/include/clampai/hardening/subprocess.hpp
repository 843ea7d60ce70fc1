// Running an allowlisted program without a shell: posix_spawn with an argument vector, a
// scrubbed environment, resource limits, an output cap and a timeout that kills the whole
// process group. The SubprocessAttestor and the command probes are built on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct stat;

#include "clampai/hardening/attestor.hpp"

namespace clampai::hardening {

/// The programs a subprocess may run, by resolved absolute path. Each entry is resolved once
/// (symlinks and `..` followed) and pinned to its file identity (device, inode, change time and
/// size); a program is accepted only if the path asked for is already that resolved path (no
/// symlink, no `..`, no `PATH` lookup, no basename match) and the file found there when it runs is
/// the one pinned.
class ProgramAllowlist {
 public:
  ProgramAllowlist() = default;
  /// @throws clampai::InvalidArgument naming the entry if it is not absolute, does not exist, is
  /// not a regular executable file, or is writable by its group or others.
  explicit ProgramAllowlist(const std::vector<std::string>& programs);
  /// The resolved paths, in the order given (duplicates removed).
  [[nodiscard]] const std::vector<std::string>& programs() const noexcept { return paths_; }
  /// Why `program` is refused, or nullopt if it is allowed.
  [[nodiscard]] std::optional<std::string> refusal(const std::string& program) const;

 private:
  // The file's identity: device, inode, change time (ns) and size.
  struct Pin {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::int64_t ctime_ns = 0;
    std::uint64_t size = 0;
    bool operator==(const Pin&) const = default;
  };
  static Pin pin_of(const struct stat& st);
  std::vector<std::string> paths_;
  std::vector<Pin> pins_;
  friend class SubprocessRunner;
};

/// Limits of one run.
struct SubprocessLimits {
  /// Wall-clock time before the whole process group is killed (SIGKILL).
  std::chrono::milliseconds timeout{5000};
  /// Bytes of standard output and standard error (together) kept; one byte more kills the
  /// process group and fails the run.
  std::size_t max_output_bytes = 64 * 1024;
  /// RLIMIT_CPU (seconds), RLIMIT_AS (bytes), RLIMIT_NOFILE, RLIMIT_FSIZE (bytes); 0: inherit.
  std::uint64_t cpu_seconds = 10;
  std::uint64_t address_space_bytes = 1ull << 30;
  std::uint64_t open_files = 64;
  std::uint64_t file_size_bytes = 16ull << 20;
};

/// What a run did.
struct SubprocessResult {
  bool started = false;              // the program was spawned
  bool timed_out = false;            // killed at the timeout
  bool output_capped = false;        // killed for writing more than the cap
  std::optional<int> exit_code{};    // set iff it exited normally
  std::optional<int> term_signal{};  // set iff a signal ended it
  std::string output{};              // stdout and stderr interleaved, at most the cap
  std::string error{};               // why it did not start or did not finish
};

/// Runs allowlisted programs. Thread-safe (each run is independent).
class SubprocessRunner {
 public:
  /// `environment` is the complete environment of the child (nothing is inherited); the
  /// default is `PATH=/usr/bin:/bin` and `LC_ALL=C`. `working_directory`, if not empty, is the
  /// child's current directory (default: the caller's).
  /// @throws clampai::InvalidArgument if a variable name is empty or holds `=` or a NUL, or
  /// the working directory is not an absolute path to an existing directory.
  explicit SubprocessRunner(ProgramAllowlist allowlist,
                            SubprocessLimits limits = {},
                            std::vector<std::pair<std::string, std::string>> environment =
                                {{"PATH", "/usr/bin:/bin"}, {"LC_ALL", "C"}},
                            std::string working_directory = {});
  /// Runs `argv` (argv[0] the program's absolute path) with stdin from /dev/null, in a new
  /// process group, and waits for it. Never throws for what the program does; a refused
  /// program or an empty argv is a result with `started == false` and the reason. The process
  /// group is killed (SIGKILL) on the timeout, on the output cap, and after the program exits
  /// (so no descendant left in the group outlives the run).
  [[nodiscard]] SubprocessResult run(const std::vector<std::string>& argv) const;

  [[nodiscard]] const SubprocessLimits& limits() const noexcept { return limits_; }

 private:
  ProgramAllowlist allowlist_;
  SubprocessLimits limits_;
  std::vector<std::string> environment_;  // NAME=value
  std::string working_directory_;         // empty: the caller's
};

/// An attestor that runs a program: passes iff it exits with status 0 within the limits.
/// Each argument may refer to state variables as `{name}` (`{{` and `}}` are literal braces):
/// the value is substituted into that one argument, never through a shell, so shell
/// metacharacters in values are inert. Level: empirical (docs/HARDENING.md).
class SubprocessAttestor final : public Attestor {
 public:
  /// @throws clampai::InvalidArgument if `name` or `argv` is empty, or a placeholder is
  /// malformed (an unclosed `{`).
  SubprocessAttestor(std::string name, std::vector<std::string> argv, SubprocessRunner runner);
  [[nodiscard]] const std::string& name() const override { return name_; }
  [[nodiscard]] Attestation attest(const AttestationContext& context) const override;

 private:
  std::string name_;
  std::vector<std::string> argv_;
  SubprocessRunner runner_;
};

}  // namespace clampai::hardening
