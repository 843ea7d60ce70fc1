// The transport of `clampai serve`: Boost.Beast's HTTP/1.1 parser and serializer on Asio, one
// session per connection (its buffer, parser and timeouts), a thread pool running them, and a
// drain on SIGTERM. The routes live in Service::handle, which does no I/O with clients.
#include "clampai/server/http.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "clampai/kernel/error.hpp"

namespace clampai::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

// What the listener and every session share.
struct Shared {
  const HttpHandler& handler;
  const HttpOptions& options;
  net::thread_pool& solvers;  // where lookahead, repair and verify run
  std::atomic<bool> draining{false};
  std::mutex mutex;
  std::list<std::weak_ptr<class SessionBase>> sessions;  // for the drain
};

// True for the routes that search or prove (lookahead, repair, verify).
bool is_search(std::string_view target) {
  target = target.substr(0, std::min(target.find('?'), target.size()));
  for (const std::string_view op : {"/lookahead", "/repair", "/verify"}) {
    if (target.ends_with(op)) return true;
  }
  return false;
}

// Why the body of a request with these headers cannot be read, or nothing. A request's body is
// framed by `Transfer-Encoding: chunked` alone or by Content-Length (RFC 9112 §6.3); with any
// other transfer coding its length cannot be determined (Beast would read it as empty and its
// bytes as the next request). Beast itself refuses Content-Length beside `chunked`.
template <class Fields>
std::optional<std::string> unframed_body(const Fields& fields) {
  bool present = false;
  std::string codings;  // every Transfer-Encoding field's, in order
  std::size_t count = 0;
  bool chunked = false;
  for (const auto& f : fields) {
    if (f.name() != http::field::transfer_encoding) continue;
    codings += (present ? ", " : "") + std::string(f.value());
    present = true;
    for (const auto coding : http::token_list(f.value())) {
      ++count;
      chunked = beast::iequals(coding, "chunked");
    }
  }
  if (!present || (count == 1 && chunked)) return std::nullopt;
  return "Transfer-Encoding `" + codings +
         "`: its length cannot be determined (the only transfer coding accepted is `chunked`, "
         "alone)";
}

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // Closes the connection if it waits for a request; one that is receiving or answering one
  // closes after the answer.
  virtual void drain() = 0;
};

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, Shared& shared) : stream_(std::move(stream)), shared_(shared) {}

  void start() {
    {
      std::lock_guard lock(shared_.mutex);
      shared_.sessions.push_back(this->weak_from_this());
    }
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        self->read();
      } else {
        self->lowest().expires_after(self->timeout());
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->close();
          self->read();
        });
      }
    });
  }

  void drain() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      // Idle between requests: close. A request partly received is in flight: it is read,
      // answered, and then the connection closes (the read timeout bounds the wait).
      if (self->reading_ && !(self->parser_ && self->parser_->got_some())) self->close();
    });
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(shared_.options.limits.request_timeout_ms);
  }

  void read() {
    if (shared_.draining) return close();
    parser_.emplace();
    parser_->body_limit(shared_.options.limits.max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(shared_.options.limits.max_header_bytes));
    lowest().expires_after(timeout());
    reading_ = true;
    // The headers first: a body whose length cannot be determined is not read at all.
    http::async_read_header(stream_,
                            buffer_,
                            *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) {
                                self->reading_ = false;
                                return self->on_read(ec);
                              }
                              self->read_body();
                            });
  }

  void read_body() {
    if (auto why = unframed_body(parser_->get())) {
      reading_ = false;
      return unreadable(std::move(*why));
    }
    if (parser_->is_done()) {  // no body
      reading_ = false;
      return on_read({});
    }
    http::async_read(stream_,
                     buffer_,
                     *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->reading_ = false;
                       self->on_read(ec);
                     });
  }

  // A request whose body cannot be read: the service refuses it (400 malformed_request) and
  // the connection closes, since the rest of the stream cannot be trusted to start a request.
  void unreadable(std::string why) {
    Request req = request_head();
    req.body_unreadable = std::move(why);
    keep_alive_ = false;
    respond(shared_.handler.handle(req));
  }

  // The request line and headers the service reads.
  Request request_head() {
    auto& msg = parser_->get();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    if (const auto it = msg.find(http::field::authorization); it != msg.end())
      req.authorization = std::string(it->value());
    for (const auto& f : msg) {
      const auto name = f.name_string();
      req.headers.emplace_back(std::string(name.data(), name.size()),
                               std::string(f.value().data(), f.value().size()));
    }
    version_ = msg.version();
    return req;
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted ||
        ec == beast::error::timeout || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::ssl::error::stream_truncated) {
      return close();
    }
    if (ec == http::error::body_limit)
      return refuse(413,
                    "body_too_large",
                    "the body is larger than " +
                        std::to_string(shared_.options.limits.max_body_bytes) + " bytes");
    if (ec == http::error::header_limit)
      return refuse(431,
                    "headers_too_large",
                    "the request line and headers are larger than " +
                        std::to_string(shared_.options.limits.max_header_bytes) + " bytes");
    if (ec)
      return refuse(400, "malformed_request", "the request is not valid HTTP/1.1: " + ec.message());
    Request req = request_head();
    auto& msg = parser_->get();
    req.body = std::move(msg.body());
    keep_alive_ = msg.keep_alive();
    if (shared_.handler.slow && shared_.handler.slow(req.target)) {
      // A search may take seconds (its limits bound it): on the solver pool, so that the event
      // loop goes on serving its other connections. The tracked executor keeps the loop alive
      // until the answer is posted back.
      auto home = net::prefer(stream_.get_executor(), net::execution::outstanding_work.tracked);
      net::post(
          shared_.solvers, [self = this->shared_from_this(), req = std::move(req), home]() mutable {
            Response r = self->shared_.handler.handle(req);
            net::post(home, [self, r = std::move(r)]() mutable { self->respond(std::move(r)); });
          });
      return;
    }
    respond(shared_.handler.handle(req));
  }

  // An answer to a request the parser refused; the connection closes after it, since the
  // rest of the stream cannot be trusted to start a request.
  void refuse(int status, std::string_view code, const std::string& message) {
    keep_alive_ = false;
    version_ = 11;
    respond(shared_.handler.refuse(status, code, message));
  }

  template <class Message>
  void set_headers(Message& res, const Response& r) {
    res.set(http::field::server, "clampai/" CLAMPAI_VERSION);
    res.set(http::field::content_type, r.content_type);
    if (r.status == 401) res.set(http::field::www_authenticate, "Bearer");
    for (const auto& [name, value] : r.headers) res.set(name, value);
    res.keep_alive(keep_alive_ && !shared_.draining);
  }

  void respond(Response r) {
    lowest().expires_after(timeout());
    if (r.next_chunk) return stream(std::move(r));
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version_);
    set_headers(*res, r);
    res->body() = std::move(r.body);
    res->prepare_payload();
    http::async_write(
        stream_, *res, [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
          self->after_write(ec, res->keep_alive());
        });
  }

  // A body of unknown length, sent in chunks as the response's generator yields them.
  void stream(Response r) {
    auto res = std::make_shared<http::response<http::empty_body>>(
        static_cast<http::status>(r.status), version_);
    set_headers(*res, r);
    res->chunked(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    auto next = std::make_shared<std::function<bool(std::string&)>>(std::move(r.next_chunk));
    http::async_write_header(
        stream_,
        *sr,
        [self = this->shared_from_this(), res, sr, next](beast::error_code ec, std::size_t) {
          if (ec) return self->close();
          self->write_chunk(next, res->keep_alive());
        });
  }

  void write_chunk(const std::shared_ptr<std::function<bool(std::string&)>>& next, bool keep) {
    lowest().expires_after(timeout());
    bool more = false;
    try {
      more = (*next)(chunk_);
    } catch (const std::exception&) {
      return close();  // the header is out: cutting the stream short is all that is left
    }
    if (!more) {
      net::async_write(stream_,
                       http::make_chunk_last(),
                       [self = this->shared_from_this(), keep](beast::error_code ec, std::size_t) {
                         self->after_write(ec, keep);
                       });
      return;
    }
    net::async_write(
        stream_,
        http::make_chunk(net::buffer(chunk_)),
        [self = this->shared_from_this(), next, keep](beast::error_code ec, std::size_t) {
          if (ec) return self->close();
          self->write_chunk(next, keep);
        });
  }

  void after_write(beast::error_code ec, bool keep) {
    if (ec || !keep || shared_.draining) return close();
    read();
  }

  void close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }

  Stream stream_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string chunk_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  bool reading_ = false;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // Accepts on the first context; each connection goes to the next context in turn, so that a
  // connection's handlers always run on one thread (no strand, no lock between threads).
  Listener(std::vector<std::unique_ptr<net::io_context>>& iocs,
           Shared& shared,
           ssl::context* tls,
           const tcp::endpoint& at)
      : iocs_(iocs), shared_(shared), tls_(tls), acceptor_(*iocs.front()) {
    beast::error_code ec;
    acceptor_.open(at.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(at, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
      throw Error("cannot listen on " + at.address().to_string() + " port " +
                  std::to_string(at.port()) + ": " + ec.message());
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }

  void accept() {
    net::io_context& next = *iocs_[next_ % iocs_.size()];
    acceptor_.async_accept(next.get_executor(),
                           [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
                             if (self->shared_.draining || !self->acceptor_.is_open()) return;
                             if (ec) return self->retry(ec);
                             ++self->next_;
                             self->backoff_ = std::chrono::milliseconds(0);
                             self->start(std::move(socket));
                             self->accept();
                           });
  }

  void stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->acceptor_.close(ignored);
      self->backoff_timer_.cancel();
    });
  }

 private:
  // A failed accept never ends the loop. Out of descriptors (EMFILE, ENFILE) or memory, the
  // connection stays queued and accepting again at once would fail again, in a busy loop: wait,
  // 10 ms at first and twice as long after each failure up to a second, until descriptors
  // free up. Any success resets the wait.
  void retry(const beast::error_code& ec) {
    if (shared_.handler.note_accept_error) shared_.handler.note_accept_error(ec.message());
    backoff_ =
        std::clamp(backoff_ * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
    backoff_timer_.expires_after(backoff_);
    backoff_timer_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
      if (wait_ec || self->shared_.draining || !self->acceptor_.is_open()) return;
      self->accept();
    });
  }

  void start(tcp::socket socket) {
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (tls_ != nullptr) {
      std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
          beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *tls_),
          shared_)
          ->start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), shared_)
          ->start();
    }
  }

  std::vector<std::unique_ptr<net::io_context>>& iocs_;
  std::size_t next_ = 0;
  Shared& shared_;
  ssl::context* tls_;
  tcp::acceptor acceptor_;
  net::steady_timer backoff_timer_{acceptor_.get_executor()};
  std::chrono::milliseconds backoff_{0};
};

}  // namespace

const std::string* Request::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (beast::iequals(beast::string_view(n), beast::string_view(name.data(), name.size())))
      return &v;
  }
  return nullptr;
}

int serve_http(Service& service,
               const HttpOptions& options,
               const std::function<void(const std::string& url)>& on_listening) {
  HttpHandler handler;
  handler.handle = [&service](const Request& r) { return service.handle(r); };
  handler.refuse = [&service](int status, std::string_view code, const std::string& message) {
    service.note_refused(status, code);
    return Service::error(status, code, message);
  };
  handler.note_accept_error = [&service](std::string_view m) { service.note_accept_error(m); };
  handler.slow = is_search;
  return serve_http(handler, options, on_listening);
}

int serve_http(const HttpHandler& handler,
               const HttpOptions& options,
               const std::function<void(const std::string& url)>& on_listening) {
  beast::error_code ec;
  const auto address = net::ip::make_address(options.host, ec);
  if (ec) throw InvalidArgument("--host `" + options.host + "`: not an IP address");
  std::optional<ssl::context> tls;
  if (!options.tls_cert.empty()) {
    tls.emplace(ssl::context::tls_server);
    tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    tls->use_certificate_chain_file(options.tls_cert, ec);
    if (ec) throw FileError("--tls-cert `" + options.tls_cert + "`: " + ec.message());
    tls->use_private_key_file(options.tls_key, ssl::context::pem, ec);
    if (ec) throw FileError("--tls-key `" + options.tls_key + "`: " + ec.message());
  }
  const unsigned threads = std::max(1U, options.threads);
  // One event loop per thread: the first also accepts, handles the signals and sweeps.
  std::vector<std::unique_ptr<net::io_context>> iocs;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> idle;  // the others'
  for (unsigned i = 0; i < threads; ++i) {
    iocs.push_back(std::make_unique<net::io_context>(1));
    if (i > 0) idle.push_back(net::make_work_guard(*iocs.back()));
  }
  net::io_context& ioc = *iocs.front();
  net::thread_pool solvers(2);
  Shared shared{handler, options, solvers, {}, {}, {}};
  auto listener = std::make_shared<Listener>(
      iocs, shared, tls ? &*tls : nullptr, tcp::endpoint(address, options.port));
  listener->accept();

  net::steady_timer sweep(ioc);
  net::signal_set hangup(ioc);
  std::function<void(beast::error_code, int)> on_hangup = [&](beast::error_code hup_ec, int) {
    if (hup_ec || shared.draining) return;
    options.on_reload();
    hangup.async_wait(on_hangup);
  };
  if (options.on_reload) {
    hangup.add(SIGHUP);
    hangup.async_wait(on_hangup);
  }
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code wait_ec, int) {
    if (wait_ec) return;
    hangup.cancel();
    // Stop accepting, close the idle connections; the busy ones close after their answer.
    shared.draining = true;
    listener->stop();
    sweep.cancel();
    for (auto& guard : idle) guard.reset();  // each loop ends when its connections have
    std::lock_guard lock(shared.mutex);
    for (auto& weak : shared.sessions) {
      if (auto s = weak.lock()) s->drain();
    }
  });

  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  on_listening(std::string(tls ? "https://" : "http://") + host + ":" +
               std::to_string(listener->port()));

  // Forget the sessions that ended, now and then, so the drain list stays small.
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&iocs, i] { iocs[i]->run(); });
  std::function<void(beast::error_code)> on_sweep = [&](beast::error_code sweep_ec) {
    if (sweep_ec || shared.draining) return;
    {
      std::lock_guard lock(shared.mutex);
      shared.sessions.remove_if([](const auto& w) { return w.expired(); });
    }
    sweep.expires_after(std::chrono::seconds(1));
    sweep.async_wait(on_sweep);
  };
  sweep.expires_after(std::chrono::seconds(1));
  sweep.async_wait(on_sweep);
  ioc.run();
  for (auto& t : pool) t.join();
  solvers.join();
  return 0;
}

}  // namespace clampai::server
