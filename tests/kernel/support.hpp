// Helpers shared by the kernel tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
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
