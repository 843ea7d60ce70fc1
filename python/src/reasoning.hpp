// The Python ClampAI's reasoning layer (`Belief`, `CostAwarePriorFactory`, `parse_llm_response`):
// the agent library's Beta posteriors, cost-tier priors and answer sanitising, for the thin
// Python classes in python/clampai/_reasoning.py.
#pragma once

#include <pybind11/pybind11.h>

namespace clampai::python {

namespace py = pybind11;

/// Adds `_belief`, `_belief_observe`, `_tier_prior`, `_weighted_value` and
/// `_strip_invisible` to `m`.
void bind_reasoning(py::module_& m);

}  // namespace clampai::python
