// The kernel's Decision as a Python object. It is returned by every `evaluate`, so it is a
// small CPython type of its own rather than a pybind11 class: creating and freeing one costs a
// fraction of a pybind11 instance (no instance registry), and its fields are converted only
// when read.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/model.hpp"
#include "pytype.hpp"

namespace clampai::python {

namespace py = pybind11;

struct PyDecision {
  kernel::Decision decision;
  std::shared_ptr<const kernel::TaskModel> model;
};

/// Adds the type `Decision` to `m`. Call once, before any Decision is returned.
void add_decision_type(py::module_& m);

/// A new Python Decision holding `d`.
py::object wrap_decision(PyDecision d);

/// `{"code", "subject", "message"}`.
py::dict reason_dict(const kernel::Reason& r);

/// Decision.to_dict().
py::dict decision_dict(const kernel::TaskModel& m, const kernel::Decision& d);

}  // namespace clampai::python

namespace pybind11::detail {

// Decisions go to Python as the CPython type above (never back: nothing takes one).
template <>
struct type_caster<clampai::python::PyDecision> {
  PYBIND11_TYPE_CASTER(clampai::python::PyDecision, const_name("Decision"));
  bool load(handle, bool) { return false; }
  static handle cast(clampai::python::PyDecision src, return_value_policy, handle) {
    return clampai::python::wrap_decision(std::move(src)).release();
  }
};

}  // namespace pybind11::detail
