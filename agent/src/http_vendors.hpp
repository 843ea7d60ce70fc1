// The two APIs' wire shapes: the request body each one expects and how its answer maps onto an
// LlmResponse. Pure functions on nlohmann::json; private to the agent library.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "clampai/agent/llm.hpp"

namespace clampai::agent::detail {

/// Deeper JSON is refused before parsing: nlohmann parses any depth, but copies, compares and
/// prints recursively, so a hostile answer nested a million levels deep would overflow the stack.
inline constexpr std::size_t kMaxAnswerDepth = 256;

/// `text` parsed as JSON; a discarded value if it is not JSON or nests deeper than
/// kMaxAnswerDepth (then `too_deep` is set).
[[nodiscard]] nlohmann::json parse_answer(std::string_view text, bool& too_deep);

/// The names the tools get on the wire. Both APIs accept only 1 to 64 of [A-Za-z0-9_-], and a
/// spec's action id may be up to 128 characters: such a name travels as an alias that the
/// answer's tool call is mapped back from.
struct ToolNames {
  std::vector<std::string> wire;                   ///< one per tool, in order
  std::map<std::string, std::string> to_original;  ///< only the aliased ones
  [[nodiscard]] std::string original(const std::string& wire_name) const;
};

[[nodiscard]] ToolNames make_tool_names(const std::vector<ToolSpec>& tools);

/// The Messages API body: model, max_tokens, system, one user message, tools with input_schema,
/// tool_choice `any` (required) or `auto`.
[[nodiscard]] nlohmann::json anthropic_body(const LlmRequest& request,
                                            const std::string& model,
                                            const ToolNames& names);

/// The Chat Completions body: model, a system and a user message, function tools with
/// parameters, tool_choice `required` or `auto`, and the token limit under `max_tokens_field`.
[[nodiscard]] nlohmann::json openai_body(const LlmRequest& request,
                                         const std::string& model,
                                         const ToolNames& names,
                                         const std::string& max_tokens_field);

/// The Chat Completions field of the token limit: `max_completion_tokens` on api.openai.com
/// (which deprecated `max_tokens`; its reasoning models refuse it), `max_tokens` elsewhere (the
/// field every OpenAI-compatible server knows: llama.cpp, vLLM, Ollama).
[[nodiscard]] std::string openai_max_tokens_field(const std::string& base_url);

/// The first `tool_use` block (else the text blocks) and the usage of a Messages answer.
/// @throws LlmError(unparsable) naming the missing or ill-typed field.
[[nodiscard]] LlmResponse parse_anthropic(const nlohmann::json& answer, const ToolNames& names);

/// The first of `choices[0].message.tool_calls` (its `arguments` a JSON string) else the
/// message's content, and the usage of a Chat Completions answer.
/// @throws LlmError(unparsable) naming the missing or ill-typed field.
[[nodiscard]] LlmResponse parse_openai(const nlohmann::json& answer, const ToolNames& names);

/// `error.type: error.message` of either API's error body, or "" if it has none.
[[nodiscard]] std::string api_error_message(const nlohmann::json& answer);

}  // namespace clampai::agent::detail
