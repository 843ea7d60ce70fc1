// Manifests as hostile input: long include chains, symbolic links, special files.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../kernel/support.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/kernel/error.hpp"

namespace {

namespace fs = std::filesystem;
namespace cc = clampai::composition;
using Catch::Matchers::Contains;

const char* kTask = R"({"name": "t", "variables": {"v": {"type": "int", "initial": 0}},
  "actions": [{"id": "a", "cost": 1}], "budget": {"total": 5, "min_action_cost": 1}})";

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A manifest named `name` with task `t` (spec t.json beside the root), then `next` if given.
std::string chain_manifest(const std::string& name, const std::string& next) {
  const std::string compose =
      next.empty() ? R"("t")" : R"({"sequential": ["t", {"manifest": ")" + next + R"("}]})";
  return R"({"name": ")" + name + R"(", "tasks": {"t": "t.json"}, "compose": )" + compose + "}";
}

std::string error_of(const std::string& path) {
  try {
    (void)cc::load_manifest(path);
  } catch (const clampai::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Manifest: a long chain of includes is an error, not a stack overflow",
          "[composition][manifest]") {
  const fs::path dir = clampai::test::temp_file("chain");
  fs::create_directories(dir);
  write(dir / "t.json", kTask);
  constexpr int kLength = 5000;
  for (int i = 0; i < kLength; ++i) {
    const std::string next = i + 1 < kLength ? "m" + std::to_string(i + 1) + ".json" : "";
    write(dir / ("m" + std::to_string(i) + ".json"), chain_manifest("m" + std::to_string(i), next));
  }
  REQUIRE_THAT(error_of((dir / "m0.json").string()),
               Contains("m100.json: compose.sequential[1].manifest: manifests include each other "
                        "more than 100 levels deep"));
  // 100 levels are fine.
  write(dir / "m100.json", chain_manifest("m100", ""));
  REQUIRE(error_of((dir / "m0.json").string()) == "no error");
  fs::remove_all(dir);
}

TEST_CASE("Manifest: include paths go through symbolic links as the OS does",
          "[composition][manifest]") {
  const fs::path dir = clampai::test::temp_file("links");
  fs::create_directories(dir / "real" / "sub");
  fs::create_directory_symlink(dir / "real" / "sub", dir / "link");
  // `link/..` is `real` for the OS, but the directory itself lexically.
  for (const fs::path& d : {dir, dir / "real"}) write(d / "t.json", kTask);
  write(dir / "other.json", chain_manifest("lexical", ""));
  write(dir / "real" / "other.json", chain_manifest("os", ""));
  write(dir / "m.json", chain_manifest("root", "link/../other.json"));
  const cc::Manifest m = cc::load_manifest((dir / "m.json").string());
  std::vector<std::string> names;
  for (const auto& t : m.tasks) names.push_back(t.name);
  REQUIRE_THAT(names, Catch::Matchers::VectorContains(std::string("os.t")));
  REQUIRE_THAT(names, !Catch::Matchers::VectorContains(std::string("lexical.t")));
  fs::remove_all(dir);
}

TEST_CASE("Manifest: special files are named, never read", "[composition][manifest]") {
  const fs::path dir = clampai::test::temp_file("special");
  fs::create_directories(dir);
  write(dir / "t.json", kTask);
  REQUIRE(::mkfifo((dir / "fifo.json").c_str(), 0600) == 0);
  fs::create_symlink("/dev/zero", dir / "zero.json");
  REQUIRE_THAT(error_of((dir / "fifo.json").string()), Contains("is a FIFO (named pipe)"));
  write(dir / "m.json", chain_manifest("root", "zero.json"));
  REQUIRE_THAT(error_of((dir / "m.json").string()),
               Contains("zero.json` is a symbolic link to a character device"));
  write(dir / "m.json", R"({"name": "root", "tasks": {"t": "fifo.json"}, "compose": "t"})");
  REQUIRE_THAT(error_of((dir / "m.json").string()),
               Contains("tasks.t: `") && Contains("is a FIFO (named pipe), not a regular file"));
  fs::remove_all(dir);
}

TEST_CASE("Manifest: an unknown task name gets a suggestion", "[composition][manifest]") {
  const fs::path dir = clampai::test::temp_file("suggest");
  fs::create_directories(dir);
  write(dir / "t.json", kTask);
  write(dir / "m.json", R"({"name": "root", "tasks": {"deploy": "t.json"}, "compose": "deplyo"})");
  REQUIRE_THAT(error_of((dir / "m.json").string()),
               Contains("compose: unknown task or composite `deplyo` (did you mean `deploy`?)"));
  fs::remove_all(dir);
}
