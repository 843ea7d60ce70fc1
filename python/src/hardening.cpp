// Attestors and the reference monitor for Python. The package's `clampai.hardening` wraps
// these private names. Every call that runs attestations, probes or the monitor's kernel
// releases the GIL (a subprocess may take seconds); a Python attestor takes it back for its
// call, and what it raises is a failed attestation (fail closed), never a crash.
#include "hardening.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "clampai/hardening/attestor.hpp"
#include "clampai/hardening/monitor.hpp"
#include "clampai/hardening/patterns.hpp"
#include "clampai/hardening/subprocess.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/security.hpp"
#include "types.hpp"
#include "values.hpp"

namespace clampai::python {
namespace {

namespace ck = clampai::kernel;
namespace hd = clampai::hardening;
using namespace pybind11::literals;

struct PyAttestor {
  std::shared_ptr<const hd::Attestor> impl;
};

py::dict attestation_dict(const hd::Attestation& a) {
  py::list dims;
  for (const hd::Attestation& d : a.dimensions) dims.append(attestation_dict(d));
  return py::dict("attestor"_a = a.attestor,
                  "passed"_a = a.passed,
                  "evidence"_a = a.evidence,
                  "error"_a = a.error,
                  "dimensions"_a = dims);
}

py::list attestation_list(const std::vector<hd::Attestation>& as) {
  py::list out;
  for (const hd::Attestation& a : as) out.append(attestation_dict(a));
  return out;
}

// The Python exception being handled, as `Type: message`.
std::string describe(py::error_already_set& e) {
  std::string text = py::str(e.type().attr("__name__")).cast<std::string>();
  const std::string detail = py::str(e.value()).cast<std::string>();
  if (!detail.empty()) text += ": " + detail;
  return text;
}

// Holds a Python object; releases it with the GIL (or leaks it at interpreter exit).
std::shared_ptr<py::object> hold(py::object fn) {
  return {new py::object(std::move(fn)), [](py::object* p) {
            if (Py_IsInitialized() == 0) return;
            py::gil_scoped_acquire gil;
            delete p;
          }};
}

// `fn(state_or_None, action) -> (passed, evidence)`, normalised by the package.
PyAttestor predicate_attestor(const std::string& name, py::object fn) {
  auto held = hold(std::move(fn));
  auto call = [held](const hd::AttestationContext& ctx, std::string& evidence) -> bool {
    py::gil_scoped_acquire gil;
    try {
      py::object state = ctx.state != nullptr ? py::cast(*ctx.state) : py::object(py::none());
      py::object r = (*held)(state, ctx.action);
      auto t = r.cast<py::tuple>();
      evidence = py::str(t[1]).cast<std::string>();
      const int truth = PyObject_IsTrue(t[0].ptr());
      if (truth < 0) throw py::error_already_set();
      return truth == 1;
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  };
  return {std::make_shared<hd::PredicateAttestor>(name, std::move(call))};
}

hd::SubprocessLimits limits_of(unsigned timeout_ms, std::size_t max_output_bytes) {
  hd::SubprocessLimits limits;
  limits.timeout = std::chrono::milliseconds(timeout_ms);
  limits.max_output_bytes = max_output_bytes;
  return limits;
}

PyAttestor subprocess_attestor(const std::string& name,
                               const std::vector<std::string>& argv,
                               const std::vector<std::string>& allowed_programs,
                               unsigned timeout_ms,
                               std::size_t max_output_bytes,
                               py::handle environment,
                               const std::string& working_dir) {
  hd::ProgramAllowlist allowlist(allowed_programs);
  const hd::SubprocessLimits limits = limits_of(timeout_ms, max_output_bytes);
  std::vector<std::pair<std::string, std::string>> env{{"PATH", "/usr/bin:/bin"}, {"LC_ALL", "C"}};
  if (!environment.is_none()) {
    env.clear();
    for (auto item : py::reinterpret_borrow<py::dict>(environment))
      env.emplace_back(py::str(item.first).cast<std::string>(),
                       py::str(item.second).cast<std::string>());
  }
  return {std::make_shared<hd::SubprocessAttestor>(
      name, argv, hd::SubprocessRunner(std::move(allowlist), limits, std::move(env), working_dir))};
}

PyAttestor multi_attestor(const std::string& name,
                          const std::vector<PyAttestor>& dimensions,
                          std::size_t quorum) {
  std::vector<std::shared_ptr<const hd::Attestor>> dims;
  for (const PyAttestor& d : dimensions) dims.push_back(d.impl);
  return {std::make_shared<hd::MultiDimensionalAttestor>(name, std::move(dims), quorum)};
}

// A reconciliation probe over a Python callable `read() -> value` (the package's
// EnvironmentProbe); what it raises, or a value of no kernel type, is a failed reading (drift).
hd::Probe python_probe(const std::string& variable, py::object read, const std::string& tolerance) {
  std::string why;
  const auto tol = ck::Decimal::parse(tolerance, &why);
  if (!tol) throw InvalidArgument("probe of `" + variable + "`: tolerance: " + why);
  auto held = hold(std::move(read));
  auto reader = [held, variable](const hd::AttestationContext&) -> ck::Value {
    py::gil_scoped_acquire gil;
    try {
      return to_value((*held)(), "probes." + variable);
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  };
  return hd::callback_probe(variable, std::move(reader), *tol);
}

// A readiness probe over a Python callable `check() -> (ready, detail)`.
hd::ReadinessProbe python_readiness(const std::string& dependency,
                                    py::object check,
                                    long long initial_delay_ms,
                                    double multiplier,
                                    long long max_delay_ms,
                                    long long deadline_ms) {
  auto held = hold(std::move(check));
  hd::ReadinessProbe r;
  r.dependency = dependency;
  r.ready = [held](std::string& detail) -> bool {
    py::gil_scoped_acquire gil;
    try {
      auto t = (*held)().cast<py::tuple>();
      detail = py::str(t[1]).cast<std::string>();
      const int truth = PyObject_IsTrue(t[0].ptr());
      if (truth < 0) throw py::error_already_set();
      return truth == 1;
    } catch (py::error_already_set& e) {
      throw std::runtime_error(describe(e));
    }
  };
  r.initial_delay = std::chrono::milliseconds(initial_delay_ms);
  r.multiplier = multiplier;
  r.max_delay = std::chrono::milliseconds(max_delay_ms);
  r.deadline = std::chrono::milliseconds(deadline_ms);
  return r;
}

py::dict flow_dict(const ck::TaskModel& m, const ck::InformationFlow& f) {
  return py::dict("action"_a = m.actions[f.action].id,
                  "source"_a = f.source,
                  "source_label"_a = std::string(ck::to_string(f.source_label)),
                  "target"_a = f.target,
                  "target_label"_a = std::string(ck::to_string(f.target_label)),
                  "path"_a = f.path,
                  "expression"_a = f.expression);
}

// The reference monitor over a model, with the host program's attestors.
class PyMonitor {
 public:
  PyMonitor(const Model& model,
            const std::map<std::string, PyAttestor>& attestors,
            const std::vector<std::string>& allowed_programs,
            unsigned timeout_ms,
            std::size_t max_output_bytes,
            bool enforce_information_flow,
            bool record_rejections,
            const py::list& probes,
            const py::list& readiness)
      : model_(model.model) {
    hd::MonitorOptions options;
    options.kernel.record_rejections = record_rejections;
    for (const auto& [name, a] : attestors) options.attestors.emplace(name, a.impl);
    options.allowed_programs = allowed_programs;
    options.limits = limits_of(timeout_ms, max_output_bytes);
    options.enforce_information_flow = enforce_information_flow;
    // (variable, read, tolerance) and (dependency, check, initial_ms, multiplier, max_ms,
    // deadline_ms), as the package gives them.
    for (py::handle p : probes) {
      auto t = p.cast<py::tuple>();
      options.probes.push_back(python_probe(t[0].cast<std::string>(),
                                            py::reinterpret_borrow<py::object>(t[1]),
                                            t[2].cast<std::string>()));
    }
    for (py::handle r : readiness) {
      auto t = r.cast<py::tuple>();
      options.readiness.push_back(python_readiness(t[0].cast<std::string>(),
                                                   py::reinterpret_borrow<py::object>(t[1]),
                                                   t[2].cast<long long>(),
                                                   t[3].cast<double>(),
                                                   t[4].cast<long long>(),
                                                   t[5].cast<long long>()));
    }
    py::gil_scoped_release nogil;
    monitor_ = std::make_unique<hd::ReferenceMonitor>(model_, std::move(options));
  }

  PyDecision evaluate(const std::string& action, const ck::ParamMap& params) const {
    py::gil_scoped_release nogil;
    return {monitor_->evaluate(action, params), model_};
  }

  py::tuple execute(const std::string& action, const ck::ParamMap& params) {
    hd::MonitorOutcome o = [&] {
      py::gil_scoped_release nogil;
      return monitor_->execute(action, params);
    }();
    py::list drift = drift_list(o.drift);
    return py::make_tuple(
        PyOutcome{std::move(o.outcome), model_}, attestation_list(o.attestations), drift);
  }

  py::dict check_goal() {
    const hd::GoalCheck g = [&] {
      py::gil_scoped_release nogil;
      return monitor_->check_goal();
    }();
    return py::dict("reached"_a = g.reached,
                    "attested"_a = g.attested,
                    "success"_a = g.success(),
                    "attestations"_a = attestation_list(g.attestations));
  }

  [[nodiscard]] bool halted() const { return monitor_->halted(); }

  py::list reconcile() {
    const std::vector<hd::Drift> found = [&] {
      py::gil_scoped_release nogil;
      return monitor_->reconcile();
    }();
    return drift_list(found);
  }

  py::list drift() const { return drift_list(monitor_->drift()); }

  py::list downward_flows() const {
    py::list out;
    for (const ck::InformationFlow& f : monitor_->downward_flows())
      out.append(flow_dict(*model_, f));
    return out;
  }

  ck::State state() const {
    py::gil_scoped_release nogil;
    return monitor_->kernel().state();
  }
  std::uint64_t steps() const {
    py::gil_scoped_release nogil;
    return monitor_->kernel().steps();
  }
  std::vector<std::string> trace_lines() const {
    py::gil_scoped_release nogil;
    std::vector<std::string> lines;
    for (const ck::TraceEntry& e : monitor_->kernel().trace()) lines.push_back(e.to_json_line());
    return lines;
  }

 private:
  static py::list drift_list(const std::vector<hd::Drift>& drift) {
    py::list out;
    for (const hd::Drift& d : drift)
      out.append(py::dict("variable"_a = d.variable,
                          "model"_a = from_value(d.model),
                          "world"_a = d.world ? from_value(*d.world) : py::object(py::none()),
                          "detail"_a = d.detail));
    return out;
  }

  std::shared_ptr<const ck::TaskModel> model_;
  std::unique_ptr<hd::ReferenceMonitor> monitor_;
};

// Runs `f`, turning the library's errors into the package's exceptions.
template <typename F>
auto translated(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    rethrow_as_python(e, "");
  }
}

}  // namespace

void bind_hardening(py::module_& m) {
  hd::install_pattern_engine();

  py::class_<PyAttestor>(m, "_Attestor")
      .def_property_readonly("name", [](const PyAttestor& a) { return a.impl->name(); })
      .def(
          "attest",
          [](const PyAttestor& a, py::handle state, const std::string& action) {
            std::optional<ck::State> s;
            if (!state.is_none()) s = state.cast<ck::State>();
            hd::Attestation r;
            {
              py::gil_scoped_release nogil;
              const hd::AttestationContext ctx{nullptr, s ? &*s : nullptr, action};
              r = hd::run_attestor(*a.impl, ctx);
            }
            return attestation_dict(r);
          },
          "state"_a = py::none(),
          "action"_a = "");
  m.def(
      "_predicate_attestor",
      [](const std::string& name, py::object fn) {
        return translated([&] { return predicate_attestor(name, std::move(fn)); });
      },
      "name"_a,
      "fn"_a);
  m.def(
      "_subprocess_attestor",
      [](const std::string& name,
         const std::vector<std::string>& argv,
         const std::vector<std::string>& allowed_programs,
         unsigned timeout_ms,
         std::size_t max_output_bytes,
         py::handle environment,
         const std::string& working_dir) {
        return translated([&] {
          return subprocess_attestor(
              name, argv, allowed_programs, timeout_ms, max_output_bytes, environment, working_dir);
        });
      },
      "name"_a,
      "argv"_a,
      "allowed_programs"_a,
      "timeout_ms"_a,
      "max_output_bytes"_a,
      "environment"_a,
      "working_dir"_a = "");
  m.def(
      "_multi_attestor",
      [](const std::string& name, const std::vector<PyAttestor>& dimensions, std::size_t quorum) {
        return translated([&] { return multi_attestor(name, dimensions, quorum); });
      },
      "name"_a,
      "dimensions"_a,
      "quorum"_a);

  // Every flow of labelled data in the model's actions (or only the downward ones): the exact
  // data flow the reference monitor's information-flow gate decides on.
  m.def(
      "_information_flows",
      [](const Model& model, bool downward_only) {
        std::vector<ck::InformationFlow> flows;
        {
          py::gil_scoped_release nogil;
          flows = ck::information_flows(*model.model, downward_only);
        }
        py::list out;
        for (const ck::InformationFlow& f : flows) out.append(flow_dict(*model.model, f));
        return out;
      },
      "model"_a,
      "downward_only"_a = false);

  py::class_<PyMonitor>(m, "_Monitor")
      .def(py::init([](const Model& model,
                       const std::map<std::string, PyAttestor>& attestors,
                       const std::vector<std::string>& allowed_programs,
                       unsigned timeout_ms,
                       std::size_t max_output_bytes,
                       bool enforce_information_flow,
                       bool record_rejections,
                       const py::list& probes,
                       const py::list& readiness) {
             return translated([&] {
               return std::make_unique<PyMonitor>(model,
                                                  attestors,
                                                  allowed_programs,
                                                  timeout_ms,
                                                  max_output_bytes,
                                                  enforce_information_flow,
                                                  record_rejections,
                                                  probes,
                                                  readiness);
             });
           }),
           "model"_a,
           "attestors"_a,
           "allowed_programs"_a,
           "timeout_ms"_a,
           "max_output_bytes"_a,
           "enforce_information_flow"_a,
           "record_rejections"_a,
           "probes"_a = py::list(),
           "readiness"_a = py::list())
      .def(
          "evaluate",
          [](const PyMonitor& mon, const std::string& action, py::handle params) {
            return mon.evaluate(action, to_params(params));
          },
          "action"_a,
          "params"_a = py::none())
      .def(
          "_execute",
          [](PyMonitor& mon, const std::string& action, py::handle params) {
            const ck::ParamMap p = to_params(params);
            return translated([&] { return mon.execute(action, p); });
          },
          "action"_a,
          "params"_a = py::none())
      .def("_check_goal", &PyMonitor::check_goal)
      .def_property_readonly("halted", &PyMonitor::halted)
      .def("_reconcile", &PyMonitor::reconcile)
      .def_property_readonly("_drift", &PyMonitor::drift)
      .def_property_readonly("_downward_flows", &PyMonitor::downward_flows)
      .def_property_readonly("state", &PyMonitor::state)
      .def_property_readonly("step_count", &PyMonitor::steps)
      .def("_trace_lines", &PyMonitor::trace_lines);
}

}  // namespace clampai::python
