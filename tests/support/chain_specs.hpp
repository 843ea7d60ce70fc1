// A chain of N task specs and a manifest composing them sequentially, written to a directory;
// shared by the composition tests and benchmarks. Task i reads x<i> and writes x<i+1>:
// it assumes x<i> >= 1, guarantees x<i+1> >= 1, and keeps x<i+1> <= x<i>, so every
// sequential and interference obligation is proved.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace clampai::testing {

inline std::string chain_task_spec(int i) {
  const std::string in = "x" + std::to_string(i), out = "x" + std::to_string(i + 1);
  return R"({"name": "step)" + std::to_string(i) + R"(",
  "goal": ")" +
         out + R"( >= 1",
  "variables": {
    ")" + in +
         R"(": {"type": "int", "initial": )" + (i == 0 ? "1" : "0") +
         R"(, "min": 0, "max": 10},
    ")" + out +
         R"(": {"type": "int", "initial": 0, "min": 0, "max": 10}
  },
  "actions": [{"id": "copy", "cost": 1, "requires": ")" +
         in + R"( >= 1",
               "effects": [{"variable": ")" +
         out + R"(", "mode": "set", "value": ")" + in +
         R"("}]}],
  "invariants": [{"name": "monotone", "check": ")" +
         out + " <= " + in + R"("}],
  "budget": {"total": 2, "min_action_cost": 1},
  "interface": {"assumes": ")" +
         in + R"( >= 1", "guarantees": ")" + out + R"( >= 1",
                "reads": [")" +
         in + R"("], "writes": [")" + out + R"("]}
})";
}

/// Writes step0.json ... step<n-1>.json and chain.json into `dir`; returns the manifest path.
inline std::string write_chain(const std::filesystem::path& dir, int n) {
  std::filesystem::create_directories(dir);
  std::string tasks, order;
  for (int i = 0; i < n; ++i) {
    const std::string name = "step" + std::to_string(i);
    std::ofstream(dir / (name + ".json")) << chain_task_spec(i);
    tasks += (i ? ", " : "") + ("\"" + name + "\": \"" + name + ".json\"");
    order += (i ? ", " : "") + ("\"" + name + "\"");
  }
  const auto manifest = dir / "chain.json";
  std::ofstream(manifest) << R"({"name": "chain", "tasks": {)" << tasks
                          << R"(}, "compose": {"sequential": [)" << order << R"(]}, "budget": )"
                          << 2 * n << "}\n";
  return manifest.string();
}

}  // namespace clampai::testing
