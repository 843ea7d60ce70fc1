// An attestor that asks an HTTP(S) endpoint (libcurl): passes iff the answer has the expected
// status (and, if given, contains the expected text).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clampai/hardening/attestor.hpp"

namespace clampai::hardening {

/// One HTTP request. `url` and `body` may refer to state variables as `{name}`
/// (`substitute_state`; in the URL the value is percent-encoded).
struct HttpCheck {
  std::string url{};
  std::string method = "GET";  // GET, HEAD or POST
  std::string body{};          // POST only
  std::vector<std::pair<std::string, std::string>> headers{};
  long expect_status = 200;
  std::optional<std::string> expect_body_contains{};
  std::chrono::milliseconds timeout{5000};
  std::size_t max_response_bytes = 64 * 1024;  // a longer answer fails the check
};

/// The answer to an HttpCheck.
struct HttpAnswer {
  long status = 0;
  std::string body{};   // at most `max_response_bytes`
  std::string error{};  // transport failure, timeout, too long an answer; empty if answered
};

/// Performs `check` once (no redirects followed; http and https only; no proxy from the
/// environment). Never throws.
HttpAnswer perform_http(const HttpCheck& check, const AttestationContext& context);

/// The attestor. Level: empirical (docs/HARDENING.md): it trusts the endpoint's answer.
class HttpAttestor final : public Attestor {
 public:
  /// @throws clampai::InvalidArgument if `name` is empty, the URL is not http(s), the method
  /// is not GET, HEAD or POST, or a header name is empty or holds `:` or a line break.
  HttpAttestor(std::string name, HttpCheck check);
  [[nodiscard]] const std::string& name() const override { return name_; }
  [[nodiscard]] Attestation attest(const AttestationContext& context) const override;

 private:
  std::string name_;
  HttpCheck check_;
};

}  // namespace clampai::hardening
