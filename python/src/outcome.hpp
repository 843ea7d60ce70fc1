// The kernel's Outcome as a Python object. It is returned by every `execute`, so, like
// Decision, it is a small CPython type of its own rather than a pybind11 class: creating and
// freeing one costs a fraction of a pybind11 instance (no instance registry), and its fields
// (the decision, the receipt, the state) become Python objects only when read.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::python {

namespace py = pybind11;

/// What `execute` or `rollback` did (`Outcome`), with the model that names its fields.
struct PyOutcome {
  kernel::Outcome outcome;
  std::shared_ptr<const kernel::TaskModel> model;
};

/// Adds the type `Outcome` to `m`. Call once, after `Receipt` and `State` are bound and before
/// any Outcome is returned.
void add_outcome_type(py::module_& m);

/// A new Python Outcome holding `o`.
py::object wrap_outcome(PyOutcome o);

}  // namespace clampai::python

namespace pybind11::detail {

// Outcomes go to Python as the CPython type above (never back: nothing takes one).
template <>
struct type_caster<clampai::python::PyOutcome> {
  PYBIND11_TYPE_CASTER(clampai::python::PyOutcome, const_name("clampai._clampai.Outcome"));
  bool load(handle, bool) { return false; }
  static handle cast(clampai::python::PyOutcome src, return_value_policy, handle) {
    return clampai::python::wrap_outcome(std::move(src)).release();
  }
};

}  // namespace pybind11::detail
