// A loopback HTTP server for the attestor and probe tests: canned answers by path, one thread,
// no network beyond 127.0.0.1. `/hang` reads the request and never answers.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace testing {

class HttpServer {
 public:
  HttpServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(fd_, 16) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("test server: cannot listen on 127.0.0.1");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  /// Sets the body `/value` answers with.
  void set_value(std::string v) {
    std::lock_guard lock(mutex_);
    value_ = std::move(v);
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 1000) <= 0) break;
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<std::size_t>(n));
      }
      const std::size_t sp = request.find(' ');
      const std::string path =
          sp == std::string::npos ? "" : request.substr(sp + 1, request.find(' ', sp + 1) - sp - 1);
      std::string status = "200 OK";
      std::string body = "healthy";
      std::string extra;
      if (path == "/fail") {
        status = "503 Service Unavailable";
        body = "down";
      } else if (path == "/redirect") {
        status = "302 Found";
        extra = "Location: /ok\r\n";
      } else if (path == "/big") {
        body.assign(1 << 20, 'x');
      } else if (path == "/value") {
        std::lock_guard lock(mutex_);
        body = value_;
      } else if (path == "/hang") {
        // Never answers; waits until the client gives up (or the server stops).
        while (!stop_) {
          pollfd q{c, POLLIN, 0};
          if (::poll(&q, 1, 20) > 0 && ::recv(c, buf, sizeof buf, 0) <= 0) break;
        }
        ::close(c);
        continue;
      }
      const std::string answer = "HTTP/1.1 " + status +
                                 "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                                 extra + "Connection: close\r\n\r\n" + body;
      std::size_t sent = 0;
      while (sent < answer.size()) {
        const ssize_t n = ::send(c, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      ::close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string value_;
  std::thread thread_;
};

}  // namespace testing
