// libcurl under the HTTP adapters: one POST with both timeouts, a hard body cap enforced while
// reading, and the retry-after headers; the retry policy itself lives in the client.
#include "http_transport.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>

namespace clampai::agent::detail {

namespace {

// curl_global_init is not thread-safe: run it once, before the first handle.
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw std::runtime_error("libcurl: global initialisation failed");
  });
}

struct BodySink {
  std::string* body;
  std::size_t cap;
  bool over = false;
};

// Stops the transfer at the first byte past the cap, so a huge answer never sits in memory.
std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& sink = *static_cast<BodySink*>(user);
  const std::size_t n = size * count;
  if (n > sink.cap - sink.body->size()) {
    sink.over = true;
    return 0;  // CURLE_WRITE_ERROR
  }
  sink.body->append(data, n);
  return n;
}

struct HeaderSink {
  std::optional<std::chrono::milliseconds> seconds;
  std::optional<std::chrono::milliseconds> millis;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& sink = *static_cast<HeaderSink*>(user);
  const std::size_t n = size * count;
  const std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (e.g. after 100 Continue): start over
    sink = HeaderSink{};
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  const auto name = trim(line.substr(0, colon));
  const auto value = trim(line.substr(colon + 1));
  if (iequals(name, "retry-after")) {
    sink.seconds = parse_retry_after_seconds(value);
  } else if (iequals(name, "retry-after-ms")) {
    if (auto s = parse_retry_after_seconds(value))
      sink.millis = std::chrono::milliseconds(s->count() / 1000);
  }
  return n;
}

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

TransportFailure classify(CURLcode code, bool over_cap) {
  switch (code) {
    case CURLE_OK:
      return TransportFailure::none;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportFailure::timeout;
    case CURLE_FILESIZE_EXCEEDED:
      return TransportFailure::too_large;
    case CURLE_WRITE_ERROR:
      return over_cap ? TransportFailure::too_large : TransportFailure::other;
    case CURLE_PARTIAL_FILE:
      return TransportFailure::truncated;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return TransportFailure::connect;
    default:
      return TransportFailure::other;
  }
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after_seconds(std::string_view value) {
  value = trim(value);
  if (value.empty() || value.size() > 32) return std::nullopt;
  if (!std::all_of(
          value.begin(), value.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; }))
    return std::nullopt;  // an HTTP date, a sign, an exponent: not honoured
  double seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc{} || end != value.data() + value.size() || !std::isfinite(seconds))
    return std::nullopt;
  // Far beyond any cap the client applies, and far from overflowing.
  const double ms = std::min(seconds * 1000.0, 1e12);
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

HttpSession::HttpSession() {
  global_init();
  curl_ = curl_easy_init();
  if (curl_ == nullptr) throw std::runtime_error("libcurl: cannot create a handle");
}

HttpSession::~HttpSession() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

PostResult HttpSession::post(const std::string& url,
                             const std::vector<std::string>& headers,
                             const std::string& body,
                             const PostLimits& limits) {
  auto* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // keeps the connection cache, drops the last call's options

  std::unique_ptr<curl_slist, SlistDeleter> list;
  auto add_header = [&list](const char* header) {
    curl_slist* head = curl_slist_append(list.get(), header);  // the same head once non-empty
    if (head == nullptr) throw std::bad_alloc();
    (void)list.release();
    list.reset(head);
  };
  for (const auto& h : headers) add_header(h.c_str());
  // curl waits for "100 Continue" before sending a large body; the APIs never need it.
  add_header("Expect:");
  add_header("Accept: application/json");

  PostResult result;
  BodySink body_sink{&result.body, limits.max_body_bytes};
  HeaderSink header_sink;
  char error_buffer[CURL_ERROR_SIZE] = {};

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "clampai-agent");
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // the cap counts decoded bytes
  curl_easy_setopt(
      curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(limits.total_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_body_bytes));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body_sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &header_sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);

  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t connect_time = 0;
  curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connect_time);
  long request_size = 0;  // bytes sent: a reused connection may report no connect time
  curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request_size);
  // The handle must not keep pointers into this frame.
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);

  result.status = status;
  result.connected = connect_time > 0 || request_size > 0;
  result.failure = classify(code, body_sink.over);
  result.retry_after = header_sink.millis ? header_sink.millis : header_sink.seconds;
  if (result.failure != TransportFailure::none) {
    result.error = error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(code);
    if (result.failure == TransportFailure::too_large) result.body.clear();
  }
  return result;
}

}  // namespace clampai::agent::detail
