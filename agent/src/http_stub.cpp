// Placeholder until the HTTP adapters land: every vendor is refused with a clear error.
#include <stdexcept>

#include "clampai/agent/http.hpp"

namespace clampai::agent {

std::unique_ptr<LlmClient> make_http_llm(const HttpLlmOptions& /*options*/) {
  throw std::invalid_argument("the HTTP LLM adapters are not built into this version");
}

}  // namespace clampai::agent
