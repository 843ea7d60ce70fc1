// Reading the LLM's answer: a tool call, or JSON in its text ({"action": ID, "params": {...}}
// or {"stop": true}), robust to whatever the model or an attacker puts around it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clampai/agent/llm.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::agent {

/// Why the orchestrator could not use an LLM answer: the LlmErrorKind values (the call
/// failed), then what was wrong with an answer that did arrive. Every one is counted and ends in
/// a fallback to the highest-value ready action.
enum class FailureKind : std::uint8_t {
  timeout,            ///< LlmErrorKind::timeout
  http,               ///< LlmErrorKind::http
  auth,               ///< LlmErrorKind::auth
  unparsable,         ///< LlmErrorKind::unparsable: the API's body was not what it should be
  unknown_action,     ///< the answer names an action that is not offered now
  bad_params,         ///< parameters that are not an object of numbers within their bounds
  unparsable_answer,  ///< no usable JSON in the answer's text, or several conflicting ones
  other,              ///< the client threw something that is not an LlmError
};
inline constexpr std::size_t kFailureKinds = 8;
/// `timeout`, `http`, `auth`, `unparsable`, `unknown_action`, `bad_params`,
/// `unparsable_answer`, `other`.
std::string_view to_string(FailureKind kind) noexcept;
/// The failure kind of an LLM error.
FailureKind failure_of(LlmErrorKind kind) noexcept;

/// What the LLM chose: an action with named parameters (not yet checked against the model), or
/// to stop.
struct Answer {
  bool stop = false;
  std::string action{};
  kernel::ParamMap params{};
  bool from_tool_call = false;
};

/// An answer, or why there is none.
struct ParsedAnswer {
  std::optional<Answer> answer{};
  FailureKind failure = FailureKind::unparsable_answer;  ///< when `answer` is empty
  std::string error{};                                   ///< for people, when `answer` is empty
};

/// Reads `response`: its tool call when there is one (the name is the action id, the arguments
/// its parameters), else the JSON in its text. In the text, NUL and other control bytes,
/// zero-width and bidirectional-override characters are removed first; every JSON object in it
/// is read (code fences and prose around them are ignored; at most 64 objects of 64 KiB each,
/// nesting at most 16 deep, from the first 256 places where one may start); the objects that have
/// `action` or `stop` must all say the same thing, otherwise the answer is refused as ambiguous (an
/// injected second choice cannot win). Parameter values are numbers or decimal strings, read
/// exactly. Never throws.
ParsedAnswer parse_answer(const LlmResponse& response);

/// `text` without NUL and other control bytes (tab, newline and carriage return stay) and
/// without zero-width (U+200B-U+200D, U+2060, U+FEFF) and bidirectional control (U+202A-U+202E,
/// U+2066-U+2069) characters.
std::string strip_invisible(std::string_view text);

}  // namespace clampai::agent
