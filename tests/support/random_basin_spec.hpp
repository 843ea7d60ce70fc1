// Random small specs with capture basins, for the lookahead engines' property tests.
#pragma once

#include <memory>
#include <random>
#include <string>

#include "clampai/kernel.hpp"

namespace clampai::test {

// A random small spec: three bounded counters, up to four actions (guards, effects, maybe one
// parameter with a domain of 1 to 3 values), a goal, one or two capture basins, sometimes an
// emergency action and a dependency. Null when the text is not a valid spec.
inline std::shared_ptr<const kernel::TaskModel> random_basin_spec(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* vars[] = {"a", "b", "c"};
  auto var = [&] { return std::string(vars[pick(3)]); };
  auto cmp = [&] {
    const char* ops[] = {"<", "<=", "==", "!=", ">=", ">"};
    return var() + " " + ops[pick(6)] + " " + std::to_string(pick(5));
  };
  std::string actions;
  const int n_actions = 2 + pick(3);
  for (int i = 0; i < n_actions; ++i) {
    const bool param = pick(3) == 0;
    std::string value = param ? "n" : std::to_string(1 + pick(2));
    const char* modes[] = {"increment", "decrement", "set"};
    std::string effects = "{\"variable\": \"" + var() + "\", \"mode\": \"" + modes[pick(3)] +
                          "\", \"value\": \"" + value + "\"}";
    if (pick(2) == 0) {
      std::string second = var();
      if (effects.find("\"" + second + "\"") == std::string::npos)
        effects += ", {\"variable\": \"" + second + "\", \"mode\": \"set\", \"value\": \"" +
                   std::to_string(pick(5)) + "\"}";
    }
    actions += std::string(i ? ", " : "") + "{\"id\": \"act" + std::to_string(i) +
               "\", \"cost\": " + std::to_string(1 + pick(3)) +
               (param ? ", \"parameters\": {\"n\": {\"type\": \"int\", \"min\": 0, \"max\": " +
                            std::to_string(pick(3)) + "}}"
                      : "") +
               (pick(2) ? ", \"requires\": \"" + cmp() + "\"" : "") + ", \"effects\": [" + effects +
               "]}";
  }
  std::string extra;
  if (pick(3) == 0) {  // an emergency action: a step, never progress
    actions += ", {\"id\": \"halt\", \"cost\": 0, \"effects\": [{\"variable\": \"" + var() +
               "\", \"mode\": \"set\", \"value\": \"" + std::to_string(pick(5)) + "\"}]}";
    extra += "\"emergency_actions\": [\"halt\"], ";
  }
  if (pick(3) == 0) extra += "\"dependencies\": {\"act1\": [\"act0\"]}, ";
  std::string basins = "{\"name\": \"b0\", \"check\": \"" + cmp() + " && " + cmp() + "\"}";
  if (pick(2)) basins += ", {\"name\": \"b1\", \"check\": \"" + cmp() + "\"}";
  const std::string text =
      "{\"name\": \"r\", \"goal\": \"" + cmp() + "\", \"variables\": {" +
      "\"a\": {\"type\": \"int\", \"initial\": 0, \"min\": 0, \"max\": 4}, " +
      "\"b\": {\"type\": \"int\", \"initial\": 1, \"min\": 0, \"max\": 4}, " +
      "\"c\": {\"type\": \"int\", \"initial\": 2, \"min\": 0, \"max\": 4}}, " + "\"actions\": [" +
      actions + "], \"capture_basins\": [" + basins + "], " + extra +
      "\"budget\": {\"total\": " + std::to_string(3 + pick(6)) + ", \"min_action_cost\": 1}}";
  try {
    return kernel::load_spec(text);
  } catch (const clampai::SpecError&) {
    return nullptr;  // e.g. a second effect on the same variable
  }
}

}  // namespace clampai::test
