// `clampai serve`'s transport: HTTP/1.1 (Boost.Beast) with keep-alive on a thread pool, plain
// or TLS (OpenSSL), in front of a `Service`.
#pragma once

#include <functional>
#include <string>

#include "clampai/server/service.hpp"

namespace clampai::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8765;  // 0: a free port, chosen by the system
  unsigned threads = 2;        // the I/O and request threads
  /// PEM files: with both set, every connection is TLS.
  std::string tls_cert{};
  std::string tls_key{};
  Limits limits{};
  /// Called on SIGHUP (on the accepting thread), e.g. to re-read `--principals`; when empty,
  /// SIGHUP is left to its default.
  std::function<void()> on_reload{};
};

/// What the transport serves: `handle` answers a request (and must not throw); `refuse` answers
/// one the transport could not read (status 413, 431 or 400 with a code and message), and
/// counts it; `note_accept_error` counts a failed accept; `slow` says a request may take long
/// and goes to the solver threads. `serve_http(Service&...)` fills it from a `Service`.
struct HttpHandler {
  std::function<Response(const Request&)> handle;
  std::function<Response(int status, std::string_view code, const std::string& message)> refuse;
  std::function<void(std::string_view message)> note_accept_error{};
  std::function<bool(std::string_view target)> slow{};
};

/// Listens and serves `handler` as `serve_http(Service&...)` serves a service.
/// @throws Error if the address cannot be bound or the TLS files cannot be loaded.
int serve_http(const HttpHandler& handler,
               const HttpOptions& options,
               const std::function<void(const std::string& url)>& on_listening);

/// Listens and serves `service` until SIGTERM or SIGINT: then it stops accepting, finishes the
/// requests in flight, closes idle connections and returns (the caller seals: Service::shutdown).
/// `on_listening` gets the URL (`http://HOST:PORT`, `https://` with TLS) once the socket
/// listens. Returns 0.
/// @throws Error if the address cannot be bound or the TLS files cannot be loaded.
int serve_http(Service& service,
               const HttpOptions& options,
               const std::function<void(const std::string& url)>& on_listening);

}  // namespace clampai::server
