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

/// Listens and serves `service` until SIGTERM or SIGINT: then it stops accepting, finishes the
/// requests in flight, closes idle connections and returns (the caller seals: Service::shutdown).
/// `on_listening` gets the URL (`http://HOST:PORT`, `https://` with TLS) once the socket
/// listens. Returns 0.
/// @throws Error if the address cannot be bound or the TLS files cannot be loaded.
int serve_http(Service& service,
               const HttpOptions& options,
               const std::function<void(const std::string& url)>& on_listening);

}  // namespace clampai::server
