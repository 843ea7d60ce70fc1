// The agent loop (clampai::agent::Orchestrator) for Python: the seed's `llm=` protocol (any
// object with `complete(prompt, system_prompt="", temperature=0.3, max_tokens=2000) -> str`),
// or the C++ mock when none is given. The loop runs with the GIL released; the adapter (and any
// Python invariant or goal) takes it back for its call.
#include "agent.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "clampai/agent/http.hpp"
#include "clampai/agent/llm.hpp"
#include "clampai/agent/mock.hpp"
#include "clampai/agent/orchestrator.hpp"

namespace clampai::python {
namespace {

namespace ag = clampai::agent;
namespace ck = clampai::kernel;
using namespace pybind11::literals;

// A Python object with the seed's `complete(prompt, ...)`, as an LLM client. It answers in text;
// the orchestrator parses it (`{"action": ID, "params": {...}}` or `{"stop": true}`). A Python
// exception is an LLM failure (TimeoutError: timeout; PermissionError: auth; anything else:
// http), which the orchestrator counts and falls back from; a non-str answer is unparsable.
class PythonLlm final : public ag::LlmClient {
 public:
  explicit PythonLlm(py::object adapter) : adapter_(std::move(adapter)) {}
  ~PythonLlm() override {
    py::gil_scoped_acquire gil;
    adapter_ = py::object();
  }
  PythonLlm(const PythonLlm&) = delete;
  PythonLlm& operator=(const PythonLlm&) = delete;

  ag::LlmResponse complete(const ag::LlmRequest& request) override {
    py::gil_scoped_acquire gil;
    try {
      py::object answer = adapter_.attr("complete")(request.prompt,
                                                    "system_prompt"_a = request.system,
                                                    "temperature"_a = 0.3,
                                                    "max_tokens"_a = request.max_tokens);
      if (!PyUnicode_Check(answer.ptr()))
        throw ag::LlmError(
            ag::LlmErrorKind::unparsable,
            std::string("complete() returned ") + Py_TYPE(answer.ptr())->tp_name + ", not str");
      ag::LlmResponse response;
      response.text = answer.cast<std::string>();
      return response;
    } catch (py::error_already_set& e) {
      ag::LlmErrorKind kind = ag::LlmErrorKind::http;
      if (e.matches(PyExc_TimeoutError)) kind = ag::LlmErrorKind::timeout;
      if (e.matches(PyExc_PermissionError)) kind = ag::LlmErrorKind::auth;
      std::string text = py::str(e.type().attr("__name__")).cast<std::string>();
      const std::string detail = py::str(e.value()).cast<std::string>();
      if (!detail.empty()) text += ": " + detail;
      throw ag::LlmError(kind, text);
    }
  }
  [[nodiscard]] std::string_view name() const noexcept override { return "python"; }

 private:
  py::object adapter_;
};

// One HTTP adapter, shared by the Python threads that call it (the C++ client is not
// thread-safe: its calls are serialised here, with the GIL released while they wait).
class HttpLlm {
 public:
  HttpLlm(const std::string& vendor,
          const std::string& api_key,
          const std::string& model,
          const std::string& base_url,
          std::int64_t timeout_ms,
          int max_retries) {
    ag::HttpLlmOptions o;
    if (vendor == "anthropic")
      o.vendor = ag::Vendor::anthropic;
    else if (vendor == "openai")
      o.vendor = ag::Vendor::openai;
    else
      throw py::value_error("vendor must be `anthropic` or `openai`, not `" + vendor + "`");
    if (timeout_ms <= 0)
      throw py::value_error("timeout must be positive, not " + std::to_string(timeout_ms) + " ms");
    o.api_key = api_key;
    o.model = model;
    o.base_url = base_url;
    o.total_timeout = std::chrono::milliseconds(timeout_ms);
    o.connect_timeout = std::min(o.connect_timeout, o.total_timeout);
    o.max_retries = max_retries;
    client_ = ag::make_http_llm(o);  // std::invalid_argument (ValueError) on a bad option
  }

  std::string complete(const std::string& prompt,
                       const std::string& system,
                       std::int64_t max_tokens,
                       std::optional<double> temperature) {
    ag::LlmRequest request;
    request.prompt = prompt;
    request.system = system;
    request.max_tokens = max_tokens;
    request.temperature = temperature;
    std::string error;
    ag::LlmErrorKind kind = ag::LlmErrorKind::http;
    {
      py::gil_scoped_release nogil;
      const std::lock_guard<std::mutex> lock(mutex_);
      try {
        return client_->complete(request).text;
      } catch (const ag::LlmError& e) {
        kind = e.kind();
        error = std::string(client_->name()) + ": " + e.what();
      }
    }
    switch (kind) {
      case ag::LlmErrorKind::timeout:
        PyErr_SetString(PyExc_TimeoutError, error.c_str());
        break;
      case ag::LlmErrorKind::auth:
        PyErr_SetString(PyExc_PermissionError, error.c_str());
        break;
      case ag::LlmErrorKind::unparsable:
        PyErr_SetString(PyExc_ValueError, error.c_str());
        break;
      case ag::LlmErrorKind::http:
        PyErr_SetString(PyExc_ConnectionError, error.c_str());
        break;
    }
    throw py::error_already_set();
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<ag::LlmClient> client_;
};

}  // namespace

void bind_http_llm(py::module_& m) {
  py::class_<HttpLlm>(m, "_HttpLlm")
      .def(py::init<const std::string&,
                    const std::string&,
                    const std::string&,
                    const std::string&,
                    std::int64_t,
                    int>(),
           "vendor"_a,
           "api_key"_a,
           "model"_a,
           "base_url"_a,
           "timeout_ms"_a,
           "max_retries"_a)
      .def("complete", &HttpLlm::complete, "prompt"_a, "system"_a, "max_tokens"_a, "temperature"_a);
}

py::dict run_orchestrator(ck::SafetyKernel& kernel, py::object llm, const py::dict& options) {
  ag::OrchestratorOptions o;
  if (options.contains("max_steps") && !options["max_steps"].is_none())
    o.max_steps = options["max_steps"].cast<std::uint64_t>();
  if (options.contains("stuck_patience"))
    o.stuck_patience = options["stuck_patience"].cast<unsigned>();
  if (options.contains("max_consecutive_failures"))
    o.max_consecutive_failures = options["max_consecutive_failures"].cast<unsigned>();
  std::unique_ptr<ag::LlmClient> client;
  if (llm.is_none()) {
    client = std::make_unique<ag::MockLlm>();
  } else {
    if (!py::hasattr(llm, "complete"))
      throw py::type_error("llm must have a complete(prompt, ...) method");
    client = std::make_unique<PythonLlm>(std::move(llm));
  }
  ag::OrchestratorResult r;
  {
    py::gil_scoped_release nogil;
    ag::Orchestrator orchestrator(kernel, *client, o);
    r = orchestrator.run();
    client.reset();  // takes the GIL itself to drop the adapter
  }
  const ck::TaskModel& m = kernel.model();
  py::dict failures;
  for (std::size_t k = 0; k < ag::kFailureKinds; ++k)
    if (r.failures[k] > 0)
      failures[py::str(std::string(ag::to_string(static_cast<ag::FailureKind>(k))))] =
          r.failures[k];
  py::list log;
  for (const ag::StepRecord& s : r.log) {
    py::list reasons;
    for (const ck::Reason& reason : s.reasons)
      reasons.append(py::dict("code"_a = std::string(ck::to_string(reason.code)),
                              "subject"_a = reason.subject,
                              "message"_a = reason.message));
    log.append(py::dict(
        "index"_a = s.index,
        "source"_a = std::string(ag::to_string(s.source)),
        "failure"_a = s.failure ? py::object(py::str(std::string(ag::to_string(*s.failure))))
                                : py::object(py::none()),
        "failure_message"_a = s.failure_message,
        "action"_a = s.action,
        "params"_a = s.params,
        "approved"_a = s.approved,
        "reasons"_a = reasons,
        "repair"_a = s.repair,
        "cost"_a = m.format_amount(s.cost),
        "spent"_a = m.format_amount(s.spent),
        "progress"_a = s.progress));
  }
  return py::dict("termination"_a = std::string(ag::to_string(r.termination)),
                  "goal_reached"_a = r.goal_reached,
                  "message"_a = r.message,
                  "steps"_a = r.steps,
                  "executed"_a = r.executed,
                  "rejected"_a = r.rejected,
                  "llm_calls"_a = r.llm_calls,
                  "dominant_choices"_a = r.dominant_choices,
                  "fallbacks"_a = r.fallbacks,
                  "failures"_a = failures,
                  "rejections_by_reason"_a = r.rejections_by_reason,
                  "spent"_a = m.format_amount(r.spent),
                  "total"_a = m.format_amount(r.total),
                  "progress"_a = r.progress,
                  "log"_a = log);
}

}  // namespace clampai::python
