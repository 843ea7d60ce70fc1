// Reading the LLM's answer. Whatever arrives, the result is an answer or a counted failure:
// nothing here throws, and the kernel still decides whatever is chosen.
#include "clampai/agent/answer.hpp"

#include <nlohmann/json.hpp>

#include <exception>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/json.hpp"

namespace clampai::agent {

namespace jsonio = kernel::jsonio;

std::string_view to_string(FailureKind kind) noexcept {
  switch (kind) {
    case FailureKind::timeout:
      return "timeout";
    case FailureKind::http:
      return "http";
    case FailureKind::auth:
      return "auth";
    case FailureKind::unparsable:
      return "unparsable";
    case FailureKind::unknown_action:
      return "unknown_action";
    case FailureKind::bad_params:
      return "bad_params";
    case FailureKind::unparsable_answer:
      return "unparsable_answer";
    case FailureKind::other:
      return "other";
  }
  return "other";
}

FailureKind failure_of(LlmErrorKind kind) noexcept {
  switch (kind) {
    case LlmErrorKind::timeout:
      return FailureKind::timeout;
    case LlmErrorKind::http:
      return FailureKind::http;
    case LlmErrorKind::auth:
      return FailureKind::auth;
    case LlmErrorKind::unparsable:
      return FailureKind::unparsable;
  }
  return FailureKind::other;
}

std::string strip_invisible(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') continue;
    if (c == 0x7f) continue;
    if (c == 0xE2 && i + 2 < text.size()) {
      const auto b1 = static_cast<unsigned char>(text[i + 1]);
      const auto b2 = static_cast<unsigned char>(text[i + 2]);
      const bool zero_width = b1 == 0x80 && (b2 >= 0x8B && b2 <= 0x8D);
      const bool bidi = b1 == 0x80 && (b2 >= 0xAA && b2 <= 0xAE);
      const bool joiner = b1 == 0x81 && (b2 == 0xA0 || (b2 >= 0xA6 && b2 <= 0xA9));
      if (zero_width || bidi || joiner) {
        i += 2;
        continue;
      }
    }
    if (c == 0xEF && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xBB &&
        static_cast<unsigned char>(text[i + 2]) == 0xBF) {
      i += 2;
      continue;
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

namespace {

constexpr std::size_t kMaxText = 1u << 20;
constexpr std::size_t kMaxObject = 64u * 1024;
constexpr std::size_t kMaxObjects = 64;
// Places where an object may start that are tried: bounds the work on text full of braces.
constexpr std::size_t kMaxAttempts = 256;

ParsedAnswer failure(FailureKind kind, std::string message) {
  ParsedAnswer p;
  p.failure = kind;
  p.error = std::move(message);
  return p;
}

std::string shorten(std::string_view s) {
  std::string out(s.substr(0, 60));
  if (s.size() > 60) out += "...";
  return out;
}

// The end (one past the `}`) of the object that starts at `begin`, or npos when it is not
// closed within kMaxObject bytes.
std::size_t object_end(const std::string& text, std::size_t begin) {
  int depth = 0;
  bool in_string = false, escaped = false;
  const std::size_t limit = std::min(text.size(), begin + kMaxObject);
  for (std::size_t i = begin; i < limit; ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return c == '}' ? i + 1 : std::string::npos;
    }
  }
  return std::string::npos;
}

// A parameter value: a JSON number (its exact text) or a string holding a decimal.
bool param_value(const jsonio::JsonNode& n, kernel::Value& out) {
  if (n.kind != jsonio::JsonNode::Kind::number && n.kind != jsonio::JsonNode::Kind::string)
    return false;
  const auto d = kernel::Decimal::parse(n.text);
  if (!d) return false;
  out = kernel::Value::number(*d);
  return true;
}

// The answer an object states, or a failure (an object with neither `action` nor `stop` is
// not an answer: nullopt answer and failure unparsable_answer with an empty error).
ParsedAnswer read_object(const jsonio::JsonNode& obj) {
  ParsedAnswer p;
  const jsonio::JsonNode* stop = obj.find("stop");
  const jsonio::JsonNode* action = obj.find("action");
  if (stop != nullptr && stop->kind == jsonio::JsonNode::Kind::boolean && stop->boolean) {
    p.answer = Answer{true, {}, {}, false};
    return p;
  }
  if (action == nullptr) {
    if (stop != nullptr) return failure(FailureKind::unparsable_answer, "`stop` must be true");
    return p;
  }
  if (action->kind != jsonio::JsonNode::Kind::string)
    return failure(FailureKind::unparsable_answer,
                   "`action` must be a string, not " + jsonio::describe(*action));
  Answer a;
  a.action = action->text;
  const jsonio::JsonNode* params = obj.find("params");
  if (params == nullptr) params = obj.find("parameters");
  if (params != nullptr && params->kind != jsonio::JsonNode::Kind::null) {
    if (params->kind != jsonio::JsonNode::Kind::object)
      return failure(FailureKind::bad_params,
                     "`params` must be an object, not " + jsonio::describe(*params));
    for (const auto& [name, v] : params->members) {
      kernel::Value value;
      if (!param_value(v, value))
        return failure(FailureKind::bad_params,
                       "parameter `" + shorten(name) + "` is not an exact number (" +
                           jsonio::describe(v) + ")");
      a.params.emplace_back(name, value);
    }
  }
  p.answer = std::move(a);
  return p;
}

bool same(const Answer& a, const Answer& b) {
  if (a.stop != b.stop || a.action != b.action || a.params.size() != b.params.size()) return false;
  for (std::size_t i = 0; i < a.params.size(); ++i)
    if (a.params[i].first != b.params[i].first || !(a.params[i].second == b.params[i].second))
      return false;
  return true;
}

ParsedAnswer parse_text(std::string_view raw) {
  if (raw.size() > kMaxText)
    return failure(FailureKind::unparsable_answer,
                   "the answer is " + std::to_string(raw.size()) + " bytes long (at most " +
                       std::to_string(kMaxText) + " are read)");
  const std::string text = strip_invisible(raw);
  jsonio::JsonLimits limits;
  limits.max_bytes = kMaxObject;
  limits.max_depth = 16;
  limits.max_string = 4096;
  std::optional<Answer> chosen;
  std::optional<ParsedAnswer> first_failure;
  std::size_t objects = 0, attempts = 0;
  for (std::size_t at = text.find('{');
       at != std::string::npos && objects < kMaxObjects && attempts < kMaxAttempts;
       ++attempts) {
    const std::size_t end = object_end(text, at);
    if (end == std::string::npos) {
      at = text.find('{', at + 1);
      continue;
    }
    ++objects;
    ParsedAnswer p;
    try {
      p = read_object(
          jsonio::parse_json(std::string_view(text).substr(at, end - at), "answer", limits));
    } catch (const std::exception&) {
      at = text.find('{', at + 1);  // not JSON here: perhaps an object starts inside
      continue;
    }
    if (p.answer) {
      if (chosen && !same(*chosen, *p.answer)) {
        const auto name = [](const Answer& a) {
          return a.stop ? std::string("stop") : "`" + shorten(a.action) + "`";
        };
        return failure(FailureKind::unparsable_answer,
                       "ambiguous answer: it names " + name(*chosen) + " and " + name(*p.answer));
      }
      if (!chosen) chosen = std::move(p.answer);
    } else if (!p.error.empty() && !first_failure) {
      first_failure = std::move(p);
    }
    at = text.find('{', end);
  }
  if (chosen) {
    ParsedAnswer p;
    p.answer = std::move(chosen);
    return p;
  }
  if (first_failure) return *first_failure;
  return failure(FailureKind::unparsable_answer,
                 text.empty() ? "the answer is empty"
                              : "no JSON object with `action` or `stop` in the answer");
}

// nlohmann JSON (the adapters' tool-call arguments) to a parameter value.
bool param_value(const nlohmann::json& j, kernel::Value& out) {
  std::string text;
  if (j.is_number_integer() || j.is_number_unsigned() || j.is_number_float()) {
    text = j.dump();
  } else if (j.is_string()) {
    text = j.get<std::string>();
  } else {
    return false;
  }
  const auto d = kernel::Decimal::parse(text);
  if (!d) return false;
  out = kernel::Value::number(*d);
  return true;
}

ParsedAnswer parse_call(const ToolCall& call) {
  Answer a;
  a.from_tool_call = true;
  a.action = strip_invisible(call.name);
  nlohmann::json arguments;
  try {
    arguments = nlohmann::json::parse(call.arguments);
  } catch (const nlohmann::json::exception&) {
    return failure(FailureKind::bad_params, "the tool call's arguments are not JSON");
  }
  if (!arguments.is_null()) {
    if (!arguments.is_object())
      return failure(FailureKind::bad_params,
                     "the tool call's arguments are not an object (" +
                         std::string(arguments.type_name()) + ")");
    for (const auto& [name, v] : arguments.items()) {
      kernel::Value value;
      if (!param_value(v, value))
        return failure(FailureKind::bad_params,
                       "parameter `" + shorten(name) + "` is not an exact number (" +
                           std::string(v.type_name()) + ")");
      a.params.emplace_back(name, value);
    }
  }
  ParsedAnswer p;
  p.answer = std::move(a);
  return p;
}

}  // namespace

ParsedAnswer parse_answer(const LlmResponse& response) {
  try {
    if (response.tool_call) return parse_call(*response.tool_call);
    return parse_text(response.text);
  } catch (const std::exception& e) {  // out of memory, or a bug: still a counted failure
    return failure(FailureKind::unparsable_answer,
                   std::string("the answer could not be read: ") + e.what());
  }
}

}  // namespace clampai::agent
