#include "formal.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "types.hpp"
#include "values.hpp"

namespace clampai::python {

namespace {

namespace ck = clampai::kernel;
using namespace pybind11::literals;

// The reference form's budget and step counters (`_Ledger`): a budget ledger in integer units
// of 10^-scale (the C++ BudgetController: T1, T4), the steps taken, and the kernel's decision
// and commit for a proposal on a state the caller gives, in a model the caller built for it
// (one action, the kernel's invariants, a budget of this ledger's total at its scale). Not
// thread-safe by itself: the Python kernel calls it under its own lock.
class Ledger {
 public:
  Ledger(ck::Amount total, int scale) : budget_(total), scale_(scale) {
    if (scale < 0 || scale > 18) throw py::value_error("a budget's scale is 0 to 18 digits");
  }

  // Multiplies every amount by 10^digits (exactly), for a cost finer than the scale.
  void rescale(int digits) {
    if (digits < 0 || scale_ + digits > 18)
      throw py::value_error("a budget's scale is 0 to 18 digits");
    const ck::Amount factor = ck::pow10(digits);
    const auto times = [&](ck::Amount a) {
      if (a > std::numeric_limits<ck::Amount>::max() / factor)
        throw py::value_error("the budget's amounts do not fit in 64 bits at " +
                              std::to_string(scale_ + digits) + " digits after the point");
      return a * factor;
    };
    ck::BudgetController fresh(times(budget_.total()));
    fresh.charge(times(budget_.gross()));
    fresh.refund(times(budget_.refunded()));
    budget_ = fresh;
    scale_ += digits;
  }

  // The decision on `action` (the model's only action, by id) in `state`, with this ledger's
  // budget and steps; and the state it leads to when approved (else None). With `commit`, an
  // approved decision is also charged and counted (T5: all of it or, on a throw, nothing).
  py::tuple decide(const Model& model,
                   const ck::State& state,
                   const std::string& action,
                   bool commit) {
    const ck::TaskModel& m = *model.model;
    if (m.budget.total != budget_.total())
      throw py::value_error("the model's budget is not this ledger's");
    const auto index = m.find_action(action);
    if (!index) throw py::value_error("the model has no action `" + action + "`");
    ck::Situation s{in_schema(m, state),
                    budget_,
                    steps_,
                    emergency_steps_,
                    std::vector<std::uint64_t>(m.actions.size(), 0)};
    ck::Proposal p;
    p.action = *index;
    ck::Decision d = ck::decide(m, s, p);
    py::object next = py::none();
    if (d.approved) {
      ck::Situation after = ck::advance(m, s, d);
      if (commit) {
        // A Python predicate may release the GIL mid-decision: had anything changed the ledger
        // meanwhile, writing `after` back would lose it. The Python kernel holds one lock
        // around both; this refuses rather than lose a charge if a caller does not.
        if (budget_.gross() != s.budget.gross() || budget_.refunded() != s.budget.refunded() ||
            steps_ != s.steps || emergency_steps_ != s.emergency_steps)
          throw std::logic_error(
              "the budget ledger changed during a decision: decide and commit under one lock");
        budget_ = after.budget;
        steps_ = after.steps;
        emergency_steps_ = after.emergency_steps;
      }
      next = py::cast(std::move(after.state));
    }
    return py::make_tuple(wrap_decision(PyDecision{std::move(d), model.model}), next);
  }

  ck::BudgetController budget_;
  int scale_;
  std::uint64_t steps_ = 0;
  std::uint64_t emergency_steps_ = 0;
};

// The text `json.dumps(value, sort_keys=True, separators=(",", ":"))` writes (ASCII only,
// its default), for the values a reference-form trace entry holds: exact str, int, float,
// bool, None, list, tuple and dict with str keys. False (and `out` unusable) for anything
// else, which the caller then encodes with Python's own encoder.
bool write_json_ascii(PyObject* o, std::string& out, int depth);

bool write_json_string(PyObject* o, std::string& out) {
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(o, &size);
  if (utf8 == nullptr) {  // a lone surrogate: Python's encoder says what it makes of it
    PyErr_Clear();
    return false;
  }
  return ck::jsonio::append_json_string_ascii(
      out, std::string_view(utf8, static_cast<std::size_t>(size)));
}

bool write_json_ascii(PyObject* o, std::string& out, int depth) {
  if (depth > 64) return false;
  if (o == Py_None) {
    out += "null";
  } else if (o == Py_True) {
    out += "true";
  } else if (o == Py_False) {
    out += "false";
  } else if (PyUnicode_CheckExact(o)) {
    return write_json_string(o, out);
  } else if (PyLong_CheckExact(o) || PyFloat_CheckExact(o)) {
    if (PyFloat_CheckExact(o)) {
      const double v = PyFloat_AS_DOUBLE(o);
      if (v != v) return out += "NaN", true;
      if (v == std::numeric_limits<double>::infinity()) return out += "Infinity", true;
      if (v == -std::numeric_limits<double>::infinity()) return out += "-Infinity", true;
    }
    PyObject* text = PyObject_Repr(o);  // float.__repr__ / int.__repr__, as json writes them
    if (text == nullptr) {
      PyErr_Clear();
      return false;
    }
    Py_ssize_t size = 0;
    const char* chars = PyUnicode_AsUTF8AndSize(text, &size);
    if (chars != nullptr) out.append(chars, static_cast<std::size_t>(size));
    Py_DECREF(text);
    if (chars == nullptr) {
      PyErr_Clear();
      return false;
    }
  } else if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
    PyObject* items = PySequence_Fast(o, "");
    if (items == nullptr) {
      PyErr_Clear();
      return false;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    bool ok = true;
    out += '[';
    for (Py_ssize_t i = 0; ok && i < n; ++i) {
      if (i > 0) out += ',';
      ok = write_json_ascii(PySequence_Fast_GET_ITEM(items, i), out, depth + 1);
    }
    out += ']';
    Py_DECREF(items);
    return ok;
  } else if (PyDict_CheckExact(o)) {
    std::vector<std::pair<std::string_view, PyObject*>> items;
    items.reserve(static_cast<std::size_t>(PyDict_Size(o)));
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &value)) {
      if (!PyUnicode_CheckExact(key)) return false;
      Py_ssize_t size = 0;
      const char* chars = PyUnicode_AsUTF8AndSize(key, &size);
      if (chars == nullptr) {
        PyErr_Clear();
        return false;
      }
      items.emplace_back(std::string_view(chars, static_cast<std::size_t>(size)), key);
    }
    // UTF-8's byte order is the code points' order: Python's order of str.
    std::sort(
        items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out += '{';
    bool first = true;
    for (const auto& [name, k] : items) {
      if (!first) out += ',';
      first = false;
      if (!write_json_string(k, out)) return false;
      out += ':';
      if (!write_json_ascii(PyDict_GetItem(o, k), out, depth + 1)) return false;
    }
    out += '}';
  } else {
    return false;
  }
  return true;
}

}  // namespace

void bind_formal(py::module_& m) {
  m.def(
      "_canonical_sha256",
      [](py::handle value) -> py::object {
        std::string text;
        if (!write_json_ascii(value.ptr(), text, 0)) return py::none();
        return py::str(ck::sha256_hex(text));
      },
      "value"_a,
      "The SHA-256 (hex) of json.dumps(value, sort_keys=True, separators=(',', ':')), or None "
      "when value holds a type this encoder leaves to Python's.");
  py::class_<Ledger>(m, "_Ledger")
      .def(py::init<ck::Amount, int>(), "total"_a, "scale"_a)
      .def("rescale", &Ledger::rescale, "digits"_a)
      .def("decide", &Ledger::decide, "model"_a, "state"_a, "action"_a, "commit"_a)
      .def(
          "can_afford",
          [](const Ledger& l, ck::Amount cost) { return l.budget_.can_afford(cost); },
          "cost"_a)
      .def(
          "charge",
          [](Ledger& l, ck::Amount cost) {
            if (!l.budget_.can_afford(cost))
              throw py::value_error("cannot charge " + std::to_string(cost) +
                                    " units: more than the remaining " +
                                    std::to_string(l.budget_.remaining()));
            l.budget_.charge(cost);
          },
          "cost"_a)
      .def(
          "refund",
          [](Ledger& l, ck::Amount amount) {
            if (!l.budget_.can_refund(amount)) return false;
            l.budget_.refund(amount);
            return true;
          },
          "amount"_a)
      .def_property_readonly("scale", [](const Ledger& l) { return l.scale_; })
      .def_property_readonly("total", [](const Ledger& l) { return l.budget_.total(); })
      .def_property_readonly("gross", [](const Ledger& l) { return l.budget_.gross(); })
      .def_property_readonly("refunded", [](const Ledger& l) { return l.budget_.refunded(); })
      .def_property_readonly("net", [](const Ledger& l) { return l.budget_.net(); })
      .def_property_readonly("remaining", [](const Ledger& l) { return l.budget_.remaining(); })
      .def_property_readonly("steps", [](const Ledger& l) { return l.steps_; })
      .def_property_readonly("emergency_steps", [](const Ledger& l) { return l.emergency_steps_; });
}

}  // namespace clampai::python
