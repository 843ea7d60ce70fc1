// The HTTP adapters: the Anthropic Messages API and the OpenAI Chat Completions API (which also
// serves local OpenAI-compatible servers), on libcurl.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "clampai/agent/llm.hpp"

namespace clampai::agent {

enum class Vendor { anthropic, openai };

struct HttpLlmOptions {
  Vendor vendor = Vendor::anthropic;
  std::string model;  ///< empty: the vendor's default model
  std::string
      base_url;  ///< empty: the vendor's public endpoint (anthropic: without /v1; openai: with /v1)
  std::string api_key;  ///< never logged
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{120'000};
  int max_retries = 3;  ///< on 429 and 5xx, exponential backoff with jitter, honouring retry-after
  std::chrono::milliseconds initial_backoff{500};
  std::size_t max_body_bytes = 8u << 20;            ///< a larger answer is `unparsable`
  std::optional<std::filesystem::path> transcript;  ///< JSON Lines of every prompt and answer
};

/// An adapter for `options.vendor`. Throws std::invalid_argument on a bad option (an empty key,
/// a base URL that is not http(s)).
std::unique_ptr<LlmClient> make_http_llm(const HttpLlmOptions& options);

}  // namespace clampai::agent
