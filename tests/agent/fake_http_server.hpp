// A scripted HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for the LLM adapter tests: it
// records each request and answers with the next scripted bytes, verbatim, so a test can send
// what no well-behaved server would (truncated bodies, NUL bytes, no answer at all).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace clampai::test {

struct Reply {
  std::string raw;    ///< sent as is, then the connection is closed
  bool hang = false;  ///< after `raw`, hold the connection open until the client closes it
};

/// A complete response with Content-Length and `Connection: close`.
Reply http_reply(int status, const std::string& body, const std::vector<std::string>& headers = {});

/// A response that hangs: the client's timeout must end it.
Reply no_reply();

struct Received {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  ///< names lowercased
  std::string body;
};

class FakeServer {
 public:
  /// Listens at once; answers the script's replies in order, then `500 script exhausted`.
  explicit FakeServer(std::vector<Reply> script);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  /// "http://127.0.0.1:PORT".
  [[nodiscard]] std::string url() const;
  /// The requests received so far.
  [[nodiscard]] std::vector<Received> received() const;

 private:
  void run();
  void serve(int connection);
  bool wait_readable(int fd) const;  // false when the server is stopping

  std::vector<Reply> script_;
  std::size_t next_ = 0;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  mutable std::mutex mutex_;
  std::vector<Received> received_;
  std::thread thread_;
};

/// A listener on 127.0.0.1 whose accept queue is full: connecting to it never completes, so only
/// the client's connect timeout ends the attempt.
class FullListener {
 public:
  FullListener();
  ~FullListener();
  FullListener(const FullListener&) = delete;
  FullListener& operator=(const FullListener&) = delete;
  [[nodiscard]] std::string url() const;

 private:
  int fd_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
int closed_port();

}  // namespace clampai::test
