// One HTTP POST on libcurl, with the adapters' timeouts, body cap and retry-after header; no
// knowledge of any LLM API. Private to the agent library.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace clampai::agent::detail {

/// How a POST ended below HTTP: `none` means a status and a complete body arrived.
enum class TransportFailure {
  none,
  timeout,    ///< the connect or the total timeout expired
  connect,    ///< no connection, or it dropped before any answer (worth a retry)
  too_large,  ///< the body exceeds the cap (no more than the cap was read)
  truncated,  ///< the connection ended before the announced body did
  other,      ///< anything else libcurl reports (TLS, a bad URL, ...)
};

struct PostResult {
  TransportFailure failure = TransportFailure::none;
  std::string error;       ///< libcurl's description when failure != none
  bool connected = false;  ///< whether a connection was made (a timeout before: the connect one)
  long status = 0;
  std::string body;
  /// The server's `retry-after-ms` or `retry-after` (in seconds; an HTTP date is ignored).
  std::optional<std::chrono::milliseconds> retry_after;
};

struct PostLimits {
  std::chrono::milliseconds connect_timeout;
  std::chrono::milliseconds total_timeout;
  std::size_t max_body_bytes;
};

/// A reusable libcurl handle (keeps connections alive between calls). Not thread-safe.
class HttpSession {
 public:
  HttpSession();
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  /// POSTs `body` to `url` with `headers` ("name: value"); never follows a redirect.
  [[nodiscard]] PostResult post(const std::string& url,
                                const std::vector<std::string>& headers,
                                const std::string& body,
                                const PostLimits& limits);

 private:
  void* curl_;  // CURL*, kept out of this header
};

/// Parses a `retry-after` value in seconds ("7", "1.5"); nullopt for an HTTP date or garbage.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after_seconds(
    std::string_view value);

}  // namespace clampai::agent::detail
