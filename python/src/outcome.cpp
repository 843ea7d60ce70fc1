#include "outcome.hpp"

#include <string>

#include "decision.hpp"
#include "types.hpp"
#include "values.hpp"

namespace clampai::python {
namespace {

namespace ck = clampai::kernel;
using namespace pybind11::literals;

using OutcomeObject = Boxed<PyOutcome>;

PyTypeObject* outcome_type = nullptr;  // owned by the module (a heap type)

const PyOutcome& value(PyObject* self) { return OutcomeObject::of(self); }
const ck::Outcome& get(PyObject* self) { return value(self).outcome; }

py::object receipt_object(PyObject* self) {
  const PyOutcome& o = value(self);
  if (!o.outcome.receipt) return py::none();
  return py::cast(PyReceipt{*o.outcome.receipt, o.model});
}

PyObject* get_approved(PyObject* self, void*) {
  return PyBool_FromLong(get(self).decision.approved);
}
PyObject* get_decision(PyObject* self, void*) {
  return guarded([&] { return wrap_decision({get(self).decision, value(self).model}); });
}
PyObject* get_receipt(PyObject* self, void*) {
  return guarded([&] { return receipt_object(self); });
}
PyObject* get_state(PyObject* self, void*) {
  return guarded([&] { return py::cast(get(self).state); });
}

PyObject* to_dict(PyObject* self, PyObject*) {
  return guarded([&] {
    const PyOutcome& o = value(self);
    return py::object(py::dict(
        "approved"_a = o.outcome.decision.approved,
        "decision"_a = decision_dict(*o.model, o.outcome.decision),
        "receipt"_a = o.outcome.receipt ? py::object(receipt_dict({*o.outcome.receipt, o.model}))
                                        : py::object(py::none()),
        "state"_a = state_dict(o.outcome.state)));
  });
}

PyObject* repr(PyObject* self) {
  return guarded([&] {
    const ck::Outcome& o = get(self);
    return py::object(py::str("Outcome(" +
                              std::string(o.decision.approved ? "approved" : "rejected") +
                              ", state=" + state_repr(o.state) + ")"));
  });
}

int as_bool(PyObject* self) { return get(self).decision.approved ? 1 : 0; }

// Docstrings in pybind11's form, which tests/test_stubs.py reads.
PyGetSetDef getset[] = {
    {"approved", get_approved, nullptr, "True iff the action was committed", nullptr},
    {"decision", get_decision, nullptr, "The kernel's Decision", nullptr},
    {"receipt",
     get_receipt,
     nullptr,
     "The Receipt of what was committed (for rollback), or None",
     nullptr},
    {"state", get_state, nullptr, "The kernel's state afterwards", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef methods[] = {
    {"to_dict", to_dict, METH_NOARGS, "to_dict(self: clampai._clampai.Outcome) -> dict"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

py::dict receipt_dict(const PyReceipt& r) {
  return py::dict("sequence"_a = r.receipt.sequence,
                  "action"_a = r.model->actions[r.receipt.action].id,
                  "cost"_a = make_decimal(r.model->format_amount(r.receipt.cost)));
}

void add_outcome_type(py::module_& m) {
  outcome_type = OutcomeObject::add_type(
      m,
      "Outcome",
      "clampai._clampai.Outcome",
      "What SafetyKernel.execute or rollback did: the decision, the receipt of what was "
      "committed (None if nothing was) and the state afterwards.",
      getset,
      methods,
      repr,
      as_bool);
}

py::object wrap_outcome(PyOutcome o) { return OutcomeObject::make(outcome_type, std::move(o)); }

}  // namespace clampai::python
