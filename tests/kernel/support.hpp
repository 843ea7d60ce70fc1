// Helpers shared by the kernel tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clampai/kernel.hpp"

namespace clampai::test {

/// A spec with counters `a`, `b` (int, initial 0) and the given actions/invariants/budget JSON.
inline std::shared_ptr<const kernel::TaskModel> model_from(const std::string& json) {
  return kernel::load_spec(json);
}

/// The path of a file in the source tree.
inline std::string source_path(const std::string& relative) {
  return std::string(CLAMPAI_SOURCE_DIR) + "/" + relative;
}

/// A fresh path in the temporary directory (unique per process and call).
inline std::string temp_file(const std::string& name) {
  static std::atomic<int> counter{0};
  return (std::filesystem::temp_directory_path() /
          ("clampai-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + name))
      .string();
}

/// Runs `hold` in a child process, which then keeps what it took (a file's lock) until this
/// object is destroyed: what another process holds while a test looks. The child only runs
/// `hold` and waits (no thread: it may be forked from a test that has some).
class InChild {
 public:
  explicit InChild(const std::function<void()>& hold) {
    int ready[2];
    int done[2];
    if (::pipe(ready) != 0 || ::pipe(done) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(done[1]);
      char c = 1;
      try {
        hold();
      } catch (...) {
        ::_exit(1);  // `ok()` is false: the parent reads nothing
      }
      if (::write(ready[1], &c, 1) == 1) (void)!::read(done[0], &c, 1);  // until released
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(done[0]);
    done_ = done[1];
    char c = 0;
    ok_ = pid_ > 0 && ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
  }
  ~InChild() {
    if (done_ >= 0) ::close(done_);  // the child's read returns: it exits, and its locks go
    if (pid_ > 0) {
      int status = 0;
      (void)::waitpid(pid_, &status, 0);
    }
  }
  InChild(const InChild&) = delete;
  InChild& operator=(const InChild&) = delete;
  /// True once `hold` has returned in the child (which is still alive).
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  pid_t pid_ = -1;
  int done_ = -1;
  bool ok_ = false;
};

/// The lines of a file, without their newlines.
inline std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// Writes `lines`, each followed by a newline, then `tail` (a last line without its newline).
inline void write_lines(const std::string& path,
                        const std::vector<std::string>& lines,
                        const std::string& tail = "") {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& l : lines) out << l << '\n';
  out << tail;
}

/// A fixed clock, so that traces are reproducible.
inline kernel::KernelOptions fixed_clock(kernel::KernelOptions options = {}) {
  options.clock = [] { return std::int64_t{1700000000000000}; };
  return options;
}

}  // namespace clampai::test
