// Replays kept fuzz inputs through the same entries as the fuzzers, without libFuzzer:
//   fuzz_replay DIR...   where each DIR holds one subdirectory per target (fuzz/regressions),
// or   fuzz_replay --target NAME FILE_OR_DIR...   (the seeds: at least one must be accepted,
//      or the harness is broken)
// Exit 0 when every input is accepted or refused with the project's error; 1 otherwise (a
// crash or a sanitizer report ends the process itself).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "clampai/kernel/error.hpp"
#include "entries.hpp"

namespace fs = std::filesystem;
namespace cf = clampai::fuzz;

namespace {

std::size_t failures = 0, inputs = 0, accepted = 0;

void replay(const cf::Target& t, const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string data = buffer.str();
  ++inputs;
  try {
    t.run(data);
    ++accepted;
  } catch (const cf::Broken& e) {
    ++failures;
    std::cerr << "FAIL " << t.name << " " << file.string() << ": " << e.what() << "\n";
  } catch (const clampai::Error&) {
    // refused with the project's error: fine
  } catch (const std::exception& e) {
    ++failures;
    std::cerr << "FAIL " << t.name << " " << file.string() << ": " << e.what() << "\n";
  }
}

void replay_path(const cf::Target& t, const fs::path& p) {
  if (!fs::is_directory(p)) {
    replay(t, p);
    return;
  }
  std::vector<fs::path> files;
  for (const auto& f : fs::recursive_directory_iterator(p))
    if (f.is_regular_file()) files.push_back(f.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) replay(t, f);
}

const cf::Target* find(const std::string& name) {
  for (const auto& t : cf::targets())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "--target") {
    const cf::Target* t = find(args[1]);
    if (t == nullptr) {
      std::cerr << "fuzz_replay: unknown target `" << args[1] << "`\n";
      return 2;
    }
    for (std::size_t i = 2; i < args.size(); ++i) replay_path(*t, args[i]);
  } else {
    for (const auto& root : args) {
      if (!fs::is_directory(root)) {
        std::cerr << "fuzz_replay: `" << root << "` is not a directory\n";
        return 2;
      }
      for (const auto& d : fs::directory_iterator(root)) {
        if (!d.is_directory()) continue;
        const cf::Target* t = find(d.path().filename().string());
        if (t == nullptr) {
          std::cerr << "fuzz_replay: `" << d.path().string() << "` names no target\n";
          return 2;
        }
        replay_path(*t, d.path());
      }
    }
  }
  std::cout << "fuzz_replay: " << inputs << " inputs, " << accepted << " accepted, " << failures
            << " failures\n";
  if (args.size() >= 2 && args[0] == "--target" && accepted == 0) {
    std::cerr << "fuzz_replay: no input accepted: the `" << args[1]
              << "` entry refuses its seeds\n";
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
