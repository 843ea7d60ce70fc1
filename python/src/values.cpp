#include "values.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "clampai/kernel/number.hpp"
#include "clampai/report/format.hpp"

namespace clampai::python {

namespace {

// Module-level objects live for the interpreter's lifetime: never destroyed (destroying a
// Python object after finalisation would crash).
const py::object& decimal_type() {
  static const py::object* type = new py::object(py::module_::import("decimal").attr("Decimal"));
  return *type;
}

kernel::Value number_from_text(const std::string& text, const std::string& where) {
  std::string error;
  const auto d = kernel::Decimal::parse(text, &error);
  if (!d) throw py::value_error(where + ": " + text + " is not an exact number: " + error);
  return kernel::Value::number(*d);
}

// The variables given as Python floats, per schema (the schema is shared by a state and
// every state the kernel derives from it). Keyed by address; the weak pointer tells a live
// schema from a dead one whose address was reused. Expired entries are swept as it grows.
struct FloatMarks {
  std::mutex mutex;
  std::map<const kernel::Schema*, std::pair<std::weak_ptr<const kernel::Schema>, std::vector<bool>>>
      marks;
  std::size_t swept_at = 64;
};

FloatMarks& float_marks() {
  static FloatMarks* marks = new FloatMarks();
  return *marks;
}

bool is_float_given(const kernel::Schema& schema, kernel::VarId id) {
  FloatMarks& f = float_marks();
  const std::lock_guard<std::mutex> lock(f.mutex);
  if (f.marks.empty()) return false;
  const auto it = f.marks.find(&schema);
  if (it == f.marks.end()) return false;
  const auto owner = it->second.first.lock();
  if (owner.get() != &schema) return false;
  return id < it->second.second.size() && it->second.second[id];
}

}  // namespace

py::object make_decimal(const std::string& text) { return decimal_type()(text); }

void mark_floats(const std::shared_ptr<const kernel::Schema>& schema,
                 const std::vector<std::string>& floats) {
  std::vector<bool> flags(schema->size(), false);
  bool any = false;
  for (const std::string& name : floats) {
    if (const auto id = schema->find(name)) {
      flags[*id] = true;
      any = true;
    }
  }
  FloatMarks& f = float_marks();
  const std::lock_guard<std::mutex> lock(f.mutex);
  if (!any) {
    f.marks.erase(schema.get());
    return;
  }
  f.marks[schema.get()] = {schema, std::move(flags)};
  if (f.marks.size() >= 2 * f.swept_at) {
    std::erase_if(f.marks, [](const auto& entry) { return entry.second.first.expired(); });
    f.swept_at = std::max<std::size_t>(64, f.marks.size());
  }
}

py::object state_value(const kernel::State& s, kernel::VarId id) {
  return schema_value(s.schema(), id, s.get(id));
}

py::object schema_value(const kernel::Schema& schema, kernel::VarId id, const kernel::Value& v) {
  if (v.kind() == kernel::Value::Kind::number && is_float_given(schema, id)) {
    // Python's float(str) rounds correctly: the nearest double to the exact value.
    PyObject* f = PyFloat_FromString(py::str(v.as_number().to_string()).ptr());
    if (f == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(f);
  }
  return from_value(v);
}

py::dict state_dict(const kernel::State& s) {
  py::dict out;
  for (std::size_t i = 0; i < s.size(); ++i)
    out[py::str(s.schema().name(static_cast<kernel::VarId>(i)))] =
        state_value(s, static_cast<kernel::VarId>(i));
  return out;
}

std::string state_repr(const kernel::State& s) {
  return "State(" + py::repr(state_dict(s)).cast<std::string>() + ")";
}

kernel::ParamMap to_params(py::handle params) {
  kernel::ParamMap out;
  if (params.is_none()) return out;
  if (!PyDict_Check(params.ptr())) throw py::type_error("params must be a dict of name to number");
  for (auto item : py::reinterpret_borrow<py::dict>(params)) {
    const std::string name = py::str(item.first).cast<std::string>();
    // Parameters are numbers: a decimal string ("12.50") is read exactly, as the CLI's
    // --params and the HTTP API read it; any other string stays one (the kernel refuses it).
    if (PyUnicode_Check(item.second.ptr())) {
      if (const auto d = kernel::Decimal::parse(item.second.cast<std::string>())) {
        out.emplace_back(name, kernel::Value::number(*d));
        continue;
      }
    }
    out.emplace_back(name, to_value(item.second, "params." + name));
  }
  return out;
}

kernel::Value to_value(py::handle h, const std::string& where) {
  if (h.is_none()) return kernel::Value();
  if (PyBool_Check(h.ptr())) return kernel::Value::boolean(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow != 0) throw py::value_error(where + ": integer out of the int64 range");
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return kernel::Value::integer(v);
  }
  if (PyFloat_Check(h.ptr())) {
    // The float's shortest repr (`0.1`, not 0.1000000000000000055...): what the user wrote.
    return number_from_text(py::repr(h).cast<std::string>(), where);
  }
  if (PyUnicode_Check(h.ptr())) return kernel::Value::string(h.cast<std::string>());
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    std::vector<kernel::Value> items;
    std::size_t i = 0;
    for (py::handle item : h) {
      items.push_back(to_value(item, where + "[" + std::to_string(i++) + "]"));
    }
    return kernel::Value::list(std::move(items));
  }
  if (py::isinstance(h, decimal_type())) {
    return number_from_text(py::str(py::module_::import("builtins").attr("format")(h, "f")), where);
  }
  throw py::type_error(where +
                       ": a value must be None, bool, int, float, decimal.Decimal, str "
                       "or a list of those, not " +
                       std::string(Py_TYPE(h.ptr())->tp_name));
}

py::object from_value(const kernel::Value& v) {
  switch (v.kind()) {
    case kernel::Value::Kind::undefined:
      return py::none();
    case kernel::Value::Kind::boolean:
      return py::bool_(v.as_bool());
    case kernel::Value::Kind::number: {
      const kernel::Decimal& d = v.as_number();
      if (d.scale == 0) return py::int_(d.units);
      return make_decimal(d.to_string());
    }
    case kernel::Value::Kind::string:
      return py::str(v.as_string());
    case kernel::Value::Kind::list: {
      py::list out;
      for (const kernel::Value& item : v.as_list()) out.append(from_value(item));
      return out;
    }
  }
  return py::none();
}

kernel::State state_from_mapping(py::handle mapping) {
  if (!PyDict_Check(mapping.ptr()) && !py::hasattr(mapping, "items"))
    throw py::type_error("State(...) takes a dict of variable names to values");
  std::vector<std::pair<std::string, py::handle>> items;
  py::object pairs = mapping.attr("items")();
  for (py::handle pair : pairs) {
    py::tuple t = py::reinterpret_borrow<py::tuple>(pair);
    if (!PyUnicode_Check(t[0].ptr())) throw py::type_error("State keys must be strings");
    items.emplace_back(t[0].cast<std::string>(), t[1]);
  }
  std::sort(
      items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  std::vector<std::string> floats;
  std::vector<kernel::Value> values;
  for (const auto& [name, value] : items) {
    values.push_back(to_value(value, name));
    names.push_back(name);
    if (PyFloat_Check(value.ptr())) floats.push_back(name);
  }
  try {
    kernel::State state(std::make_shared<const kernel::Schema>(std::move(names)),
                        std::move(values));
    if (!floats.empty()) mark_floats(state.schema_ptr(), floats);
    return state;
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

py::object error_class(const char* name) {
  return py::module_::import("clampai._errors").attr(name);
}

void set_python_error(const Error& e, const std::string& file) {
  const char* cls = "ClampAIError";
  if (dynamic_cast<const SpecError*>(&e) != nullptr) {
    cls = "SpecError";
  } else if (dynamic_cast<const FileError*>(&e) != nullptr) {
    cls = "FileError";
  } else if (dynamic_cast<const TraceError*>(&e) != nullptr) {
    cls = "TraceError";
  } else if (dynamic_cast<const InvalidArgument*>(&e) != nullptr) {
    cls = "InvalidArgument";
  }
  py::object type = error_class(cls);
  py::object exc;
  if (const auto* spec = dynamic_cast<const SpecError*>(&e)) {
    // The CLI's form: one line per problem, `FILE:LINE:COLUMN: json.path: message`.
    std::string message;
    py::list problems;
    for (const SpecProblem& p : spec->problems()) {
      if (!message.empty()) message += '\n';
      std::string line = file;
      if (!file.empty() && p.line > 0)
        line += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
      if (!line.empty()) line += ": ";
      line += (p.path.empty() ? "" : p.path + ": ") + p.message;
      message += line;
      problems.append(py::make_tuple(p.path, p.message, p.line, p.column));
    }
    if (spec->problems().size() == 1 && file.empty()) message = e.what();
    exc = type(message);
    exc.attr("path") = spec->path();
    exc.attr("problems") = problems;
    exc.attr("file") = file.empty() ? py::object(py::none()) : py::object(py::str(file));
    // Where the first problem is: its element's position, else the one its message starts
    // with (`1:14: malformed JSON`), as the SARIF and JSON reports locate it.
    const SpecProblem& first = spec->problems().front();
    const report::Location at = first.line > 0
                                    ? report::Location{file, first.line, first.column}
                                    : report::locate(file, message.substr(0, message.find('\n')));
    exc.attr("line") = at.line;
    exc.attr("column") = at.column;
  } else {
    const bool names_file = dynamic_cast<const FileError*>(&e) != nullptr ||
                            dynamic_cast<const TraceError*>(&e) != nullptr;
    exc = type(file.empty() || names_file ? std::string(e.what()) : file + ": " + e.what());
  }
  PyErr_SetObject(type.ptr(), exc.ptr());
}

void rethrow_as_python(const Error& e, const std::string& file) {
  set_python_error(e, file);
  throw py::error_already_set();
}

kernel::State in_schema(const kernel::TaskModel& m, const kernel::State& state) {
  if (state.schema_ptr() == m.initial_state().schema_ptr()) return state;
  std::vector<kernel::Value> values;
  const kernel::Schema& schema = *m.schema;
  for (std::size_t i = 0; i < schema.size(); ++i) {
    const auto id = state.schema().find(schema.name(static_cast<kernel::VarId>(i)));
    if (!id) throw py::value_error("the state has no variable `" + schema.name(i) + "`");
    const kernel::Value& v = state.get(*id);
    // An optional variable may be undefined (deleted); any other value must fit its type.
    if (!v.is_defined() && m.variables[i].optional) {
      values.push_back(v);
      continue;
    }
    values.push_back(
        kernel::fit_value(v, m.variable_types[i], schema.name(static_cast<kernel::VarId>(i))));
  }
  for (const std::string& name : state.schema().names())
    if (!schema.find(name)) throw py::value_error("the task has no variable `" + name + "`");
  return kernel::State(m.schema, std::move(values));
}

std::shared_ptr<py::object> hold(py::object fn) {
  return {new py::object(std::move(fn)), [](py::object* p) {
            if (Py_IsInitialized() == 0) return;
            py::gil_scoped_acquire gil;
            delete p;
          }};
}

}  // namespace clampai::python
