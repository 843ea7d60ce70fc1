// A kernel on a shared ledger for Python (shared.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace clampai::python {

namespace py = pybind11;

/// Binds `_SharedKernel(model, url)`: `execute(action, params=None)` -> Outcome, `refresh()`,
/// `_budget()`, `state`, `length`, `ledger`.
void bind_shared(py::module_& m);

}  // namespace clampai::python
