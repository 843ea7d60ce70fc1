#include "decision.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "clampai/report/wire.hpp"
#include "values.hpp"

namespace clampai::python {
namespace {

namespace ck = clampai::kernel;
using namespace pybind11::literals;

using DecisionObject = Boxed<PyDecision>;

PyTypeObject* decision_type = nullptr;  // owned by the module (a heap type)

const PyDecision& get(PyObject* self) { return DecisionObject::of(self); }

py::dict changes_dict(const ck::TaskModel& m, const ck::Decision& d) {
  py::dict out;
  for (const auto& [var, value] : d.changes)
    out[py::str(m.variables[var].name)] = schema_value(*m.schema, var, value);
  return out;
}

std::string action_name(const ck::TaskModel& m, const ck::Decision& d) {
  if (d.action < m.actions.size() && !d.has(ck::ReasonCode::unknown_action))
    return m.actions[d.action].id;
  return "";
}

PyObject* get_approved(PyObject* self, void*) {
  return PyBool_FromLong(get(self).decision.approved);
}
PyObject* get_emergency(PyObject* self, void*) {
  return PyBool_FromLong(get(self).decision.emergency);
}
PyObject* get_reasons(PyObject* self, void*) {
  return guarded([&] { return py::cast(get(self).decision.reasons); });
}
PyObject* get_warnings(PyObject* self, void*) {
  return guarded([&] { return py::cast(get(self).decision.warnings); });
}
PyObject* get_reason_codes(PyObject* self, void*) {
  return guarded([&] {
    py::list out;
    for (const auto& r : get(self).decision.reasons)
      out.append(py::str(std::string(ck::to_string(r.code))));
    return py::object(std::move(out));
  });
}
PyObject* get_action(PyObject* self, void*) {
  return guarded(
      [&] { return py::object(py::str(action_name(*get(self).model, get(self).decision))); });
}
PyObject* get_cost(PyObject* self, void*) {
  return guarded(
      [&] { return make_decimal(get(self).model->format_amount(get(self).decision.cost)); });
}
PyObject* get_changes(PyObject* self, void*) {
  return guarded([&] { return py::object(changes_dict(*get(self).model, get(self).decision)); });
}

PyObject* to_dict(PyObject* self, PyObject*) {
  return guarded([&] { return py::object(decision_dict(*get(self).model, get(self).decision)); });
}

// The decision's one wire form (report/wire.hpp), as the CLI, serve and mcp write it.
PyObject* to_json(PyObject* self, PyObject*) {
  return guarded([&] {
    return py::object(py::str(report::decision_json(*get(self).model, get(self).decision)));
  });
}

PyObject* repr(PyObject* self) {
  return guarded([&] {
    const PyDecision& d = get(self);
    std::string out = "Decision(" + std::string(d.decision.approved ? "approved" : "rejected");
    out += ", action=" + py::repr(py::str(action_name(*d.model, d.decision))).cast<std::string>();
    for (const auto& r : d.decision.reasons) out += ", " + std::string(ck::to_string(r.code));
    return py::object(py::str(out + ")"));
  });
}

int as_bool(PyObject* self) { return get(self).decision.approved ? 1 : 0; }

// Immutable: a copy, deep or not, is the decision itself.
PyObject* copy_self(PyObject* self, PyObject*) { return Py_NewRef(self); }

// Docstrings in pybind11's form, which tests/test_stubs.py reads.
PyGetSetDef getset[] = {
    {"approved", get_approved, nullptr, "True iff the action may execute", nullptr},
    {"reasons", get_reasons, nullptr, "Every failing check, in check order", nullptr},
    {"warnings", get_warnings, nullptr, "Monitoring invariants that would be violated", nullptr},
    {"reason_codes", get_reason_codes, nullptr, "The reasons' codes", nullptr},
    {"action", get_action, nullptr, "The action's id ('' for an unknown action)", nullptr},
    {"cost", get_cost, nullptr, "The evaluated cost (a Decimal at the budget's scale)", nullptr},
    {"emergency", get_emergency, nullptr, "True for an emergency action (T8)", nullptr},
    {"changes", get_changes, nullptr, "The post-action values of the variables written", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef methods[] = {
    {"to_dict", to_dict, METH_NOARGS, "to_dict(self: clampai._clampai.Decision) -> dict"},
    {"to_json", to_json, METH_NOARGS, "to_json(self: clampai._clampai.Decision) -> str"},
    {"__copy__", copy_self, METH_NOARGS, "__copy__(self: clampai._clampai.Decision) -> Decision"},
    {"__deepcopy__",
     copy_self,
     METH_O,
     "__deepcopy__(self: clampai._clampai.Decision, memo: Any) -> Decision"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

py::dict reason_dict(const ck::Reason& r) {
  return py::dict("code"_a = std::string(ck::to_string(r.code)),
                  "subject"_a = r.subject,
                  "message"_a = r.message);
}

py::dict decision_dict(const ck::TaskModel& m, const ck::Decision& d) {
  py::list reasons, warnings;
  for (const auto& r : d.reasons) reasons.append(reason_dict(r));
  for (const auto& r : d.warnings) warnings.append(reason_dict(r));
  return py::dict("approved"_a = d.approved,
                  "action"_a = action_name(m, d),
                  "cost"_a = make_decimal(m.format_amount(d.cost)),
                  "emergency"_a = d.emergency,
                  "reasons"_a = reasons,
                  "warnings"_a = warnings,
                  "changes"_a = changes_dict(m, d));
}

void add_decision_type(py::module_& m) {
  decision_type = DecisionObject::add_type(
      m,
      "Decision",
      "clampai._clampai.Decision",
      "The kernel's verdict on a proposed action: approved, or rejected with every "
      "reason. Made by SafetyKernel.evaluate; a rejection is a value.",
      getset,
      methods,
      repr,
      as_bool);
}

py::object wrap_decision(PyDecision d) { return DecisionObject::make(decision_type, std::move(d)); }

}  // namespace clampai::python
