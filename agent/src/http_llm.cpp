// The HTTP LLM client: builds each vendor's request, retries what is worth retrying (408, 429,
// 5xx, a lost connection) with capped exponential backoff and jitter or the server's retry-after,
// classifies every failure into an LlmError kind, and writes one transcript line per attempt.
// The key lives only in the request headers: every message and transcript line is scrubbed of it.
#include <fcntl.h>

#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <stdexcept>
#include <thread>

#include "clampai/agent/http.hpp"
#include "clampai/agent/transcript.hpp"
#include "clampai/kernel/error.hpp"
#include "http_transport.hpp"
#include "http_vendors.hpp"

namespace clampai::agent {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kAnthropicVersion = "2023-06-01";
constexpr std::size_t kMaxApiMessage = 300;

std::string vendor_name(Vendor vendor) {
  return vendor == Vendor::anthropic ? "anthropic" : "openai";
}

std::string dump(const json& j) {
  // An answer may hold invalid UTF-8; a transcript line must still be written.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  if (what.empty()) return text;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

// One line, bounded, no control characters: an API's message goes into an exception text.
std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text.substr(0, limit)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? ' ' : c;
  }
  if (text.size() > limit) out += "...";
  return out;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", static_cast<int>(ms));
  return std::string(buf, n) + frac;
}

// Appends whole lines to a file opened once under the rule of every written file (file.hpp):
// created 0600 (prompts and answers may be private), appended to if it exists, never through a
// symbolic link, never a FIFO or a device but /dev/null; one write per line with O_APPEND.
class Transcript {
 public:
  explicit Transcript(const std::filesystem::path& path) : out_(open(path.string())) {}

  void append(std::string line) {
    line += '\n';
    out_.write(line);
  }

 private:
  static kernel::OutputFile open(const std::string& path) {
    try {
      return open_transcript(path);
    } catch (const FileError& e) {
      throw std::invalid_argument(e.what());
    }
  }

  kernel::OutputFile out_;
};

// What one attempt came to.
struct Attempt {
  std::optional<LlmResponse> response;
  LlmErrorKind kind = LlmErrorKind::http;
  std::string message;
  bool retryable = false;
  std::optional<json> answer;  // the parsed body, for the transcript
};

bool retryable_status(long status) { return status == 408 || status == 429 || status >= 500; }

class HttpLlm final : public LlmClient {
 public:
  explicit HttpLlm(HttpLlmOptions options) : options_(std::move(options)) {
    if (options_.model.empty()) options_.model = default_model(options_.vendor);
    if (options_.base_url.empty()) options_.base_url = default_base_url(options_.vendor);
    while (!options_.base_url.empty() && options_.base_url.back() == '/')
      options_.base_url.pop_back();
    if (options_.vendor == Vendor::anthropic) {
      url_ = options_.base_url + "/v1/messages";
      headers_ = {"x-api-key: " + options_.api_key,
                  std::string("anthropic-version: ") + kAnthropicVersion,
                  "content-type: application/json"};
    } else {
      url_ = options_.base_url + "/chat/completions";
      headers_ = {"Authorization: Bearer " + options_.api_key, "Content-Type: application/json"};
      max_tokens_field_ = detail::openai_max_tokens_field(options_.base_url);
    }
    if (options_.transcript) transcript_.emplace(*options_.transcript);
    rng_.seed(options_.jitter_seed ? *options_.jitter_seed : std::random_device{}());
  }

  [[nodiscard]] std::string_view name() const noexcept override {
    return options_.vendor == Vendor::anthropic ? "anthropic" : "openai";
  }

  LlmResponse complete(const LlmRequest& request) override {
    if (request.max_tokens <= 0)
      throw std::invalid_argument("max_tokens must be positive, not " +
                                  std::to_string(request.max_tokens));
    if (request.temperature && !(*request.temperature >= 0 && *request.temperature <= 2))
      throw std::invalid_argument("temperature must be from 0 to 2, not " +
                                  std::to_string(*request.temperature));

    const auto names = detail::make_tool_names(request.tools);
    const json body = options_.vendor == Vendor::anthropic
                          ? detail::anthropic_body(request, options_.model, names)
                          : detail::openai_body(request, options_.model, names, max_tokens_field_);
    const std::string wire = dump(body);
    const detail::PostLimits limits{
        options_.connect_timeout, options_.total_timeout, options_.max_body_bytes};
    const int attempts = 1 + options_.max_retries;
    for (int attempt = 1;; ++attempt) {
      const auto start = std::chrono::steady_clock::now();
      const detail::PostResult result = session_.post(url_, headers_, wire, limits);
      const auto latency =
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
      Attempt outcome = evaluate(result, names);
      outcome.message = redact(outcome.message);
      std::optional<milliseconds> wait;
      if (!outcome.response && outcome.retryable && attempt < attempts)
        wait = backoff(attempt, result.retry_after);
      record(attempt, body, result, outcome, latency, wait);
      if (outcome.response) return std::move(*outcome.response);
      if (!wait) {
        std::string message = outcome.message;
        if (outcome.retryable && attempts > 1)
          message += " (after " + std::to_string(attempts) + " attempts)";
        throw LlmError(outcome.kind, message);
      }
      if (options_.sleep)
        options_.sleep(*wait);
      else
        std::this_thread::sleep_for(*wait);
    }
  }

 private:
  std::string prefix() const { return vendor_name(options_.vendor) + ": POST " + url_ + ": "; }

  std::string redact(std::string text) const {
    return replace_all(std::move(text), options_.api_key, "[redacted]");
  }

  Attempt evaluate(const detail::PostResult& result, const detail::ToolNames& names) const {
    using detail::TransportFailure;
    Attempt a;
    switch (result.failure) {
      case TransportFailure::none:
        break;
      case TransportFailure::timeout:
        a.kind = LlmErrorKind::timeout;
        a.message = prefix() + (result.connected
                                    ? "no complete answer within the total timeout of " +
                                          std::to_string(options_.total_timeout.count()) + " ms"
                                    : "no connection within the connect timeout of " +
                                          std::to_string(options_.connect_timeout.count()) + " ms");
        return a;
      case TransportFailure::connect:
        a.message = prefix() + "no answer: " + result.error;
        a.retryable = true;
        return a;
      case TransportFailure::too_large:
        a.kind = LlmErrorKind::unparsable;
        a.message = prefix() + "the answer exceeds the body cap of " +
                    std::to_string(options_.max_body_bytes) + " bytes";
        return a;
      case TransportFailure::truncated:
        a.kind = LlmErrorKind::unparsable;
        a.message = prefix() + "the answer is truncated: " + result.error;
        return a;
      case TransportFailure::other:
        a.message = prefix() + result.error;
        return a;
    }
    bool too_deep = false;
    json answer = detail::parse_answer(result.body, too_deep);
    if (!answer.is_discarded()) a.answer = answer;
    const std::string status = "HTTP " + std::to_string(result.status);
    if (result.status < 200 || result.status > 299) {
      std::string detail = a.answer ? detail::api_error_message(answer) : std::string();
      if (detail.empty()) detail = result.body;
      detail = printable(detail, kMaxApiMessage);
      a.message = prefix() + status + (detail.empty() ? "" : ": " + detail);
      if (result.status == 401 || result.status == 403) {
        a.kind = LlmErrorKind::auth;
        a.message += " (the key is missing or refused)";
      } else {
        a.retryable = retryable_status(result.status);
      }
      return a;
    }
    a.kind = LlmErrorKind::unparsable;
    if (too_deep) {
      a.message = prefix() + status + " but the answer nests deeper than " +
                  std::to_string(detail::kMaxAnswerDepth) + " levels";
      return a;
    }
    if (!a.answer) {
      a.message = prefix() + status + " but the answer is not JSON: " + printable(result.body, 80);
      return a;
    }
    try {
      a.response = options_.vendor == Vendor::anthropic ? detail::parse_anthropic(answer, names)
                                                        : detail::parse_openai(answer, names);
    } catch (const LlmError& e) {
      a.message = prefix() + status + " but " + e.what();
    }
    return a;
  }

  milliseconds backoff(int attempt, std::optional<milliseconds> retry_after) {
    if (retry_after) return std::clamp(*retry_after, milliseconds(0), options_.max_retry_after);
    milliseconds base = options_.initial_backoff;
    for (int i = 1; i < attempt && base < options_.max_backoff; ++i) base *= 2;
    base = std::min(base, options_.max_backoff);
    // Half fixed, half random: retries of many clients spread out, none waits less than half.
    const auto half = base.count() / 2;
    std::uniform_int_distribution<std::int64_t> jitter(0, base.count() - half);
    return milliseconds(half + jitter(rng_));
  }

  void record(int attempt,
              const json& request,
              const detail::PostResult& result,
              const Attempt& outcome,
              milliseconds latency,
              std::optional<milliseconds> wait) {
    if (!transcript_) return;
    json line{{"time", utc_now()},
              {"vendor", vendor_name(options_.vendor)},
              {"model", options_.model},
              {"url", url_},
              {"attempt", attempt},
              {"request", request},
              {"latency_ms", latency.count()}};
    if (result.status != 0) line["status"] = result.status;
    if (outcome.answer)
      line["response"] = *outcome.answer;
    else if (!result.body.empty())
      line["response_text"] = result.body;
    if (outcome.response) {
      line["usage"] = json{{"input_tokens", outcome.response->usage.input_tokens},
                           {"output_tokens", outcome.response->usage.output_tokens}};
    } else {
      line["error"] = json{{"kind", to_string(outcome.kind)}, {"message", outcome.message}};
      if (wait) line["retry_in_ms"] = wait->count();
    }
    transcript_->append(redact(dump(line)));
  }

  HttpLlmOptions options_;
  std::string url_;
  std::vector<std::string> headers_;  // hold the key: never logged
  std::string max_tokens_field_;
  detail::HttpSession session_;
  std::optional<Transcript> transcript_;
  std::mt19937_64 rng_;
};

void check_options(const HttpLlmOptions& o) {
  if (o.vendor != Vendor::anthropic && o.vendor != Vendor::openai)
    throw std::invalid_argument("vendor: unknown");
  if (o.api_key.empty())
    throw std::invalid_argument("api key: empty (" + vendor_name(o.vendor) + ")");
  for (const char c : o.api_key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '"' || c == '\\')
      throw std::invalid_argument(
          "api key: contains a space, a quote, a backslash or a control character");
  }
  if (!o.base_url.empty()) {
    const std::string& url = o.base_url;
    const bool http = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
    const auto host_at = url.find("://") + 3;
    const bool clean = std::none_of(url.begin(), url.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u <= 0x20 || u == 0x7f;
    });
    if (!http || host_at >= url.size() || url[host_at] == '/' || !clean)
      throw std::invalid_argument("base URL `" + printable(url, 200) +
                                  "`: not an http:// or https:// URL with a host");
  }
  if (o.connect_timeout.count() <= 0)
    throw std::invalid_argument("connect timeout: must be positive");
  if (o.total_timeout.count() <= 0) throw std::invalid_argument("total timeout: must be positive");
  if (o.max_retries < 0 || o.max_retries > 10)
    throw std::invalid_argument("max retries: " + std::to_string(o.max_retries) +
                                " is outside 0..10");
  if (o.initial_backoff.count() < 0 || o.max_backoff.count() < 0 || o.max_retry_after.count() < 0)
    throw std::invalid_argument("backoff: a negative duration");
  if (o.max_body_bytes == 0) throw std::invalid_argument("max body bytes: must be positive");
}

}  // namespace

std::string default_model(Vendor vendor) {
  return vendor == Vendor::anthropic ? "claude-sonnet-4-5" : "gpt-4o-mini";
}

std::string default_base_url(Vendor vendor) {
  return vendor == Vendor::anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

std::unique_ptr<LlmClient> make_http_llm(const HttpLlmOptions& options) {
  check_options(options);

  return std::make_unique<HttpLlm>(options);
}

}  // namespace clampai::agent
