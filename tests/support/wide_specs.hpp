// A wide parallel group of N task specs sharing one counter, written to a directory; shared by
// the composition tests and benchmarks. Task w<i> sets its own done<i> and increments `load`;
// it assumes load >= 0, guarantees done<i> and keeps the invariant load >= 0. No two branches
// are independent (all write `load`), so the group has N(N-1) parallel obligations and as many
// interference obligations, all proved.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace clampai::testing {

inline std::string wide_task_spec(int i) {
  const std::string k = std::to_string(i), done = "done" + k;
  return R"({"name": "w)" + k + R"(", "goal": ")" + done + R"(",
  "variables": {"load": {"type": "int", "initial": 0, "min": 0, "max": 100000},
                ")" +
         done + R"(": {"type": "bool", "initial": false}},
  "actions": [{"id": "run", "cost": 1, "requires": "!)" +
         done + R"( && load < 100000",
               "effects": [{"variable": ")" +
         done + R"(", "mode": "set", "value": "true"},
                           {"variable": "load", "mode": "increment", "value": "1"}]}],
  "invariants": [{"name": "nonneg", "check": "load >= 0"}],
  "budget": {"total": 2, "min_action_cost": 1},
  "interface": {"assumes": "load >= 0", "guarantees": ")" +
         done + R"(",
                "reads": ["load"], "writes": [")" +
         done + R"(", "load"]}
})";
}

/// Writes w0.json ... w<n-1>.json and wide.json (all in parallel) into `dir`; returns the
/// manifest path.
inline std::string write_wide(const std::filesystem::path& dir, int n) {
  std::filesystem::create_directories(dir);
  std::string tasks, names;
  for (int i = 0; i < n; ++i) {
    const std::string name = "w" + std::to_string(i);
    std::ofstream(dir / (name + ".json")) << wide_task_spec(i);
    tasks += (i ? ", " : "") + ("\"" + name + "\": \"" + name + ".json\"");
    names += (i ? ", " : "") + ("\"" + name + "\"");
  }
  const auto manifest = dir / "wide.json";
  std::ofstream(manifest) << R"({"name": "wide", "tasks": {)" << tasks
                          << R"(}, "compose": {"parallel": [)" << names << R"(]}, "budget": )"
                          << 2 * n << "}\n";
  return manifest.string();
}

}  // namespace clampai::testing
