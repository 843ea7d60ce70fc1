// Progress of long commands on stderr: a live line on a terminal, a plain line every few
// seconds otherwise (CI logs), nothing when quiet.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace clampai::report {

/// One progress reporter per command. Thread-safe: `phase`, `update` and `status` may be called
/// from any thread (workers report as they finish). A background thread writes the line, so a
/// phase that reports nothing (a search without callbacks) still shows its elapsed time.
///
/// Lines read `clampai <command>: <phase> <done>/<total>, <status>, <seconds> s`.
/// - live (a terminal): the line is rewritten in place with `\r`, from one second on, and
///   erased when the reporter stops, so the report after it starts on a clean line;
/// - plain (not a terminal): a whole line every `interval` (5 s by default);
/// - `interval` 0 (plain only): a line at every `phase` and `update`, and none from the
///   background thread; deterministic, for tests.
class Progress {
 public:
  struct Options {
    std::string command{};  // `verify`, `compose`, ...
    bool enabled = true;    // false: print nothing (`--quiet`)
    bool live = false;      // rewrite one line in place (stderr is a terminal)
    std::chrono::milliseconds interval{5000};
    std::ostream* out = nullptr;  // default std::cerr
  };

  /// The options for stderr: live when it is a terminal; the interval from the environment
  /// variable CLAMPAI_PROGRESS_INTERVAL_MS when set (a number of milliseconds), else 5 s plain
  /// and 0.25 s live; disabled when `quiet`.
  static Options for_stderr(std::string command, bool quiet);

  explicit Progress(Options options);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Starts a phase (`preservation obligations`); `total` 0 means no count is shown.
  void phase(std::string what, std::size_t total = 0);
  /// `done` of the phase's `total` are finished.
  void update(std::size_t done, std::size_t total);
  /// A text computed when a line is written (`1200 steps`), replacing the count; called from
  /// the reporter's thread, so it must be thread-safe and must not call this reporter. Empty:
  /// none.
  void status(std::function<std::string()> describe);
  /// No more output; erases the live line. Idempotent; the destructor calls it.
  void stop();
  /// Wall-clock seconds since the reporter was made.
  [[nodiscard]] double seconds() const;

 private:
  void loop();
  [[nodiscard]] std::string line_locked() const;
  void write_locked();

  Options options_;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_{};
  std::size_t done_ = 0, total_ = 0;
  std::function<std::string()> describe_{};
  bool stopped_ = false;
  bool shown_ = false;  // a live line is on the screen
  std::thread thread_{};
};

}  // namespace clampai::report
