// The gateway over MCP's Streamable HTTP transport: one endpoint (`/mcp`); a POST carries one
// JSON-RPC message and a request is answered with one JSON response (no SSE stream: GET is 405,
// so the server never sends requests of its own to the client); sessions by `Mcp-Session-Id`;
// Origin checked against DNS rebinding; a bearer token. docs/GATEWAY.md, "Over HTTP".
#include "gateway_http.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <string_view>

#include <boost/asio/ip/address.hpp>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/server/mcp.hpp"
#include "clampai/server/service.hpp"
#include "jsonrpc.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
using namespace jsonrpc;  // NOLINT(google-build-using-namespace)

namespace {

constexpr std::string_view kEndpoint = "/mcp";
// Sessions open at once, at most: past it, an initialize is refused until one is deleted.
constexpr std::size_t kMaxSessions = 1024;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

// An HTTP error whose body is a JSON-RPC error without an id, as MCP's clients read it.
Response refusal(int status, int code, std::string_view message, std::string_view id = "null") {
  Response r;
  r.status = status;
  r.body = error_message(std::string(id), code, message);
  return r;
}

Response accepted() {
  Response r;
  r.status = 202;
  return r;
}

// Whether `origin` (`scheme://host[:port]`) names this machine through a loopback address,
// `localhost`, or the address the gateway listens on: a page of another site (DNS rebinding)
// sends its own origin and is refused.
bool origin_allowed(std::string_view origin, const std::string& bound) {
  const std::size_t sep = origin.find("://");
  if (sep == std::string_view::npos) return false;
  const std::string scheme = lower(origin.substr(0, sep));
  if (scheme != "http" && scheme != "https") return false;
  std::string_view rest = origin.substr(sep + 3);
  std::string_view host;
  if (rest.starts_with('[')) {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
  } else {
    const std::size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon);
  }
  // Nothing but a port may follow the host.
  if (!rest.empty() && (rest.front() != ':' || rest.size() == 1 ||
                        rest.substr(1).find_first_not_of("0123456789") != std::string_view::npos))
    return false;
  const std::string name = lower(host);
  if (name == "localhost") return true;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(name, ec);
  if (ec) return false;
  if (address.is_loopback()) return true;
  const auto listening = boost::asio::ip::make_address(bound, ec);
  return !ec && !listening.is_unspecified() && listening == address;
}

class Endpoint {
 public:
  Endpoint(const McpExchange& exchange, const GatewayHttpOptions& options, std::ostream& log)
      : exchange_(exchange), options_(options), log_(log) {}

  Response handle(const Request& req) {
    try {
      return route(req);
    } catch (const std::exception& e) {
      return refusal(500, kInternalError, std::string("gateway error: ") + e.what());
    }
  }

 private:
  Response route(const Request& req) {
    if (const std::string* origin = req.header("origin");
        origin != nullptr && !origin_allowed(*origin, options_.http.host))
      return refusal(403,
                     kInvalidRequest,
                     "forbidden: Origin `" + *origin +
                         "` is not this machine's (a loopback address, localhost or the address "
                         "the gateway listens on)");
    if (!options_.token.empty()) {
      const std::optional<std::string_view> given = bearer_token(req.authorization);
      if (!given)
        return refusal(401,
                       kInvalidRequest,
                       "unauthorized: this gateway needs `Authorization: Bearer TOKEN` (its "
                       "--token-file)");
      if (!token_matches(*given, options_.token))
        return refusal(401, kInvalidRequest, "unauthorized: the bearer token is wrong");
    }
    const std::string_view target =
        std::string_view(req.target).substr(0, std::min(req.target.find('?'), req.target.size()));
    if (target != kEndpoint)
      return refusal(404,
                     kInvalidRequest,
                     "not found: the gateway's one endpoint is `" + std::string(kEndpoint) + "`");
    if (!req.body_unreadable.empty())
      return refusal(400, kInvalidRequest, "malformed request: " + req.body_unreadable);
    if (req.method == "POST") return post(req);
    if (req.method == "DELETE") return end_session(req);
    Response r = refusal(405,
                         kInvalidRequest,
                         "method not allowed: POST a JSON-RPC message, or DELETE the session (the "
                         "gateway offers no server-to-client stream, so no GET)");
    r.headers.emplace_back("Allow", "POST, DELETE");
    return r;
  }

  // The session the request names: empty with `refused` set when it names none known.
  std::string session_of(const Request& req, std::optional<Response>& refused) {
    const std::string* id = req.header("mcp-session-id");
    if (id == nullptr) {
      refused = refusal(
          400, kInvalidRequest, "bad request: no Mcp-Session-Id header (initialize gives one)");
      return "";
    }
    const std::lock_guard lock(mutex_);
    if (sessions_.find(*id) == sessions_.end()) {
      refused =
          refusal(404, kInvalidRequest, "session not found: initialize again for a new session");
      return "";
    }
    return *id;
  }

  Response end_session(const Request& req) {
    std::optional<Response> refused;
    const std::string id = session_of(req, refused);
    if (refused) return *std::move(refused);
    const std::lock_guard lock(mutex_);
    sessions_.erase(id);
    Response r;
    r.status = 200;
    return r;
  }

  Response post(const Request& req) {
    if (const std::string* type = req.header("content-type");
        type != nullptr && !lower(*type).starts_with("application/json"))
      return refusal(
          415, kInvalidRequest, "unsupported media type `" + *type + "`: POST `application/json`");
    if (const std::string* accept = req.header("accept"); accept != nullptr) {
      const std::string a = lower(*accept);
      if (a.find("application/json") == std::string::npos &&
          a.find("application/*") == std::string::npos && a.find("*/*") == std::string::npos)
        return refusal(
            406,
            kInvalidRequest,
            "not acceptable: the gateway answers `application/json` (Accept `" + *accept + "`)");
    }
    ck::jsonio::JsonLimits limits;
    limits.max_bytes = options_.http.limits.max_body_bytes;
    limits.max_string = options_.http.limits.max_body_bytes;
    limits.max_depth = 64;
    std::string why;
    const std::optional<Envelope> env = read_envelope(req.body, limits, why);
    if (!env) {
      Response r;
      r.status = 400;
      r.body = why;
      return r;
    }
    if (!env->reply && !env->notification && env->method->text == "initialize")
      return initialize(*env, req.body);
    std::optional<Response> refused;
    (void)session_of(req, refused);
    if (refused) return *std::move(refused);
    if (const std::string* v = req.header("mcp-protocol-version"); v != nullptr) {
      const bool known = std::any_of(std::begin(mcp_protocol_versions),
                                     std::end(mcp_protocol_versions),
                                     [&](std::string_view k) { return k == *v; });
      if (!known)
        return refusal(
            400, kInvalidRequest, "bad request: unsupported MCP-Protocol-Version `" + *v + "`");
    }
    if (env->reply) return accepted();  // the gateway asks the client nothing over HTTP
    if (env->notification) {
      // The upstream is initialised once, whichever session says so first.
      if (env->method->text == "notifications/initialized") {
        const std::lock_guard lock(mutex_);
        if (initialized_) return accepted();
        initialized_ = true;
      }
      (void)exchange_(req.body);
      return accepted();
    }
    return answer(env->id, exchange_(req.body));
  }

  // The answer to a request: the last message the gateway wrote (those before it, the
  // upstream's notifications, have no stream to go to over HTTP).
  Response answer(const std::string& id, const std::string& sent) {
    std::string_view text = sent;
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    const std::size_t start = text.rfind('\n');
    if (start != std::string_view::npos) {
      log_ << "clampai gateway: the upstream's notifications during request " << id
           << " are not passed over HTTP\n";
      text = text.substr(start + 1);
    }
    if (text.empty())
      return refusal(500, kInternalError, "gateway error: the request had no answer", id);
    Response r;
    r.body = std::string(text);
    return r;
  }

  // A new session: the upstream is initialised by the first; later sessions get its answer.
  Response initialize(const Envelope& env, const std::string& body) {
    {
      const std::lock_guard lock(mutex_);
      if (sessions_.size() >= kMaxSessions)
        return refusal(503,
                       kInvalidRequest,
                       "too many sessions (" + std::to_string(kMaxSessions) +
                           "): DELETE one before initializing another");
    }
    // One initialize at a time: the upstream's is sent once.
    const std::lock_guard one(initializing_);
    std::string result;
    {
      const std::lock_guard lock(mutex_);
      result = initialized_result_;
    }
    if (result.empty()) {
      Response r = answer(env.id, exchange_(body));
      std::string why;
      ck::jsonio::JsonLimits limits;
      limits.max_string = r.body.size();
      limits.max_bytes = r.body.size() + 1;
      const std::optional<Envelope> reply = read_envelope(r.body, limits, why);
      const ck::jsonio::JsonNode* res =
          reply && reply->reply ? reply->message.find("result") : nullptr;
      if (res == nullptr) return r;  // the upstream refused: no session
      std::string raw;
      append_json(raw, *res);
      const std::lock_guard lock(mutex_);
      if (initialized_result_.empty()) initialized_result_ = raw;
      result = raw;
    }
    Response r;
    r.body = result_message(env.id, result);
    const std::string id = ck::random_hex(16, "a session id");
    {
      const std::lock_guard lock(mutex_);
      sessions_.insert(id);
    }
    r.headers.emplace_back("Mcp-Session-Id", id);
    return r;
  }

  const McpExchange& exchange_;
  const GatewayHttpOptions& options_;
  std::ostream& log_;
  std::mutex initializing_;
  std::mutex mutex_;  // guards what follows
  std::set<std::string> sessions_;
  std::string initialized_result_;  // the gateway's initialize result, once it has one
  bool initialized_ = false;        // notifications/initialized went upstream
};

}  // namespace

int serve_mcp_http(const McpExchange& exchange,
                   const GatewayHttpOptions& options,
                   const std::function<void(const std::string& url)>& on_listening,
                   std::ostream& log) {
  Endpoint endpoint(exchange, options, log);
  HttpHandler handler;
  handler.handle = [&endpoint](const Request& r) { return endpoint.handle(r); };
  handler.refuse = [](int status, std::string_view, const std::string& message) {
    // A body over --max-message-bytes, headers too large, a request that is not HTTP.
    std::string m = message;
    if (status == 413) m += " (--max-message-bytes)";
    return refusal(status, status == 400 ? kParseError : kInvalidRequest, m);
  };
  return serve_http(handler, options.http, on_listening);
}

}  // namespace clampai::server
