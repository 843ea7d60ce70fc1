// The scripted test server: one connection at a time, blocking sockets, a pipe to stop it.
#include "fake_http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <stdexcept>

namespace clampai::test {

namespace {

int listen_on_loopback(int& port, int backlog = 8) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("fake server: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("fake server: cannot listen on 127.0.0.1");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return s;
}

std::string reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

}  // namespace

Reply http_reply(int status, const std::string& body, const std::vector<std::string>& headers) {
  std::string raw = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  raw += "Content-Type: application/json\r\nConnection: close\r\n";
  raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& h : headers) raw += h + "\r\n";
  raw += "\r\n" + body;
  return Reply{std::move(raw), false};
}

Reply no_reply() { return Reply{"", true}; }

FakeServer::FakeServer(std::vector<Reply> script) : script_(std::move(script)) {
  listener_ = listen_on_loopback(port_);
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    ::close(listener_);
    throw std::runtime_error("fake server: pipe failed");
  }
  thread_ = std::thread([this] { run(); });
}

FakeServer::~FakeServer() {
  const char stop = 's';
  (void)!::write(wake_[1], &stop, 1);
  thread_.join();
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

std::string FakeServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<Received> FakeServer::received() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return received_;
}

bool FakeServer::wait_readable(int fd) const {
  pollfd fds[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  while (true) {
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (fds[1].revents & POLLIN) != 0) return false;
    if (fds[0].revents != 0) return true;
  }
}

void FakeServer::run() {
  while (wait_readable(listener_)) {
    const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    serve(connection);
    ::close(connection);
  }
}

void FakeServer::serve(int connection) {
  std::string data;
  char buf[65536];
  std::size_t header_end = std::string::npos;
  std::size_t need = 0;
  while (true) {
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        Received r;
        const std::string head = data.substr(0, header_end);
        std::size_t line_end = head.find("\r\n");
        const std::string first = head.substr(0, line_end);
        r.method = first.substr(0, first.find(' '));
        const auto path_at = first.find(' ') + 1;
        r.path = first.substr(path_at, first.find(' ', path_at) - path_at);
        while (line_end != std::string::npos) {
          const auto start = line_end + 2;
          line_end = head.find("\r\n", start);
          const std::string line = head.substr(start, line_end - start);
          const auto colon = line.find(':');
          if (colon == std::string::npos) continue;
          std::string value = line.substr(colon + 1);
          value.erase(0, value.find_first_not_of(' '));
          r.headers[lower(line.substr(0, colon))] = value;
        }
        const auto length = r.headers.find("content-length");
        need = header_end + 4 + (length == r.headers.end() ? 0 : std::stoul(length->second));
        const std::lock_guard<std::mutex> lock(mutex_);
        received_.push_back(std::move(r));
      }
    }
    if (header_end != std::string::npos && data.size() >= need) break;
    if (!wait_readable(connection)) return;
    const ssize_t n = ::recv(connection, buf, sizeof buf, 0);
    if (n <= 0) return;  // the client gave up before the request was complete
    data.append(buf, static_cast<std::size_t>(n));
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    received_.back().body = data.substr(header_end + 4);
  }
  const Reply reply = next_ < script_.size()
                          ? script_[next_++]
                          : http_reply(500, R"({"error":{"message":"script exhausted"}})");
  std::size_t sent = 0;
  while (sent < reply.raw.size()) {
    const ssize_t n =
        ::send(connection, reply.raw.data() + sent, reply.raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client stopped reading (a body over its cap)
    sent += static_cast<std::size_t>(n);
  }
  if (reply.hang) {  // hold the connection open until the client gives up
    while (wait_readable(connection) && ::recv(connection, buf, sizeof buf, 0) > 0) {
    }
    return;
  }
  ::shutdown(connection, SHUT_WR);
}

FullListener::FullListener() {
  fd_ = listen_on_loopback(port_, /*backlog=*/0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port_));
  // Fill the accept queue: a further connection attempt gets no answer to its SYN.
  for (int i = 0; i < 4; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c < 0) continue;
    (void)::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers_.push_back(c);
  }
}

FullListener::~FullListener() {
  for (const int c : fillers_) ::close(c);
  ::close(fd_);
}

std::string FullListener::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

int closed_port() {
  int port = 0;
  const int fd = listen_on_loopback(port);
  ::close(fd);
  return port;
}

}  // namespace clampai::test
