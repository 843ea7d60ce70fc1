// The hardening layer for Python: attestors and the reference monitor (docs/PYTHON.md,
// docs/HARDENING.md).
#pragma once

#include <pybind11/pybind11.h>

namespace clampai::python {

namespace py = pybind11;

/// Installs RE2 as the pattern engine and adds `_Attestor`, `_Monitor` and their factories to
/// `m`. Call after the kernel's types (TaskModel, Outcome, Decision) are bound.
void bind_hardening(py::module_& m);

}  // namespace clampai::python
