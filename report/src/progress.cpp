#include "clampai/report/progress.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

namespace clampai::report {

namespace {

constexpr std::chrono::milliseconds kPlainInterval{5000};
constexpr std::chrono::milliseconds kLiveInterval{250};
constexpr std::chrono::milliseconds kLiveDelay{1000};  // a quick command shows no line

std::string one_decimal(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds);
  return buf;
}

}  // namespace

Progress::Options Progress::for_stderr(std::string command, bool quiet) {
  Options o;
  o.command = std::move(command);
  o.enabled = !quiet;
  o.live = ::isatty(STDERR_FILENO) != 0;
  o.interval = o.live ? kLiveInterval : kPlainInterval;
  if (const char* env = std::getenv("CLAMPAI_PROGRESS_INTERVAL_MS"); env != nullptr) {
    const std::string_view text(env);
    unsigned long ms = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec == std::errc() && end == text.data() + text.size() && ms <= 3'600'000)
      o.interval = std::chrono::milliseconds(ms);
  }
  return o;
}

Progress::Progress(Options options)
    : options_(std::move(options)), start_(std::chrono::steady_clock::now()) {
  if (options_.out == nullptr) options_.out = &std::cerr;
  if (options_.live && options_.interval.count() == 0) options_.interval = kLiveInterval;
  if (options_.enabled && options_.interval.count() > 0) thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { stop(); }

void Progress::phase(std::string what, std::size_t total) {
  std::lock_guard lock(mutex_);
  phase_ = std::move(what);
  done_ = 0;
  total_ = total;
  if (options_.enabled && options_.interval.count() == 0 && !stopped_) write_locked();
}

void Progress::update(std::size_t done, std::size_t total) {
  std::lock_guard lock(mutex_);
  done_ = done;
  total_ = total;
  if (options_.enabled && options_.interval.count() == 0 && !stopped_) write_locked();
}

void Progress::status(std::function<std::string()> describe) {
  std::lock_guard lock(mutex_);
  describe_ = std::move(describe);
}

void Progress::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    if (shown_) {
      *options_.out << "\r\033[K" << std::flush;
      shown_ = false;
    }
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::line_locked() const {
  std::string line = "clampai " + options_.command + ": " + (phase_.empty() ? "working" : phase_);
  if (describe_) {
    const std::string s = describe_();
    if (!s.empty()) line += " " + s;
  } else if (total_ > 0) {
    line += " " + std::to_string(done_) + "/" + std::to_string(total_);
  }
  return line + ", " + one_decimal(seconds()) + " s";
}

void Progress::write_locked() {
  if (options_.live) {
    *options_.out << "\r" << line_locked() << "\033[K" << std::flush;
    shown_ = true;
  } else {
    *options_.out << line_locked() << "\n" << std::flush;
  }
}

void Progress::loop() {
  std::unique_lock lock(mutex_);
  if (options_.live) {  // nothing for a command that is over within the delay
    if (wake_.wait_for(lock, kLiveDelay, [this] { return stopped_; })) return;
  }
  while (!wake_.wait_for(lock, options_.interval, [this] { return stopped_; })) write_locked();
}

}  // namespace clampai::report
