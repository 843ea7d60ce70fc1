// Conversions between Python objects and the kernel's values, and the Python exceptions the
// library's errors become.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/value.hpp"

namespace clampai::python {

namespace py = pybind11;

/// A Python value as a kernel value: None (undefined), bool, int (int64), float (its shortest
/// repr, read exactly), decimal.Decimal, str, list or tuple of those.
/// @throws py::value_error / py::type_error naming `where`.
kernel::Value to_value(py::handle h, const std::string& where);

/// A dict of parameter name to value as the kernel's parameters (None: none), each value read
/// by `to_value` at `params.NAME`.
/// @throws py::type_error if `params` is not a dict, or what `to_value` throws.
kernel::ParamMap to_params(py::handle params);

/// A kernel value as a Python object: None, bool, int (numbers of scale 0), decimal.Decimal
/// (other numbers), str, list.
py::object from_value(const kernel::Value& v);

/// decimal.Decimal(text).
py::object make_decimal(const std::string& text);

/// Holds a Python object for C++ (a callable a hook calls); releases it with the GIL (or leaks
/// it at interpreter exit).
std::shared_ptr<py::object> hold(py::object fn);

/// Marks the variables `floats` (by name) of `schema` as given as Python floats: a number
/// of theirs in any state of that schema reads back as a float (the nearest double to the
/// exact value, which the kernel keeps and decides on). Names the schema lacks are ignored;
/// an empty list marks nothing.
void mark_floats(const std::shared_ptr<const kernel::Schema>& schema,
                 const std::vector<std::string>& floats);

/// Variable `id` of state `s` as a Python object: `from_value`, but a number of a variable
/// marked by `mark_floats` is a float.
py::object state_value(const kernel::State& s, kernel::VarId id);

/// Value `v` of variable `id` of `schema` as a Python object, as `state_value` reads it.
py::object schema_value(const kernel::Schema& schema, kernel::VarId id, const kernel::Value& v);

/// A state as a dict of its variables' names to their values (State.to_dict()).
py::dict state_dict(const kernel::State& s);

/// `State({...})` (State.__repr__).
std::string state_repr(const kernel::State& s);

/// A state from a mapping of names to values (keys sorted, as the reference does).
kernel::State state_from_mapping(py::handle mapping);

/// The Python exception class `name` of `clampai._errors`.
py::object error_class(const char* name);

/// Raises (as the pending Python error) the exception for `e`, with `file` (a spec file, or "")
/// naming the input as the CLI does: `FILE:LINE:COLUMN: json.path: message` per problem.
void set_python_error(const Error& e, const std::string& file);

/// Throws py::error_already_set carrying the translation of `e`.
[[noreturn]] void rethrow_as_python(const Error& e, const std::string& file);

/// A state of the model's schema equal (by variable name) to `state`, each value fitted to the
/// model's type of its variable.
/// @throws py::value_error naming a variable the state lacks or the task does not have.
kernel::State in_schema(const kernel::TaskModel& m, const kernel::State& state);

}  // namespace clampai::python
