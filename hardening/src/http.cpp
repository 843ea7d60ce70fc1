// The HTTP attestor on libcurl: one request, no redirects, no proxy, bounded time and size.
#include "clampai/hardening/http.hpp"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "clampai/kernel/error.hpp"

namespace clampai::hardening {
namespace {

using clampai::InvalidArgument;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string* body;
  std::size_t cap;
  bool overflow = false;
};

std::size_t on_data(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::size_t len = size * n;
  if (sink->body->size() + len > sink->cap) {
    sink->overflow = true;
    return 0;  // aborts the transfer
  }
  sink->body->append(data, len);
  return len;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The URL with each `{name}` replaced by its percent-encoded value.
std::string substitute_url(CURL* curl, const std::string& url, const AttestationContext& context) {
  // Substitute each placeholder separately so that only values are encoded.
  std::string out;
  std::size_t i = 0;
  while (i < url.size()) {
    const std::size_t open = url.find('{', i);
    if (open == std::string::npos || (open + 1 < url.size() && url[open + 1] == '{')) {
      const std::size_t stop = open == std::string::npos ? url.size() : open + 2;
      out += substitute_state(url.substr(i, stop - i), context);
      i = stop;
      continue;
    }
    out += substitute_state(url.substr(i, open - i), context);
    const std::size_t close = url.find('}', open);
    if (close == std::string::npos) throw InvalidArgument("`" + url + "`: unclosed `{`");
    const std::string value = substitute_state(url.substr(open, close - open + 1), context);
    char* escaped = curl_easy_escape(curl, value.c_str(), static_cast<int>(value.size()));
    if (escaped == nullptr) throw InvalidArgument("cannot encode a value for `" + url + "`");
    out += escaped;
    curl_free(escaped);
    i = close + 1;
  }
  return out;
}

}  // namespace

HttpAnswer perform_http(const HttpCheck& check, const AttestationContext& context) {
  global_init();
  HttpAnswer answer;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    answer.error = "libcurl could not start a request";
    return answer;
  }
  std::string url;
  std::string body;
  try {
    url = substitute_url(curl.get(), check.url, context);
    body = substitute_state(check.body, context);
  } catch (const clampai::Error& e) {
    answer.error = e.what();
    return answer;
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  for (const auto& [name, value] : check.headers) {
    const std::string line = name + ": " + value;
    headers.reset(curl_slist_append(headers.release(), line.c_str()));
  }
  Sink sink{&answer.body, check.max_response_bytes};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(check.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  if (check.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (check.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  if (sink.overflow) {
    answer.error = "the answer exceeded " + std::to_string(check.max_response_bytes) + " bytes";
  } else if (rc != CURLE_OK) {
    answer.error = std::string("request to `") + check.url + "` failed: " + curl_easy_strerror(rc);
  }
  return answer;
}

HttpAttestor::HttpAttestor(std::string name, HttpCheck check)
    : name_(std::move(name)), check_(std::move(check)) {
  if (name_.empty()) throw InvalidArgument("http attestor: empty name");
  if (!starts_with(check_.url, "http://") && !starts_with(check_.url, "https://"))
    throw InvalidArgument("attestor `" + name_ + "`: url `" + check_.url +
                          "` is not http:// or https://");
  if (check_.method != "GET" && check_.method != "HEAD" && check_.method != "POST")
    throw InvalidArgument("attestor `" + name_ + "`: method `" + check_.method +
                          "` (expected GET, HEAD or POST)");
  for (const auto& [h, v] : check_.headers) {
    if (h.empty() || h.find_first_of(":\r\n") != std::string::npos ||
        v.find_first_of("\r\n") != std::string::npos)
      throw InvalidArgument("attestor `" + name_ + "`: invalid header `" + h + "`");
  }
}

Attestation HttpAttestor::attest(const AttestationContext& context) const {
  Attestation a;
  a.attestor = name_;
  HttpAnswer r = perform_http(check_, context);
  a.evidence = "HTTP " + std::to_string(r.status);
  if (!r.error.empty()) {
    a.error = std::move(r.error);
    return a;
  }
  a.passed = r.status == check_.expect_status;
  if (!a.passed) a.evidence += " (expected " + std::to_string(check_.expect_status) + ")";
  if (a.passed && check_.expect_body_contains &&
      r.body.find(*check_.expect_body_contains) == std::string::npos) {
    a.passed = false;
    a.evidence += ": the answer lacks `" + *check_.expect_body_contains + "`";
  }
  return a;
}

}  // namespace clampai::hardening
