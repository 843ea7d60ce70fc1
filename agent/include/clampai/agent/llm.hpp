// The LLM interface of the agent loop: one request (a prompt and the offered actions as tools),
// one answer (a tool call, or text to parse). Adapters: the scriptable mock (mock.hpp) and the
// HTTP adapters for the Anthropic Messages and OpenAI Chat Completions APIs (http.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace clampai::agent {

/// One offered action, as a tool: its id, a description, and a JSON Schema of its parameters
/// (JSON text, an object).
struct ToolSpec {
  std::string name;
  std::string description;
  std::string input_schema = "{}";
};

/// What the orchestrator asks the LLM.
struct LlmRequest {
  std::string system;           ///< standing instructions
  std::string prompt;           ///< this step's situation: state, offered actions, last outcome
  std::vector<ToolSpec> tools;  ///< the offered actions (the LLM answers with a call to one)
  std::int64_t max_tokens = 1024;
  /// The sampling temperature, sent as `temperature`; empty: not sent (the API's default).
  std::optional<double> temperature;
  /// true: the model must call one of `tools` (anthropic tool_choice `any`, openai `required`);
  /// false: it may answer in text instead (`auto`), e.g. to stop.
  bool require_tool_call = false;
};

/// The action the LLM chose, as the API's tool call (or parsed from plain JSON text).
struct ToolCall {
  std::string name;
  /// The call's arguments as JSON text, as the API sent them (an object, unless the LLM erred).
  std::string arguments = "{}";
};

struct TokenUsage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
};

/// The LLM's answer. `tool_call` is empty when the model answered in text only; the orchestrator
/// then parses `text` as JSON ({"action": ID, "params": {...}} or {"stop": true}).
struct LlmResponse {
  std::optional<ToolCall> tool_call;
  std::string text;
  TokenUsage usage;
};

/// Why an LLM call failed. The orchestrator counts failures by kind and falls back.
enum class LlmErrorKind {
  timeout,     ///< connect or total timeout
  http,        ///< a transport error or an HTTP status that is not a success, after retries
  auth,        ///< 401/403: the key is missing or refused (not retried)
  unparsable,  ///< the body is not the API's JSON (truncated, malformed, too large)
};

std::string_view to_string(LlmErrorKind kind) noexcept;

class LlmError : public std::runtime_error {
 public:
  LlmError(LlmErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] LlmErrorKind kind() const noexcept { return kind_; }

 private:
  LlmErrorKind kind_;
};

/// An LLM. `complete` either returns an answer or throws LlmError; it never returns a partial one.
/// Implementations need not be thread-safe: one orchestrator calls one client at a time.
class LlmClient {
 public:
  virtual ~LlmClient() = default;
  [[nodiscard]] virtual LlmResponse complete(const LlmRequest& request) = 0;
  /// "mock", "anthropic" or "openai".
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
};

}  // namespace clampai::agent
