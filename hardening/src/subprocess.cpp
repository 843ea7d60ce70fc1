// posix_spawn without a shell: the allowlist check pinned to the file's identity, the scrubbed
// environment, rlimits, the output cap and the process-group kill.
#include "clampai/hardening/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "clampai/kernel/error.hpp"

namespace clampai::hardening {
namespace {

using clampai::InvalidArgument;

std::string os_error(int err) { return std::strerror(err); }

// realpath(3), or nullopt with errno set.
std::optional<std::string> resolve(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (r == nullptr) return std::nullopt;
  std::string out(r);
  std::free(r);
  return out;
}

// Closes a descriptor on every path out of a scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace

ProgramAllowlist::Pin ProgramAllowlist::pin_of(const struct stat& st) {
  // The inode alone is not enough: a deleted file's inode number is soon reused. The change
  // time cannot be set by anyone and moves with every write or chmod.
  return Pin{static_cast<std::uint64_t>(st.st_dev),
             static_cast<std::uint64_t>(st.st_ino),
             static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec,
             static_cast<std::uint64_t>(st.st_size)};
}

ProgramAllowlist::ProgramAllowlist(const std::vector<std::string>& programs) {
  for (const std::string& p : programs) {
    if (p.empty() || p.front() != '/')
      throw InvalidArgument("allowlist: `" + p + "` is not an absolute path");
    const auto real = resolve(p);
    if (!real) throw InvalidArgument("allowlist: `" + p + "`: " + os_error(errno));
    struct stat st {};
    if (::stat(real->c_str(), &st) != 0)
      throw InvalidArgument("allowlist: `" + p + "`: " + os_error(errno));
    if (!S_ISREG(st.st_mode)) throw InvalidArgument("allowlist: `" + p + "` is not a regular file");
    if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0)
      throw InvalidArgument("allowlist: `" + p + "` is not executable");
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      throw InvalidArgument("allowlist: `" + p +
                            "` is writable by its group or others (anyone could replace it)");
    if (std::find(paths_.begin(), paths_.end(), *real) != paths_.end()) continue;
    paths_.push_back(*real);
    pins_.push_back(pin_of(st));
  }
}

std::optional<std::string> ProgramAllowlist::refusal(const std::string& program) const {
  if (program.empty()) return std::string("no program given");
  if (program.front() != '/')
    return "`" + program + "` is not an absolute path (programs are never looked up in PATH)";
  const auto real = resolve(program);
  if (!real) return "`" + program + "`: " + os_error(errno);
  if (*real != program)
    return "`" + program + "` resolves to `" + *real +
           "`: give the resolved path (symlinks and `..` are refused)";
  if (std::find(paths_.begin(), paths_.end(), program) == paths_.end())
    return "`" + program + "` is not in the allowlist";
  return std::nullopt;
}

SubprocessRunner::SubprocessRunner(ProgramAllowlist allowlist,
                                   SubprocessLimits limits,
                                   std::vector<std::pair<std::string, std::string>> environment,
                                   std::string working_directory)
    : allowlist_(std::move(allowlist)),
      limits_(limits),
      working_directory_(std::move(working_directory)) {
  for (const auto& [name, value] : environment) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos || value.find('\0') != std::string::npos)
      throw InvalidArgument("environment: invalid variable name `" + name + "`");
    environment_.push_back(name + "=" + value);
  }
  if (limits_.max_output_bytes == 0)
    throw InvalidArgument("subprocess limits: `max_output_bytes` must be positive");
  if (!working_directory_.empty()) {
    struct stat st {};
    if (working_directory_.front() != '/' || working_directory_.find('\0') != std::string::npos)
      throw InvalidArgument("working directory `" + working_directory_ +
                            "`: an absolute path is needed");
    if (::stat(working_directory_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw InvalidArgument("working directory `" + working_directory_ +
                            "`: not an existing directory");
  }
}

namespace {

void set_limits(pid_t pid, const SubprocessLimits& l) {
  // posix_spawn cannot set rlimits in the child: they are applied right after the spawn
  // (docs/HARDENING.md says what that window means). A child that already exited is fine.
  const std::array<std::pair<int, std::uint64_t>, 4> limits{{{RLIMIT_CPU, l.cpu_seconds},
                                                             {RLIMIT_AS, l.address_space_bytes},
                                                             {RLIMIT_NOFILE, l.open_files},
                                                             {RLIMIT_FSIZE, l.file_size_bytes}}};
  for (const auto& [resource, value] : limits) {
    if (value == 0) continue;
    struct rlimit r {};
    r.rlim_cur = static_cast<rlim_t>(value);
    r.rlim_max = static_cast<rlim_t>(value);
    (void)::prlimit(pid, static_cast<__rlimit_resource>(resource), &r, nullptr);
  }
}

// True once `pid` has exited (or was killed); the child is left unreaped (WNOWAIT) so that its
// process-group id cannot be reused before the group is killed.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  info.si_pid = 0;
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
    return true;  // no such child any more
  return info.si_pid == pid;
}

}  // namespace

SubprocessResult SubprocessRunner::run(const std::vector<std::string>& argv) const {
  SubprocessResult result;
  if (argv.empty()) {
    result.error = "empty argument vector";
    return result;
  }
  if (auto why = allowlist_.refusal(argv[0])) {
    result.error = "refused: " + *why;
    return result;
  }

  // Pin the file: what runs is the inode that was allowlisted, whatever happens to the path.
  Fd program(::open(argv[0].c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW));
  if (program.get() < 0) {
    result.error = "cannot open `" + argv[0] + "`: " + os_error(errno);
    return result;
  }
  struct stat st {};
  if (::fstat(program.get(), &st) != 0) {
    result.error = "cannot stat `" + argv[0] + "`: " + os_error(errno);
    return result;
  }
  const auto at = std::find(allowlist_.paths_.begin(), allowlist_.paths_.end(), argv[0]);
  const auto& pin = allowlist_.pins_[static_cast<std::size_t>(at - allowlist_.paths_.begin())];
  if (ProgramAllowlist::pin_of(st) != pin) {
    result.error = "refused: `" + argv[0] + "` is no longer the file that was allowlisted";
    return result;
  }
  // The child runs the pinned descriptor as fd 3 (every other descriptor above 2 is closed):
  // the program inherits fd 3, an O_PATH descriptor of its own file, which grants nothing.
  const std::string exec_path = "/proc/self/fd/3";

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.error = "pipe: " + os_error(errno);
    return result;
  }
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (const std::string& e : environment_) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  ::posix_spawn_file_actions_adddup2(&actions, program.get(), 3);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  if (!working_directory_.empty())
    ::posix_spawn_file_actions_addchdir_np(&actions, working_directory_.c_str());
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(
      &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, exec_path.c_str(), &actions, &attr, args.data(), env.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  write_end.reset();
  program.reset();
  if (rc != 0) {
    result.error = "cannot run `" + argv[0] + "`: " + os_error(rc);
    return result;
  }
  result.started = true;
  set_limits(pid, limits_);
  (void)::fcntl(read_end.get(), F_SETFL, O_NONBLOCK);

  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limits_.timeout;
  std::array<char, 64 * 1024> buffer{};
  bool eof = false;
  bool exited = false;
  // Reads what is available; false once the cap is exceeded.
  auto drain = [&]() {
    for (;;) {
      const ssize_t n = ::read(read_end.get(), buffer.data(), buffer.size());
      if (n > 0) {
        const std::size_t room = limits_.max_output_bytes - result.output.size();
        if (static_cast<std::size_t>(n) > room) {
          result.output.append(buffer.data(), room);
          result.output_capped = true;
          return false;
        }
        result.output.append(buffer.data(), static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) eof = true;
      if (n < 0 && errno == EINTR) continue;
      return true;
    }
  };
  while (true) {
    if (!drain()) break;
    if (has_exited(pid)) {
      exited = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      result.timed_out = true;
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (eof) {
      // The output is closed but the program runs on: wait for it a little at a time.
      struct timespec ts {
        0, 5'000'000
      };
      ::nanosleep(&ts, nullptr);
      continue;
    }
    struct pollfd pfd {
      read_end.get(), POLLIN, 0
    };
    (void)::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 50)));
  }
  // Every path ends here: kill the group (descendants included), then reap the leader.
  (void)::kill(-pid, SIGKILL);
  if (exited && !result.output_capped) (void)drain();  // what it wrote before exiting
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  if (result.timed_out) {
    result.error =
        "timed out after " + std::to_string(limits_.timeout.count()) + " ms (process group killed)";
  } else if (result.output_capped) {
    result.error = "output exceeded " + std::to_string(limits_.max_output_bytes) +
                   " bytes (process group killed)";
  }
  return result;
}

namespace {

// One piece of an argument: literal text, or the name of a variable to substitute.
struct Piece {
  bool variable = false;
  std::string text;
};

std::vector<Piece> parse_placeholders(const std::string& text) {
  std::vector<Piece> pieces(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      pieces.back().text += c;  // `{{` or `}}`
      ++i;
    } else if (c == '}') {
      throw InvalidArgument("`" + text + "`: unmatched `}` (write `}}` for a brace)");
    } else if (c == '{') {
      const std::size_t close = text.find_first_of("{}", i + 1);
      if (close == std::string::npos || text[close] != '}')
        throw InvalidArgument("`" + text + "`: unclosed `{` (write `{{` for a brace)");
      pieces.push_back(Piece{true, text.substr(i + 1, close - i - 1)});
      pieces.push_back(Piece{});
      i = close;
    } else {
      pieces.back().text += c;
    }
  }
  return pieces;
}

}  // namespace

std::string substitute_state(const std::string& text, const AttestationContext& context) {
  std::string out;
  for (const Piece& p : parse_placeholders(text)) {
    if (!p.variable) {
      out += p.text;
      continue;
    }
    if (context.state == nullptr)
      throw InvalidArgument("`{" + p.text + "}`: no state to read it from");
    const auto id = context.state->schema().find(p.text);
    if (!id) throw InvalidArgument("`{" + p.text + "}`: unknown variable `" + p.text + "`");
    const kernel::Value& v = context.state->get(*id);
    out += v.kind() == kernel::Value::Kind::string ? v.as_string() : v.to_string();
  }
  return out;
}

SubprocessAttestor::SubprocessAttestor(std::string name,
                                       std::vector<std::string> argv,
                                       SubprocessRunner runner)
    : name_(std::move(name)), argv_(std::move(argv)), runner_(std::move(runner)) {
  if (name_.empty()) throw InvalidArgument("subprocess attestor: empty name");
  if (argv_.empty()) throw InvalidArgument("attestor `" + name_ + "`: empty command");
  for (std::size_t i = 1; i < argv_.size(); ++i) {
    try {
      (void)parse_placeholders(argv_[i]);  // refused now, not at the first attestation
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("attestor `" + name_ + "`: argument " + std::to_string(i) + ": " +
                            e.what());
    }
  }
}

Attestation SubprocessAttestor::attest(const AttestationContext& context) const {
  Attestation a;
  a.attestor = name_;
  std::vector<std::string> argv{argv_.front()};
  try {
    for (std::size_t i = 1; i < argv_.size(); ++i)
      argv.push_back(substitute_state(argv_[i], context));
  } catch (const clampai::Error& e) {
    a.error = e.what();
    return a;
  }
  SubprocessResult r = runner_.run(argv);
  a.evidence = std::move(r.output);
  if (!r.error.empty()) {
    a.error = std::move(r.error);
  } else if (r.term_signal) {
    a.error = "killed by signal " + std::to_string(*r.term_signal);
  } else if (r.exit_code && *r.exit_code != 0) {
    a.evidence = "exit status " + std::to_string(*r.exit_code) +
                 (a.evidence.empty() ? "" : ": " + a.evidence);
  }
  a.passed = a.error.empty() && r.exit_code && *r.exit_code == 0;
  return a;
}

}  // namespace clampai::hardening
