// The HTTP adapters: the Anthropic Messages API and the OpenAI Chat Completions API (which also
// serves local OpenAI-compatible servers), on libcurl.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "clampai/agent/llm.hpp"

namespace clampai::agent {

enum class Vendor { anthropic, openai };

struct HttpLlmOptions {
  Vendor vendor = Vendor::anthropic;
  std::string model;  ///< empty: the vendor's default model (default_model)
  std::string
      base_url;  ///< empty: the vendor's public endpoint (anthropic: without /v1; openai: with /v1)
  std::string api_key;  ///< never logged
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{120'000};  ///< per attempt
  int max_retries = 3;  ///< on 429 and 5xx, exponential backoff with jitter, honouring retry-after
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};      ///< cap of one computed backoff
  std::chrono::milliseconds max_retry_after{60'000};  ///< cap of a server's `retry-after`
  std::size_t max_body_bytes = 8u << 20;              ///< a larger answer is `unparsable`
  std::optional<std::filesystem::path> transcript;    ///< JSON Lines of every prompt and answer
  /// How the adapter waits between attempts; empty: std::this_thread::sleep_for. Tests record.
  std::function<void(std::chrono::milliseconds)> sleep;
  /// Seed of the backoff jitter; empty: std::random_device.
  std::optional<std::uint64_t> jitter_seed;
};

/// The vendor's default model: "claude-sonnet-4-5" (anthropic), "gpt-4o-mini" (openai).
[[nodiscard]] std::string default_model(Vendor vendor);

/// The vendor's public endpoint: "https://api.anthropic.com" (anthropic, without /v1),
/// "https://api.openai.com/v1" (openai, with /v1).
[[nodiscard]] std::string default_base_url(Vendor vendor);

/// An adapter for `options.vendor`. Anthropic: POST BASE/v1/messages with `x-api-key` and
/// `anthropic-version`; OpenAI: POST BASE/chat/completions with `Authorization: Bearer KEY`.
/// Each `complete` call makes at most 1 + max_retries attempts (retrying 408, 429, 5xx and failed
/// connections, never 401/403 nor a timeout), and appends one transcript line per attempt.
/// @throws std::invalid_argument on a bad option (an empty key or one with spaces, quotes or
/// control characters, a base URL that is not http(s), a non-positive timeout or body cap, a
/// retry count outside 0..10), naming the option; or if the transcript cannot be opened.
/// `complete` throws LlmError; std::invalid_argument if `request.max_tokens` is not positive;
/// std::runtime_error if a transcript line cannot be written. See docs/LLM.md.
std::unique_ptr<LlmClient> make_http_llm(const HttpLlmOptions& options);

}  // namespace clampai::agent
