// The reference's form of the kernel (`SafetyKernel(budget=..., invariants=[...])`,
// `evaluate(state, action)`): its budget ledger and step counters, deciding with the kernel's
// own `decide` and `advance` (docs/PYTHON.md). The Python side is python/clampai/_reference_api.py.
#pragma once

#include <pybind11/pybind11.h>

namespace clampai::python {

namespace py = pybind11;

/// Adds `_Ledger` to `m`. Call after the kernel's types (TaskModel, State, Decision) are bound.
void bind_formal(py::module_& m);

}  // namespace clampai::python
