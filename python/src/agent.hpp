// The agent loop for Python (agent.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::python {

namespace py = pybind11;

/// Runs clampai::agent::Orchestrator on `kernel` with `llm` (an object with the seed's
/// `complete(prompt, ...)`, or None for the mock) and `options` (max_steps, stuck_patience,
/// max_consecutive_failures), with the GIL released. Returns the result as a dict.
py::dict run_orchestrator(kernel::SafetyKernel& kernel, py::object llm, const py::dict& options);

/// `_HttpLlm`: the C++ HTTP adapters (Anthropic Messages, OpenAI Chat Completions) for
/// clampai.adapters' AnthropicAdapter and OpenAIAdapter. `complete` releases the GIL; an
/// LlmError becomes TimeoutError (timeout), PermissionError (auth), ConnectionError (http) or
/// ValueError (unparsable), naming the vendor.
void bind_http_llm(py::module_& m);

}  // namespace clampai::python
