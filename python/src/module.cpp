// The `clampai._clampai` extension: the kernel, the verifier, the lookahead, repair and
// composition for Python. The pure-Python package `clampai` (python/clampai) builds on it.
//
// The GIL: every call into the library that can take long (Z3, searches, compositions) runs
// with the GIL released. A kernel whose model has a Python predicate releases it around every
// decision too: the kernel calls the predicate under its own lock, and the predicate takes the
// GIL, so a thread must never wait for the kernel's lock while holding the GIL. A kernel
// without Python predicates never touches Python and keeps the GIL (cheaper for short calls).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cxxabi.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "agent.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/driver/driver.hpp"
#include "clampai/driver/lookahead.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/kernel/suggest.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/report/compose.hpp"
#include "clampai/report/lookahead.hpp"
#include "clampai/report/repair.hpp"
#include "clampai/report/verify.hpp"
#include "clampai/server/mcp.hpp"
#include "clampai/verifier/lookahead.hpp"
#include "clampai/verifier/repair.hpp"
#include "clampai/verifier/verify.hpp"
#include "decision.hpp"
#include "formal.hpp"
#include "hardening.hpp"
#include "pools.hpp"
#include "reasoning.hpp"
#include "shared.hpp"
#include "types.hpp"
#include "values.hpp"

namespace clampai::python {
namespace {

namespace ck = clampai::kernel;
namespace cv = clampai::verifier;
namespace cd = clampai::driver;
using namespace pybind11::literals;

// ---------------------------------------------------------------------------------------------
// Python predicates as native invariants.

// A Python callable the kernel calls as a native predicate. It takes the GIL for the call; an
// exception becomes a C++ exception whose text is the Python one (`ValueError: bad`), which the
// kernel reports as `invariant_error`. The callable is released with the GIL held.
class PythonPredicate {
 public:
  explicit PythonPredicate(py::object fn)
      : fn_(new py::object(std::move(fn)), [](py::object* p) {
          if (Py_IsInitialized() == 0) return;  // at exit: leak rather than crash
          py::gil_scoped_acquire gil;
          delete p;
        }) {}

  bool operator()(const ck::State& state) const {
    py::gil_scoped_acquire gil;
    try {
      py::object result = (*fn_)(py::cast(state));
      const int truth = PyObject_IsTrue(result.ptr());
      if (truth < 0) throw py::error_already_set();
      return truth == 1;
    } catch (py::error_already_set& e) {
      std::string text = py::str(e.type().attr("__name__")).cast<std::string>();
      const std::string detail = py::str(e.value()).cast<std::string>();
      if (!detail.empty()) text += ": " + detail;
      throw std::runtime_error(text);
    }
  }

 private:
  std::shared_ptr<py::object> fn_;
};

// ---------------------------------------------------------------------------------------------
// Bound types.

bool has_predicates(const ck::TaskModel& m) {
  if (m.goal_predicate) return true;
  for (const ck::Invariant& inv : m.invariants)
    if (!inv.expr) return true;
  return false;
}

Model make_model(std::shared_ptr<const ck::TaskModel> m) {
  Model out;
  out.python_predicates = has_predicates(*m);
  out.model = std::move(m);
  return out;
}

// Runs `f` with the GIL released iff `release`.
template <typename F>
auto maybe_released(bool release, F&& f) {
  if (release) {
    py::gil_scoped_release nogil;
    return f();
  }
  return f();
}

// The id of an action given as a str or as an object with an `id` (an ActionSpec), without a
// copy: valid while `action` lives.
class ActionId {
 public:
  explicit ActionId(py::handle action) {
    if (!PyUnicode_Check(action.ptr())) {
      if (!py::hasattr(action, "id"))
        throw py::type_error("an action is an id (str) or an object with an `id` (ActionSpec)");
      holder_ = action.attr("id");
      if (!PyUnicode_Check(holder_.ptr())) throw py::type_error("an action's `id` must be a str");
      action = holder_;
    }
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(action.ptr(), &size);
    if (text == nullptr) throw py::error_already_set();
    view_ = std::string_view(text, static_cast<std::size_t>(size));
  }
  [[nodiscard]] std::string_view view() const { return view_; }
  [[nodiscard]] std::string str() const { return std::string(view_); }

 private:
  py::object holder_;
  std::string_view view_;
};

// ---------------------------------------------------------------------------------------------
// The kernel.

class PyKernel {
 public:
  PyKernel(const Model& model,
           bool record_rejections,
           const std::string& trace_file,
           std::shared_ptr<ck::PoolTree> pools)
      : model_(model),
        record_rejections_(record_rejections),
        trace_file_(trace_file),
        pools_(std::move(pools)) {
    auto k = maybe_released(model_.python_predicates, [&] { return make_kernel(model_); });
    kernel_.store(k.get());
    kernels_.push_back(std::move(k));
  }
  PyKernel(const PyKernel&) = delete;
  PyKernel& operator=(const PyKernel&) = delete;
  ~PyKernel() {
    // The gate is a Python object: drop it with the GIL held (it is, in a destructor called
    // by Python), after the kernels that may call it.
    kernels_.clear();
  }

  // True iff a call into the kernel may call Python (a predicate, a goal or the gate): then
  // every call that takes the kernel's lock releases the GIL (see the file's comment).
  [[nodiscard]] bool calls_python() const noexcept {
    return model_.python_predicates || gated_.load(std::memory_order_relaxed);
  }

  PyDecision evaluate(py::handle action_obj, py::handle params) const {
    const ActionId action(action_obj);
    if (params.is_none()) {
      // The common call: no parameters, no ParamMap to build.
      return {maybe_released(calls_python(), [&] { return kernel().evaluate(action.view()); }),
              model_.model};
    }
    const ck::ParamMap p = to_params(params);
    return {maybe_released(calls_python(), [&] { return kernel().evaluate(action.view(), p); }),
            model_.model};
  }

  PyDecision evaluate_in(const ck::State& state,
                         const std::string& action,
                         py::handle params) const {
    const ck::ParamMap p = to_params(params);
    const ck::State s = in_schema(*model_.model, state);
    return {maybe_released(calls_python(),
                           [&] {
                             auto resolved = kernel().resolve(action, p);
                             if (auto* r = std::get_if<ck::Reason>(&resolved)) {
                               ck::Decision d;
                               d.reasons.push_back(*r);
                               return d;
                             }
                             return kernel().evaluate_in(s, std::get<ck::Proposal>(resolved));
                           }),
            model_.model};
  }

  // One step (`driver::step`, as HTTP's execute and MCP's tool call take).
  PyOutcome execute(py::handle action_obj, py::handle params) {
    const ActionId action(action_obj);
    const ck::ParamMap p = params.is_none() ? ck::ParamMap{} : to_params(params);
    return wrap(maybe_released(calls_python(), [&] {
      cd::LocalCommitter committer(kernel());
      return cd::step(committer, action.view(), p).outcome;
    }));
  }

  // Approvals (driver::Approvals, the ticket book `clampai serve` and `run` use): ask for one,
  // list the pending tickets, answer one. The book follows the current kernel.
  py::tuple ask_approval(py::handle action_obj, py::handle params, const std::string& principal) {
    const ActionId action(action_obj);
    const ck::ParamMap p = params.is_none() ? ck::ParamMap{} : to_params(params);
    cd::Approvals& book = approvals();  // made with the GIL held
    auto [decision, ticket] = maybe_released(calls_python(), [&]() -> cd::Approvals::Asked {
      auto resolved = kernel().resolve(action.view(), p);
      if (auto* r = std::get_if<ck::Reason>(&resolved)) {
        ck::Decision d;
        d.reasons.push_back(*r);
        return {std::move(d), std::nullopt};
      }
      ck::Proposal& proposal = std::get<ck::Proposal>(resolved);
      proposal.principal = principal;
      return book.ask(proposal);
    });
    return py::make_tuple(PyDecision{std::move(decision), model_.model},
                          ticket ? py::object(ticket_dict(*ticket)) : py::object(py::none()));
  }
  py::list pending_approvals() {
    cd::Approvals& book = approvals();
    const std::vector<cd::Ticket> tickets =
        maybe_released(calls_python(), [&] { return book.pending(); });
    py::list out;
    for (const cd::Ticket& t : tickets) out.append(ticket_dict(t));
    return out;
  }
  py::tuple answer_approval(const std::string& ticket, bool approve, const std::string& principal) {
    cd::Approvals& book = approvals();
    cd::Approvals::Answered a = maybe_released(calls_python(), [&] {
      try {
        // As `clampai serve`: nobody approves their own request.
        return book.answer(ticket, approve, principal, [&](const cd::Ticket& t) {
          if (approve && !t.principal.empty() && t.principal == principal)
            throw InvalidArgument("`" + principal + "` asked for ticket `" + t.id +
                                  "`: another principal must approve it");
        });
      } catch (const cd::TicketRefused& e) {
        throw InvalidArgument(e.what());
      }
    });
    return py::make_tuple(a.granted, wrap(std::move(a.step.outcome)));
  }

  PyOutcome rollback(const PyReceipt& receipt) {
    return wrap(maybe_released(calls_python(), [&] { return kernel().rollback(receipt.receipt); }));
  }

  // Installs the gate: `gate(state, action_id)` returns None to let an approved
  // decision stand, or `(code, subject, message)` to turn it into a rejection
  // (`precondition_failed` or `invariant_error`). Called with the GIL held.
  void set_gate(py::object gate) {
    const bool was_gated = calls_python();
    gate_ = std::move(gate);
    gated_.store(!gate_.is_none());
    // Taking the kernel's lock: release the GIL if a thread in the kernel may be waiting for
    // it (it may only if the kernel called Python before this call).
    maybe_released(was_gated, [&] { install_guard(kernel()); });
  }

  // Replaces the kernel by one for `model` (the same options), if nothing has happened yet:
  // only the genesis entry is in the trace. Called with the GIL held, which every call into
  // a kernel of a model without Python predicates holds too; the kernel replaced stays alive
  // (a thread of a model with Python predicates may still be in it).
  void reset(const Model& model) {
    if (!trace_file_.empty())
      throw InvalidArgument(
          "a kernel that writes a trace file cannot change its model: declare the emergency "
          "actions in the task (`emergency_actions`)");
    std::unique_ptr<ck::SafetyKernel> fresh =
        maybe_released(calls_python() || model.python_predicates, [&] {
          if (kernel().trace_length() != 1 || kernel().is_sealed())
            throw InvalidArgument(
                "emergency actions can only be registered before the first action (the "
                "trace's genesis records the model's digest): declare them in the task "
                "(`emergency_actions`)");
          return make_kernel(model);
        });
    model_.model = model.model;  // the same invariants: `python_predicates` stays
    kernel_.store(fresh.get());
    kernels_.push_back(std::move(fresh));
  }

  // Runs `f`, which takes the kernel's lock, with the GIL released if the model calls Python:
  // a thread in the kernel may be waiting for the GIL in a predicate while holding the lock.
  template <typename F>
  auto locked(F&& f) const {
    return maybe_released(calls_python(), std::forward<F>(f));
  }

  ck::SafetyKernel& kernel() { return *kernel_.load(std::memory_order_acquire); }
  const ck::SafetyKernel& kernel() const { return *kernel_.load(std::memory_order_acquire); }
  const Model& model() const { return model_; }

 private:
  std::unique_ptr<ck::SafetyKernel> make_kernel(const Model& model) {
    ck::KernelOptions options;
    options.record_rejections = record_rejections_;
    options.pools = pools_;  // binds the kernel to the pool its model's budget names
    if (!trace_file_.empty())
      options.writer = std::make_shared<ck::TraceWriter>(
          trace_file_, ck::FlushPolicy::buffered, ck::TraceOpen::create);
    auto k = std::make_unique<ck::SafetyKernel>(model.model, std::move(options));
    install_guard(*k);
    return k;
  }

  // The kernel consults the gate only once one is set: a kernel without a guard decides
  // without building the guard's arguments.
  void install_guard(ck::SafetyKernel& k) {
    if (!gated_.load()) {
      k.set_guard(nullptr);
      return;
    }
    k.set_guard([this](const ck::Situation& s, const ck::Proposal& p, const ck::Decision&) {
      return consult_gate(s, p);
    });
  }

  // Under the kernel's lock, with the GIL released by the caller (`calls_python`).
  std::optional<ck::Reason> consult_gate(const ck::Situation& s, const ck::Proposal& p) const {
    py::gil_scoped_acquire gil;
    const ck::Action& a = model_.model->actions[p.action];
    try {
      if (gate_.is_none()) return std::nullopt;
      py::object verdict = gate_(py::cast(s.state), a.id);
      if (verdict.is_none()) return std::nullopt;
      auto t = verdict.cast<py::tuple>();
      const auto code = t[0].cast<std::string>();
      return ck::Reason{code == "invariant_error" ? ck::ReasonCode::invariant_error
                                                  : ck::ReasonCode::precondition_failed,
                        t[1].cast<std::string>(),
                        t[2].cast<std::string>()};
    } catch (py::error_already_set& e) {
      // The gate itself failed (it catches what a precondition raises): fail closed.
      return ck::Reason{ck::ReasonCode::invariant_error,
                        a.id,
                        "the preconditions of `" + a.id + "` could not be checked: " + e.what()};
    } catch (const std::exception& e) {
      return ck::Reason{ck::ReasonCode::invariant_error,
                        a.id,
                        "the preconditions of `" + a.id + "` could not be checked: " + e.what()};
    }
  }

  PyOutcome wrap(ck::Outcome o) const { return {std::move(o), model_.model}; }

  cd::Approvals& approvals() {
    if (!approvals_ || approvals_kernel_ != &kernel()) {
      approvals_ = std::make_unique<cd::Approvals>(kernel());
      approvals_kernel_ = &kernel();
    }
    return *approvals_;
  }
  static py::dict ticket_dict(const cd::Ticket& t) {
    py::dict params;
    for (const auto& [name, value] : t.params) params[py::str(name)] = from_value(value);
    py::dict d;
    d["ticket"] = t.id;
    d["action"] = t.action;
    d["params"] = params;
    d["principal"] = t.principal;
    d["request_sequence"] = t.sequence;
    d["requested_at_us"] = t.requested_us;
    d["expires_at_us"] = t.expires_us;
    return d;
  }

  Model model_;
  bool record_rejections_;
  std::string trace_file_;
  std::shared_ptr<ck::PoolTree> pools_;  // null: no pool checks
  py::object gate_ = py::none();
  std::atomic<bool> gated_{false};
  std::atomic<ck::SafetyKernel*> kernel_{nullptr};
  std::vector<std::unique_ptr<ck::SafetyKernel>> kernels_;  // the current one last
  std::unique_ptr<cd::Approvals> approvals_;  // made at first use, on the current kernel
  const ck::SafetyKernel* approvals_kernel_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// `evaluate` and `execute` as CPython methods (vectorcall) of the bound SafetyKernel: pybind11's
// dispatcher (its argument vectors, keyword matching and overload loop) costs more than the C++
// evaluate itself. They take the same arguments, return the same objects and raise the same
// exceptions as pybind11 methods, and their docstrings are in pybind11's form (test_stubs.py).

// Sets the pending Python error for the C++ exception being handled, as pybind11's dispatcher
// does: the module's translators, then the global ones. Call only from a catch block.
void translate_exception() {
  if (py::detail::apply_exception_translators(
          py::detail::get_local_internals().registered_exception_translators))
    return;
  if (py::detail::apply_exception_translators(
          py::detail::get_internals().registered_exception_translators))
    return;
  PyErr_SetString(PyExc_SystemError, "Exception escaped from default exception translator!");
}

// `(action, params=None)` from `nargs` positional arguments followed by those `kwnames` names.
bool action_and_params(const char* name,
                       PyObject* const* args,
                       Py_ssize_t nargs,
                       PyObject* kwnames,
                       PyObject*& action,
                       PyObject*& params) {
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most 2 arguments (%zd given)", name, nargs);
    return false;
  }
  action = nargs > 0 ? args[0] : nullptr;
  params = nargs > 1 ? args[1] : nullptr;
  const Py_ssize_t named = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < named; ++i) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    PyObject** slot = PyUnicode_CompareWithASCIIString(key, "action") == 0   ? &action
                      : PyUnicode_CompareWithASCIIString(key, "params") == 0 ? &params
                                                                             : nullptr;
    if (slot == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", name, key);
      return false;
    }
    if (*slot != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", name, key);
      return false;
    }
    *slot = args[nargs + i];
  }
  if (action == nullptr) {
    PyErr_Format(PyExc_TypeError, "%s() missing required argument 'action'", name);
    return false;
  }
  if (params == nullptr) params = Py_None;
  return true;
}

// The PyKernel of `self`, an instance of the bound class or of a Python subclass of it (the
// method descriptor checked that before the call). An instance of simple layout holds one C++
// value, which is then the PyKernel; another (a Python class deriving from two bound classes)
// goes through pybind11's caster, with the class's record looked up once.
PyKernel& kernel_of(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  void* value = nullptr;
  if (inst->simple_layout) {
    value = inst->simple_value_holder[0];
  } else {
    static const py::detail::type_info* const info = py::detail::get_type_info(typeid(PyKernel));
    py::detail::type_caster_generic caster(info);
    if (!caster.load(self, false)) throw py::type_error("not a SafetyKernel");
    value = caster.value;
  }
  // No value: a subclass's __init__ did not call the bound one.
  if (value == nullptr) throw py::reference_cast_error();
  return *static_cast<PyKernel*>(value);
}

// Calls `f(kernel, action, params)` (returning a py::object) for the method `name` of `self`.
template <typename F>
PyObject* kernel_call(const char* name,
                      PyObject* self,
                      PyObject* const* args,
                      Py_ssize_t nargs,
                      PyObject* kwnames,
                      F&& f) {
  PyObject* action = nullptr;
  PyObject* params = nullptr;
  if (!action_and_params(name, args, nargs, kwnames, action, params)) return nullptr;
  try {
    return f(kernel_of(self), action, params).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (abi::__forced_unwind&) {
    throw;  // thread cancellation
  } catch (...) {
    translate_exception();
  }
  return nullptr;
}

PyObject* fast_evaluate(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kw) {
  return kernel_call(
      "evaluate", self, args, nargs, kw, [](const PyKernel& k, py::handle a, py::handle p) {
        return wrap_decision(k.evaluate(a, p));
      });
}

PyObject* fast_execute(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kw) {
  return kernel_call("execute", self, args, nargs, kw, [](PyKernel& k, py::handle a, py::handle p) {
    return wrap_outcome(k.execute(a, p));
  });
}

template <typename F>
PyCFunction as_cfunction(F* f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

// Adds `evaluate` and `execute` to the bound class `cls`.
void add_fast_methods(py::handle cls) {
  static PyMethodDef methods[] = {
      {"evaluate",
       as_cfunction(fast_evaluate),
       METH_FASTCALL | METH_KEYWORDS,
       "evaluate(self: clampai._clampai.SafetyKernel, action: handle, params: handle = None) -> "
       "Decision\n"},
      {"execute",
       as_cfunction(fast_execute),
       METH_FASTCALL | METH_KEYWORDS,
       "execute(self: clampai._clampai.SafetyKernel, action: handle, params: handle = None) -> "
       "clampai._clampai.Outcome\n"}};
  for (PyMethodDef& def : methods) {
    auto descr = py::reinterpret_steal<py::object>(
        PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def));
    if (!descr) throw py::error_already_set();
    py::setattr(cls, def.ml_name, descr);
  }
}

// Translates the library's errors raised by `f` into Python exceptions naming `file`.
template <typename F>
auto translating(const std::string& file, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    rethrow_as_python(e, file);
  }
}

// ---------------------------------------------------------------------------------------------
// Building models.

Model load_spec_file(const std::string& path) {
  return translating(path, [&] {
    std::shared_ptr<const ck::TaskModel> m;
    {
      py::gil_scoped_release nogil;
      m = ck::load_spec_file(path);
    }
    return make_model(std::move(m));
  });
}

ck::Enforcement parse_enforcement(const std::string& text, const std::string& where) {
  if (text == "blocking") return ck::Enforcement::blocking;
  if (text == "monitoring") return ck::Enforcement::monitoring;
  throw SpecError(where + ".enforcement", "must be `blocking` or `monitoring`, not `" + text + "`");
}

// A spec (JSON text, as in a file) plus native invariants: (index among all invariants, name,
// callable, enforcement, description, suggestion), and a callable goal (or None).
Model build_model(const std::string& spec_json,
                  const py::list& natives,
                  py::handle goal,
                  const std::vector<std::string>& floats) {
  return translating("", [&] {
    ck::TaskDecl decl = ck::parse_spec(spec_json);
    if (!goal.is_none()) {
      if (!decl.goal.empty())
        throw py::value_error("a task has one goal: an expression or a callable");
      decl.goal_predicate = PythonPredicate(py::reinterpret_borrow<py::object>(goal));
    }
    for (py::handle item : natives) {
      py::tuple t = py::reinterpret_borrow<py::tuple>(item);
      const auto index = t[0].cast<std::size_t>();
      ck::InvariantDecl inv;
      inv.name = t[1].cast<std::string>();
      inv.predicate = PythonPredicate(py::reinterpret_borrow<py::object>(t[2]));
      inv.enforcement =
          parse_enforcement(t[3].cast<std::string>(), "invariants[" + std::to_string(index) + "]");
      inv.description = t[4].cast<std::string>();
      inv.suggestion = t[5].cast<std::string>();
      const std::size_t at = std::min(index, decl.invariants.size());
      decl.invariants.insert(decl.invariants.begin() + static_cast<std::ptrdiff_t>(at),
                             std::move(inv));
    }
    Model built = make_model(ck::build_model(decl));
    mark_floats(built.model->schema, floats);
    return built;
  });
}

// ---------------------------------------------------------------------------------------------
// Verification and search: JSON reports (the CLI's schemas), which the package wraps.

std::string verify_json(const Model& model,
                        const std::string& spec_name,
                        unsigned timeout_ms,
                        unsigned jobs,
                        unsigned depth) {
  return translating(spec_name, [&] {
    py::gil_scoped_release nogil;
    cv::VerifyOptions options;
    options.timeout_ms = timeout_ms;
    options.jobs = jobs;
    options.depth = depth;
    const cv::Report report = cv::verify(model.model, options);
    report::VerifyReport out;
    out.spec = spec_name;
    out.model = model.model.get();
    out.report = &report;
    out.seconds = report.seconds;
    std::ostringstream text;
    report::write_verify(text, report::Format::json, out);
    return text.str();
  });
}

ck::Proposal resolve(const std::shared_ptr<const ck::TaskModel>& m,
                     const std::string& action,
                     const ck::ParamMap& params) {
  // A throwaway kernel only resolves names; its state does not matter.
  ck::KernelOptions options;
  options.check_initial_state = false;
  const ck::SafetyKernel resolver(m, options);
  auto r = resolver.resolve(action, params);
  if (auto* reason = std::get_if<ck::Reason>(&r)) {
    std::string message = reason->message;
    if (reason->code == ck::ReasonCode::unknown_action) {
      std::vector<std::string> ids;
      for (const auto& a : m->actions) ids.push_back(a.id);
      message += ck::did_you_mean(action, ids);
    }
    throw InvalidArgument(message);
  }
  return std::get<ck::Proposal>(r);
}

ck::Situation situation_of(const PyKernel* kernel, const Model& model, py::handle state) {
  ck::Situation s = kernel != nullptr ? kernel->locked([&] { return kernel->kernel().situation(); })
                                      : ck::Situation::initial(*model.model);
  if (!state.is_none()) s.state = in_schema(*model.model, state.cast<const ck::State&>());
  return s;
}

std::string lookahead_json(const Model& model,
                           const PyKernel* kernel,
                           const std::string& action,
                           py::handle params,
                           py::handle state,
                           unsigned depth,
                           const std::string& engine,
                           unsigned timeout_ms) {
  if (engine != "explicit" && engine != "symbolic")
    throw py::value_error("engine must be `explicit` or `symbolic`, not `" + engine + "`");
  const ck::ParamMap p = to_params(params);
  const ck::Situation situation = situation_of(kernel, model, state);
  return translating("", [&] {
    py::gil_scoped_release nogil;
    const ck::Proposal proposal = resolve(model.model, action, p);
    cd::LookaheadOptions options;
    options.depth = depth;
    options.timeout_ms = timeout_ms;
    const cd::LookaheadResult result =
        engine == "symbolic"
            ? cv::symbolic_lookahead(*model.model, situation, proposal, options, timeout_ms)
            : cd::lookahead(*model.model, situation, proposal, options);
    std::ostringstream text;
    report::write_lookahead(text,
                            report::Format::json,
                            {model.model->name, action, depth, engine, model.model.get(), &result});
    return text.str();
  });
}

std::string repair_json(const Model& model,
                        const PyKernel* kernel,
                        const std::string& action,
                        py::handle params,
                        py::handle state,
                        const std::string& norm,
                        py::handle weights,
                        unsigned timeout_ms) {
  const ck::ParamMap p = to_params(params);
  const ck::Situation situation = situation_of(kernel, model, state);
  cv::RepairOptions options;
  options.timeout_ms = timeout_ms;
  if (norm == "l1") {
    options.norm = cv::RepairNorm::l1;
  } else if (norm == "l2") {
    options.norm = cv::RepairNorm::l2;
  } else if (!norm.empty()) {
    throw py::value_error("norm must be `l1` or `l2`, not `" + norm + "`");
  }
  for (const auto& [name, w] : to_params(weights)) {
    if (w.kind() != ck::Value::Kind::number || w.as_number().units <= 0)
      throw py::value_error("weights." + name + ": a weight must be a positive number");
    options.weights[name] = w.as_number();
  }
  return translating("", [&] {
    py::gil_scoped_release nogil;
    const ck::Proposal proposal = resolve(model.model, action, p);
    const cv::RepairResult r = cv::repair(*model.model, situation, proposal, options);
    std::ostringstream text;
    report::write_repair(
        text, report::Format::json, {model.model->name, model.model.get(), &proposal, &r});
    return text.str();
  });
}

std::string compose_json(const std::string& manifest,
                         const std::string& cache_dir,
                         unsigned jobs,
                         unsigned timeout_ms) {
  // Manifest errors name their files themselves (as `clampai compose` prints them).
  return translating("", [&] {
    py::gil_scoped_release nogil;
    const composition::Manifest m = composition::load_manifest(manifest);
    composition::ComposeOptions options;
    options.cache_dir = cache_dir;
    options.jobs = jobs;
    options.timeout_ms = timeout_ms;
    const composition::ComposeReport r = composition::compose(m, options);
    report::ComposeReport out;
    out.manifest = manifest;
    out.report = &r;
    out.seconds = r.seconds;
    std::ostringstream text;
    report::write_compose(text, report::Format::json, out);
    return text.str();
  });
}

// ---------------------------------------------------------------------------------------------

ck::State with_updates(const ck::State& s, py::handle updates) {
  py::dict merged = state_dict(s);
  for (auto item : py::reinterpret_borrow<py::dict>(updates)) merged[item.first] = item.second;
  ck::State fresh = state_from_mapping(merged);
  // Same variables: keep the schema (so the kernel sees its own states).
  if (fresh.schema().names() == s.schema().names()) {
    std::vector<std::pair<ck::VarId, ck::Value>> changes;
    for (std::size_t i = 0; i < s.size(); ++i)
      changes.emplace_back(static_cast<ck::VarId>(i), fresh.get(static_cast<ck::VarId>(i)));
    return s.with(changes);
  }
  return fresh;
}

}  // namespace

void bind_all(py::module_& m) {
  m.doc() =
      "ClampAI's safety kernel, verifier and search, from C++ (the `clampai` package "
      "wraps this module)";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      set_python_error(e, "");
    } catch (const cv::InternalError& e) {
      PyErr_SetString(error_class("InternalError").ptr(), e.what());
    }
  });

  // A state's values beyond the kernel's types (a mapping, an object: the Python ClampAI's
  // states hold any value) live in the instance's `_opaque` dict (python/clampai/_opaque.py):
  // read here only when the kernel's variables lack the key, so a hit costs nothing more.
  const auto opaque = [](py::handle self) -> py::object {
    return py::getattr(self, "_opaque", py::none());
  };
  // A copy of such a value, as the Python ClampAI's `get` gives: the state stays as it was.
  const auto copied = [](py::handle value) -> py::object {
    // Never destroyed: a static py::object would be released after the interpreter ends.
    static const py::object* const deepcopy =
        new py::object(py::module_::import("copy").attr("deepcopy"));
    return (*deepcopy)(value);
  };
  py::class_<ck::State>(m, "State", py::dynamic_attr())
      .def(py::init([](py::handle mapping) { return state_from_mapping(mapping); }), "variables"_a)
      .def(
          "get",
          [opaque, copied](
              py::handle self, const std::string& key, py::object fallback) -> py::object {
            const ck::State& s = self.cast<const ck::State&>();
            if (const auto id = s.schema().find(key)) return state_value(s, *id);
            const py::object extra = opaque(self);
            if (!extra.is_none() && extra.contains(key)) return copied(extra[py::str(key)]);
            return fallback;
          },
          "key"_a,
          "default"_a = py::none())
      .def(
          "__getitem__",
          [opaque, copied](py::handle self, const std::string& key) -> py::object {
            const ck::State& s = self.cast<const ck::State&>();
            if (const auto id = s.schema().find(key)) return state_value(s, *id);
            const py::object extra = opaque(self);
            if (!extra.is_none() && extra.contains(key)) return copied(extra[py::str(key)]);
            throw py::key_error(key);
          },
          "key"_a)
      .def(
          "has",
          [opaque](py::handle self, const std::string& key) {
            if (self.cast<const ck::State&>().schema().find(key).has_value()) return true;
            const py::object extra = opaque(self);
            return !extra.is_none() && extra.contains(key);
          },
          "key"_a)
      .def(
          "__contains__",
          [opaque](py::handle self, py::handle key) {
            if (!PyUnicode_Check(key.ptr())) return false;
            if (self.cast<const ck::State&>().schema().find(key.cast<std::string>()).has_value())
              return true;
            const py::object extra = opaque(self);
            return !extra.is_none() && extra.contains(key);
          },
          "key"_a)
      .def("keys", [](const ck::State& s) { return s.schema().names(); })
      .def("__len__", &ck::State::size)
      .def("__iter__", [](const ck::State& s) { return py::iter(py::cast(s.schema().names())); })
      .def("to_dict", &state_dict)
      // Immutable: a copy is the state itself; a pickle is its variables.
      .def("__copy__", [](py::object self) { return self; })
      .def(
          "__deepcopy__", [](py::object self, py::handle) { return self; }, "memo"_a)
      .def(py::pickle([](const ck::State& s) { return state_dict(s); },
                      [](const py::dict& d) { return state_from_mapping(d); }))
      .def("with_updates", &with_updates, "updates"_a)
      .def(
          "without_keys",
          [](const ck::State& s, const py::iterable& keys) {
            py::dict d = state_dict(s);
            for (py::handle k : keys)
              if (d.contains(k)) PyDict_DelItem(d.ptr(), k.ptr());
            return state_from_mapping(d);
          },
          "keys"_a)
      .def(
          "describe",
          [](const ck::State& s, std::size_t max_keys) {
            // The reference's summary: a line per variable (its repr cut at 80 characters).
            std::string out = "State:";
            const std::vector<std::string> names = s.schema().names();
            for (std::size_t i = 0; i < names.size() && i < max_keys; ++i) {
              std::string text =
                  py::repr(state_value(s, *s.schema().find(names[i]))).cast<std::string>();
              if (text.size() > 80) text = text.substr(0, 77) + "...";
              out += "\n  " + names[i] + " = " + text;
            }
            if (names.size() > max_keys)
              out += "\n  ... and " + std::to_string(names.size() - max_keys) + " more";
            return out;
          },
          "max_keys"_a = 20)
      .def(
          "diff",
          [](const ck::State& a, const ck::State& b) {
            py::dict out;
            py::dict da = state_dict(a), db = state_dict(b);
            for (auto item : da) {
              py::object other = db.contains(item.first) ? py::object(db[item.first]) : py::none();
              if (!db.contains(item.first) || !item.second.equal(other))
                out[item.first] = py::make_tuple(item.second, other);
            }
            for (auto item : db)
              if (!da.contains(item.first))
                out[item.first] = py::make_tuple(py::none(), item.second);
            return out;
          },
          "other"_a)
      .def_property_readonly("digest", [](const ck::State& s) { return ck::state_digest(s); })
      .def_property_readonly("fingerprint",
                             [](const ck::State& s) { return ck::state_digest(s).substr(0, 16); })
      .def(
          "__eq__",
          [](const ck::State& a, py::handle b) {
            if (py::isinstance<ck::State>(b)) {
              const ck::State& other = b.cast<const ck::State&>();
              if (a.schema().names() != other.schema().names()) return false;
              for (std::size_t i = 0; i < a.size(); ++i)
                if (!(a.get(static_cast<ck::VarId>(i)) == other.get(static_cast<ck::VarId>(i))))
                  return false;
              return true;
            }
            return false;
          },
          "other"_a)
      .def("__hash__",
           [](const ck::State& s) { return py::hash(py::str(ck::state_digest(s).substr(0, 16))); })
      .def("__repr__", &state_repr);

  py::class_<Model>(m, "TaskModel")
      .def_property_readonly("name", [](const Model& x) { return x.model->name; })
      .def_property_readonly("digest", [](const Model& x) { return x.model->digest; })
      .def_property_readonly("variables", [](const Model& x) { return x.model->schema->names(); })
      .def_property_readonly("actions",
                             [](const Model& x) {
                               std::vector<std::string> ids;
                               for (const auto& a : x.model->actions) ids.push_back(a.id);
                               return ids;
                             })
      .def_property_readonly("invariants",
                             [](const Model& x) {
                               std::vector<std::string> names;
                               for (const auto& i : x.model->invariants) names.push_back(i.name);
                               return names;
                             })
      .def_property_readonly("opaque_invariants",
                             [](const Model& x) {
                               std::vector<std::string> names;
                               for (const auto& i : x.model->invariants)
                                 if (!i.expr) names.push_back(i.name);
                               return names;
                             })
      .def_property_readonly("emergency_actions",
                             [](const Model& x) {
                               std::vector<std::string> ids;
                               for (const auto& a : x.model->actions)
                                 if (a.emergency) ids.push_back(a.id);
                               return ids;
                             })
      .def_property_readonly(
          "has_goal", [](const Model& x) { return x.model->goal || x.model->goal_predicate; })
      .def_property_readonly("step_limit",
                             [](const Model& x) { return x.model->budget.step_limit; })
      .def_property_readonly("budget",
                             [](const Model& x) {
                               return make_decimal(x.model->format_amount(x.model->budget.total));
                             })
      .def_property_readonly("budget_pool", [](const Model& x) { return x.model->budget.pool; })
      .def_property_readonly(
          "min_action_cost",
          [](const Model& x) {
            return make_decimal(x.model->format_amount(x.model->budget.min_action_cost));
          })
      .def_property_readonly("initial_state",
                             [](const Model& x) { return x.model->initial_state(); })
      .def(
          "goal_holds",
          [](const Model& x, const ck::State& s) {
            const ck::State st = in_schema(*x.model, s);
            return maybe_released(x.python_predicates, [&] { return x.model->goal_holds(st); });
          },
          "state"_a)
      .def("__repr__", [](const Model& x) {
        return "TaskModel(name=" + py::repr(py::str(x.model->name)).cast<std::string>() + ", " +
               std::to_string(x.model->variables.size()) + " variables, " +
               std::to_string(x.model->actions.size()) + " actions, " +
               std::to_string(x.model->invariants.size()) + " invariants)";
      });

  py::class_<ck::Reason>(m, "Reason")
      .def_property_readonly("code",
                             [](const ck::Reason& r) { return std::string(ck::to_string(r.code)); })
      .def_readonly("subject", &ck::Reason::subject)
      .def_readonly("message", &ck::Reason::message)
      .def("to_dict", &reason_dict)
      .def("__repr__", [](const ck::Reason& r) {
        return "Reason(" + std::string(ck::to_string(r.code)) + ", " +
               py::repr(py::str(r.subject)).cast<std::string>() + ")";
      });

  add_decision_type(m);

  py::class_<PyReceipt>(m, "Receipt")
      .def_property_readonly("sequence", [](const PyReceipt& r) { return r.receipt.sequence; })
      .def_property_readonly(
          "action", [](const PyReceipt& r) { return r.model->actions[r.receipt.action].id; })
      .def_property_readonly(
          "cost",
          [](const PyReceipt& r) { return make_decimal(r.model->format_amount(r.receipt.cost)); })
      .def("to_dict", &receipt_dict)
      .def("__repr__", [](const PyReceipt& r) {
        return "Receipt(sequence=" + std::to_string(r.receipt.sequence) + ", action=" +
               py::repr(py::str(r.model->actions[r.receipt.action].id)).cast<std::string>() + ")";
      });

  add_outcome_type(m);

  py::class_<PyKernel> kernel_class(m, "SafetyKernel");
  add_fast_methods(kernel_class);
  kernel_class
      .def(py::init<const Model&, bool, const std::string&, std::shared_ptr<ck::PoolTree>>(),
           "model"_a,
           "record_rejections"_a = false,
           "trace_file"_a = "",
           "pools"_a = nullptr)
      .def(
          "evaluate_in",
          [](const PyKernel& k, const ck::State& state, py::handle action, py::handle params) {
            return k.evaluate_in(state, ActionId(action).str(), params);
          },
          "state"_a,
          "action"_a,
          "params"_a = py::none())
      .def("rollback", &PyKernel::rollback, "receipt"_a)
      .def(
          "ask_approval",
          [](PyKernel& k, py::handle action, py::handle params, const std::string& principal) {
            return translating("", [&] { return k.ask_approval(action, params, principal); });
          },
          "action"_a,
          "params"_a = py::none(),
          "principal"_a = "")
      .def("pending_approvals",
           [](PyKernel& k) { return translating("", [&] { return k.pending_approvals(); }); })
      .def(
          "answer_approval",
          [](PyKernel& k, const std::string& ticket, bool approve, const std::string& principal) {
            return translating("", [&] { return k.answer_approval(ticket, approve, principal); });
          },
          "ticket"_a,
          "approve"_a,
          "principal"_a)
      .def("_set_gate", &PyKernel::set_gate, "gate"_a)
      .def(
          "_reset",
          [](PyKernel& k, const Model& model) { translating("", [&] { k.reset(model); }); },
          "model"_a)
      .def("seal",
           [](PyKernel& k) {
             return maybe_released(k.calls_python(),
                                   [&] { return k.kernel().seal().to_json_line(); });
           })
      .def_property_readonly("model", &PyKernel::model)
      .def_property_readonly(
          "state", [](const PyKernel& k) { return k.locked([&] { return k.kernel().state(); }); })
      .def_property_readonly(
          "step_count",
          [](const PyKernel& k) { return k.locked([&] { return k.kernel().steps(); }); })
      .def_property_readonly(
          "emergency_steps",
          [](const PyKernel& k) { return k.locked([&] { return k.kernel().emergency_steps(); }); })
      .def_property_readonly("max_steps", [](const PyKernel& k) { return k.kernel().step_limit(); })
      .def_property_readonly(
          "is_sealed",
          [](const PyKernel& k) { return k.locked([&] { return k.kernel().is_sealed(); }); })
      .def("_budget",
           [](const PyKernel& k) {
             const ck::BudgetController b = k.locked([&] { return k.kernel().budget(); });
             const ck::TaskModel& tm = k.kernel().model();
             return py::make_tuple(make_decimal(tm.format_amount(b.total())),
                                   make_decimal(tm.format_amount(b.gross())),
                                   make_decimal(tm.format_amount(b.net())),
                                   make_decimal(tm.format_amount(b.remaining())));
           })
      .def("goal_reached",
           [](const PyKernel& k) {
             return maybe_released(k.calls_python(), [&] { return k.kernel().goal_reached(); });
           })
      .def(
          "completions",
          [](const PyKernel& k, const std::string& action) {
            const auto index = k.kernel().model().find_action(action);
            if (!index) throw py::value_error("unknown action `" + action + "`");
            return k.locked([&] { return k.kernel().completions(*index); });
          },
          "action"_a)
      .def("_trace_lines",
           [](const PyKernel& k) {
             std::vector<std::string> lines;
             for (const ck::TraceEntry& e : k.locked([&] { return k.kernel().trace(); }))
               lines.push_back(e.to_json_line());
             return lines;
           })
      .def_property_readonly(
          "trace_length",
          [](const PyKernel& k) { return k.locked([&] { return k.kernel().trace_length(); }); })
      .def("_verify_trace", [](const PyKernel& k) {
        const ck::TraceCheck c = k.locked([&] { return k.kernel().verify_trace(); });
        return py::make_tuple(c.ok, c.message);
      });

  // For benchmarks/bench_python.py: the C++ call itself, timed in a C++ loop in this process
  // (this thread's CPU nanoseconds per call), to compare with the same call made through the
  // bindings.
  m.def(
      "_time_cpp",
      [](PyKernel& k, const std::string& what, const std::string& action, std::size_t iterations) {
        if (what != "evaluate" && what != "execute")
          throw py::value_error("what must be `evaluate` or `execute`");
        const auto cpu_ns = [] {
          timespec t{};
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
          return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
        };
        py::gil_scoped_release nogil;
        std::size_t approved = 0;
        const double start = cpu_ns();
        for (std::size_t i = 0; i < iterations; ++i) {
          approved += what == "evaluate" ? k.kernel().evaluate(action).approved
                                         : k.kernel().execute(action).decision.approved;
        }
        const double took = cpu_ns() - start;
        if (approved != iterations) throw py::value_error("a timed call was rejected");
        return took / static_cast<double>(iterations);
      },
      "kernel"_a,
      "what"_a,
      "action"_a,
      "iterations"_a);
  m.def(
      "_run_orchestrator",
      [](PyKernel& k, py::object llm, const py::dict& options) {
        return run_orchestrator(k.kernel(), std::move(llm), options);
      },
      "kernel"_a,
      "llm"_a,
      "options"_a);
  bind_http_llm(m);
  m.def("_mcp_protocol_versions", [] {
    return std::vector<std::string>(std::begin(clampai::server::mcp_protocol_versions),
                                    std::end(clampai::server::mcp_protocol_versions));
  });
  bind_agent(m);
  bind_shared(m);
  bind_pools(m);
  bind_hardening(m);
  bind_formal(m);
  bind_reasoning(m);
  m.def("_load_spec_file", &load_spec_file, "path"_a);
  m.def("_build_model",
        &build_model,
        "spec_json"_a,
        "natives"_a,
        "goal"_a = py::none(),
        "floats"_a = std::vector<std::string>());
  m.def("_verify", &verify_json, "model"_a, "spec_name"_a, "timeout_ms"_a, "jobs"_a, "depth"_a);
  m.def(
      "_lookahead",
      [](const Model& model,
         const PyKernel* kernel,
         const std::string& action,
         py::handle params,
         py::handle state,
         unsigned depth,
         const std::string& engine,
         unsigned timeout_ms) {
        return lookahead_json(model, kernel, action, params, state, depth, engine, timeout_ms);
      },
      "model"_a,
      "kernel"_a,
      "action"_a,
      "params"_a,
      "state"_a,
      "depth"_a,
      "engine"_a,
      "timeout_ms"_a);
  m.def(
      "_repair",
      [](const Model& model,
         const PyKernel* kernel,
         const std::string& action,
         py::handle params,
         py::handle state,
         const std::string& norm,
         py::handle weights,
         unsigned timeout_ms) {
        return repair_json(model, kernel, action, params, state, norm, weights, timeout_ms);
      },
      "model"_a,
      "kernel"_a,
      "action"_a,
      "params"_a,
      "state"_a,
      "norm"_a,
      "weights"_a,
      "timeout_ms"_a);
  m.def("_compose", &compose_json, "manifest"_a, "cache_dir"_a, "jobs"_a, "timeout_ms"_a);
  m.def(
      "_verify_trace_file",
      [](const std::string& path) {
        return translating(path, [&] {
          ck::TraceCheck c;
          {
            py::gil_scoped_release nogil;
            c = ck::verify_trace_file(path, true);
          }
          return py::make_tuple(c.ok, c.entries, c.sealed, c.message);
        });
      },
      "path"_a);
}

}  // namespace clampai::python

PYBIND11_MODULE(_clampai, m) { clampai::python::bind_all(m); }
