// The spec of the shadow-mode tests (tests/kernel/test_shadow.cpp, tests/driver/
// test_shadow_run.cpp): bounds, a guard, an overflow, an emergency action, a dependency, a
// blocking and a monitoring invariant.
#pragma once

namespace clampai::testing {

inline constexpr const char* kShadowSpec = R"J({"name": "shadowed",
  "variables": {"n": {"type": "int", "initial": 0, "min": -5, "max": 30},
                "m": {"type": "int", "initial": 1}},
  "actions": [
    {"id": "add", "parameters": {"k": {"type": "int", "min": 0, "max": 5, "default": 1}},
     "cost": "k + 1", "reversible": true,
     "effects": [{"variable": "n", "mode": "increment", "value": "k"}]},
    {"id": "sub", "cost": 1, "reversible": true, "requires": "n > 0",
     "effects": [{"variable": "n", "mode": "decrement", "value": 2}]},
    {"id": "grow", "cost": 1, "effects": [{"variable": "m", "mode": "multiply", "value": 1000000}]},
    {"id": "after", "cost": 2, "effects": [{"variable": "n", "mode": "set", "value": 0}]},
    {"id": "stop", "cost": 0, "effects": [{"variable": "n", "mode": "set", "value": 0}]}],
  "invariants": [{"name": "small", "check": "n <= 12"},
                 {"name": "watch", "check": "n <= 8", "enforcement": "monitoring"}],
  "emergency_actions": ["stop"],
  "dependencies": {"after": ["sub"]},
  "budget": {"total": 40, "min_action_cost": 1}})J";

}  // namespace clampai::testing
