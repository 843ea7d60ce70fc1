#include "clampai/agent/llm.hpp"

namespace clampai::agent {

std::string_view to_string(LlmErrorKind kind) noexcept {
  switch (kind) {
    case LlmErrorKind::timeout:
      return "timeout";
    case LlmErrorKind::http:
      return "http";
    case LlmErrorKind::auth:
      return "auth";
    case LlmErrorKind::unparsable:
      return "unparsable";
  }
  return "unknown";
}

}  // namespace clampai::agent
