// `clampai gateway`: an MCP server on stdio for the client, an MCP client of one upstream
// server (a child process on pipes). Every tools/call is decided and committed by the kernel
// before it is forwarded (docs/GATEWAY.md).
#include "clampai/server/gateway.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <deque>
#include <istream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <variant>

#include "clampai/driver/approvals.hpp"
#include "clampai/driver/committer.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/ledger/ledger.hpp"
#include "clampai/server/mcp.hpp"
#include "gateway_http.hpp"
#include "json_out.hpp"
#include "jsonrpc.hpp"
#include "ops.hpp"
#include "task.hpp"
#include "upstream.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;
using namespace jsonrpc;  // NOLINT(google-build-using-namespace)

namespace {

constexpr std::uint32_t kSolverMs = 2000;  // repair's limit for the closest approved values
// The client's messages read (while calls are in flight) and not handled yet, at most.
constexpr std::size_t kMaxBacklog = 1024;

// The answer to a client's line longer than --max-message-bytes.
std::string too_long_message(std::size_t limit) {
  return error_message("null",
                       kInvalidRequest,
                       "invalid request: a message longer than " + std::to_string(limit) +
                           " bytes (--max-message-bytes), discarded up to its end of line");
}

class Gateway {
 public:
  Gateway(std::shared_ptr<const ck::TaskModel> model,
          const Bindings& bindings,
          const GatewayOptions& options,
          std::ostream& out,
          std::ostream& log)
      : model_(std::move(model)),
        bindings_(bindings),
        options_(options),
        out_(out),
        log_(log),
        upstream_(
            options,
            log,
            [this](const std::string& n) { write(n); },
            [this](const std::string& method, const std::string& id, const JsonNode* params) {
              return ask_client(method, id, params);
            }) {
    if (options.ledger.empty()) {
      ck::KernelOptions k;
      k.record_rejections = true;
      if (!options.trace.empty())
        k.writer = std::make_shared<ck::TraceWriter>(
            options.trace, ck::FlushPolicy::flush, ck::TraceOpen::create);
      own_ = std::make_unique<ck::SafetyKernel>(model_, std::move(k));
      committer_ = std::make_unique<driver::LocalCommitter>(*own_);
    } else {
      ledger_ = clampai::ledger::open_ledger(options.ledger, model_->name);
      ck::SharedOptions s;
      s.record_rejections = true;
      shared_ = std::make_unique<ck::SharedKernel>(model_, ledger_, std::move(s));
      committer_ = std::make_unique<driver::SharedCommitter>(*shared_);
    }
    // The tickets: in the gateway's own trace, or in the shared one (any process on the ledger
    // lists and answers them; one answer wins).
    approvals_ = std::make_unique<driver::Approvals>(*committer_);
  }

  ~Gateway() {
    try {
      if (own_ && !options_.trace.empty()) (void)own_->seal();
    } catch (const std::exception& e) {
      log_ << "clampai gateway: could not seal the trace: " << e.what() << "\n";
    }
  }
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  /// The client's input, read for its answers to what the upstream asks of it (`ask_client`).
  /// With its file descriptor `fd` (whose reads wait `*wait_ms`, -1: until something comes), it
  /// is also read while the upstream is waited for, so that it may cancel a call in flight.
  void attach(LineReader& client, int fd = -1, int* wait_ms = nullptr) {
    client_ = &client;
    if (fd < 0 || wait_ms == nullptr) return;
    client_wait_ms_ = wait_ms;
    ClientWatch w;
    // A client that floods: past kMaxBacklog messages read and not handled yet, it is not read
    // until they are (its pipe fills and it waits).
    w.fd = [this, fd] { return client_ended_ || backlog_.size() >= kMaxBacklog ? -1 : fd; };
    w.buffered = [this] {
      return !client_ended_ && backlog_.size() < kMaxBacklog && client_->buffered();
    };
    w.drain = [this] { drain(); };
    upstream_.watch(std::move(w));
  }
  /// A message of the client read while it was being asked something, to handle next.
  std::optional<std::string> take_backlog() {
    if (backlog_.empty()) return std::nullopt;
    std::string line = std::move(backlog_.front());
    backlog_.pop_front();
    return line;
  }
  [[nodiscard]] bool client_ended() const { return client_ended_; }
  void set_client_ended() { client_ended_ = true; }

  /// Whether calls are forwarded and not answered yet; whether --max-in-flight of them are.
  [[nodiscard]] bool calls_in_flight() const { return !in_flight_.empty(); }
  [[nodiscard]] bool full() const { return in_flight_.size() >= options_.max_in_flight; }
  /// Waits for the answer of a call in flight and answers the client (reading its messages
  /// meanwhile when its input is watched). With `or_message`, stops waiting as soon as a
  /// message of the client waits to be handled, and a call could be forwarded.
  void await_answer(bool or_message) {
    std::function<bool()> stop;
    if (or_message) stop = [this] { return !backlog_.empty() && !full(); };
    if (auto a = upstream_.next_answer(stop)) return write(finish(a->first, a->second));
    if (or_message && !backlog_.empty()) return;
    // None outstanding any more: what is still in flight had no answer.
    while (!in_flight_.empty()) write(finish(in_flight_.begin()->first, UpstreamAnswer{}));
  }

  // Answers one line of the client (nothing for a notification or a reply).
  void handle(const std::string& line) {
    ck::jsonio::JsonLimits limits;
    limits.max_bytes = options_.max_message_bytes;
    limits.max_string = options_.max_message_bytes;
    limits.max_depth = 64;
    std::string refusal;
    const std::optional<Envelope> env = read_envelope(line, limits, refusal);
    if (!env) return write(refusal);
    if (env->reply) return;  // to a request no longer waited for (`request_client`)
    const std::string& method = env->method->text;
    try {
      if (env->notification) return notify(method, env->params);
      std::string reply;
      if (method == "initialize") {
        reply = initialize(env->id, env->params);
      } else if (method == "ping") {
        reply = result_message(env->id, "{}");
      } else if (method == "tools/list") {
        reply = result_message(env->id, tools_list());
      } else if (method == "tools/call") {
        reply = call_tool(env->id, env->params);
      } else if (std::find(bindings_.allow.begin(), bindings_.allow.end(), method) !=
                 bindings_.allow.end()) {
        reply = pass_through(env->id, method, env->params);
      } else {
        throw RpcError{
            kMethodNotFound,
            "refused by the gateway: `" + method + "` is not allowed by the spec (bindings.allow)"};
      }
      write(reply);
    } catch (const RpcError& e) {
      write(error_message(env->id, e.code, e.message));
    } catch (const std::exception& e) {
      write(error_message(env->id, kInternalError, std::string("gateway error: ") + e.what()));
    }
  }

 private:
  void write(const std::string& message) {
    if (!message.empty()) out_ << message << '\n' << std::flush;
  }

  // A request of the upstream (roots, sampling, elicitation) passed to the client when the spec
  // allows it by name (`request_client`). The reply for the upstream, or empty to refuse the
  // request.
  std::string ask_client(const std::string& method,
                         const std::string& upstream_id,
                         const JsonNode* params) {
    if (!is_client_request(method) || !bindings_.allows(method)) return "";
    std::string p;
    if (params != nullptr) append_json(p, *params);
    const ClientReply r = request_client(method, p);
    if (r.kind == ClientReply::Kind::none) {
      log_ << "clampai gateway: the upstream's request `" << method << "`: " << r.why << "\n";
      return error_message(upstream_id, kInternalError, "the gateway's client: " + r.why);
    }
    std::string reply = R"({"jsonrpc":"2.0","id":)" + upstream_id +
                        (r.kind == ClientReply::Kind::result ? ",\"result\":" : ",\"error\":");
    append_json(reply, r.body);
    return reply + "}";
  }

  // What the client answered a request of the gateway's: its `result` or `error`, or none (why).
  struct ClientReply {
    enum class Kind : std::uint8_t { result, error, none };
    Kind kind = Kind::none;
    JsonNode body{};
    std::string why{};
  };
  // Sends the client the request `method` with `params` (JSON text; empty: none) under an id of
  // the gateway's, and reads the client until it answers (its other messages kept, in order,
  // for after): the one writer of the gateway's requests to the client. With `left_ms` (the
  // milliseconds left to wait, <= 0 when the time is up) and a watched input, stops waiting
  // when the time is up and tells the client its request is cancelled.
  ClientReply request_client(const std::string& method,
                             const std::string& params,
                             const std::function<std::int64_t()>& left_ms = {}) {
    ClientReply none;
    if (client_ == nullptr || client_ended_) {
      none.why = "the client is gone";
      return none;
    }
    const std::string id = "\"clampai-gateway-ask-" + std::to_string(++asks_) + "\"";
    std::string m = R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":)";
    append_json_string(m, method);
    if (!params.empty()) m += ",\"params\":" + params;
    write(m + "}");
    const bool timed = left_ms && client_wait_ms_ != nullptr;
    std::string line;
    for (;;) {
      if (timed) {
        const std::int64_t left = left_ms();
        if (left <= 0) {
          *client_wait_ms_ = -1;
          write(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
                id + R"(,"reason":"the time to answer ran out"}})");
          none.why = "it did not answer in time";
          return none;
        }
        *client_wait_ms_ = static_cast<int>(std::min<std::int64_t>(left, INT_MAX));
      }
      const LineReader::Got got = client_->next(line);
      if (timed) *client_wait_ms_ = -1;
      if (got == LineReader::Got::timeout && timed) continue;
      if (got == LineReader::Got::end || got == LineReader::Got::timeout) {
        client_ended_ = true;
        none.why = "it closed its input before it answered";
        return none;
      }
      if (got == LineReader::Got::too_long) {
        write(too_long_message(options_.max_message_bytes));
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ck::jsonio::JsonLimits limits;
      limits.max_bytes = options_.max_message_bytes;
      limits.max_string = options_.max_message_bytes;
      limits.max_depth = 64;
      std::string refusal;
      std::optional<Envelope> env = read_envelope(line, limits, refusal);
      if (!env || !env->reply || env->id != id) {
        backlog_.push_back(std::move(line));  // handled in turn once the client has answered
        continue;
      }
      ClientReply r;
      if (const JsonNode* result = env->message.find("result")) {
        r.kind = ClientReply::Kind::result;
        r.body = *result;
      } else {
        r.kind = ClientReply::Kind::error;
        r.body = *env->message.find("error");
      }
      return r;
    }
  }

  // The `requestId` of a `notifications/cancelled` line, as JSON text, or nothing.
  std::optional<std::string> cancellation_of(const std::string& line) const {
    ck::jsonio::JsonLimits limits;
    limits.max_bytes = options_.max_message_bytes;
    limits.max_string = options_.max_message_bytes;
    limits.max_depth = 64;
    std::string refusal;
    const std::optional<Envelope> env = read_envelope(line, limits, refusal);
    if (!env || !env->notification || env->method->text != "notifications/cancelled" ||
        env->params == nullptr || env->params->kind != JsonNode::Kind::object)
      return std::nullopt;
    const JsonNode* target = env->params->find("requestId");
    if (target == nullptr) return std::nullopt;
    return id_json(target);
  }

  // Cancels the call in flight whose client id is `target` (JSON text), if any.
  bool cancel_in_flight(const std::string& target) {
    for (const auto& [upstream_id, call] : in_flight_) {
      if (call.client_id == target) return upstream_.cancel(upstream_id);
    }
    return false;
  }

  // Reads what the client sent while calls are forwarded, without waiting: a cancellation of
  // a call in flight cancels it; one of a request not handled yet drops it before the kernel
  // decides anything; the rest is kept for after, in order (at most kMaxBacklog messages).
  void drain() {
    if (client_ == nullptr || client_ended_ || client_wait_ms_ == nullptr) return;
    *client_wait_ms_ = 0;
    std::string line;
    while (backlog_.size() < kMaxBacklog) {
      const LineReader::Got got = client_->next(line);
      if (got == LineReader::Got::timeout) break;
      if (got == LineReader::Got::end) {
        client_ended_ = true;
        break;
      }
      if (got == LineReader::Got::too_long) {
        write(too_long_message(options_.max_message_bytes));
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::optional<std::string> target = cancellation_of(line);
      if (!target) {
        backlog_.push_back(std::move(line));
        continue;
      }
      if (cancel_in_flight(*target)) continue;
      const auto queued = std::find_if(backlog_.begin(), backlog_.end(), [&](const std::string& l) {
        std::string refusal;
        const auto e = read_envelope(l, ck::jsonio::JsonLimits{}, refusal);
        return e && !e->notification && !e->reply && e->id == *target;
      });
      if (queued != backlog_.end()) {
        log_ << "clampai gateway: request " << *target
             << " cancelled before the kernel decided it: dropped\n";
        backlog_.erase(queued);
      }
    }
    *client_wait_ms_ = -1;
  }

  void notify(const std::string& method, const JsonNode* params) {
    // A cancellation of a call in flight (read while the client was asked something, or
    // without a watched input); of anything else, it comes too late.
    if (method == "notifications/cancelled") {
      if (params != nullptr && params->kind == JsonNode::Kind::object) {
        if (const JsonNode* target = params->find("requestId"))
          (void)cancel_in_flight(id_json(target));
      }
      return;
    }
    // The lifecycle's notification goes on, and the roots' when the upstream may ask for them.
    if (method != "notifications/initialized" &&
        !(method == "notifications/roots/list_changed" && bindings_.allows("roots/list")))
      return;
    std::string m = R"({"jsonrpc":"2.0","method":")" + method + "\"";
    if (params != nullptr) {
      m += ",\"params\":";
      append_json(m, *params);
    }
    upstream_.notify(m + "}");
  }

  [[noreturn]] void upstream_failed(const UpstreamAnswer& a, const std::string& method) {
    if (a.kind == UpstreamAnswer::Kind::error) {
      const JsonNode* msg = a.body.find("message");
      throw RpcError{kInternalError,
                     "the upstream refused `" + method +
                         "`: " + (msg != nullptr ? msg->text : std::string("(no message)"))};
    }
    throw RpcError{kInternalError, "the upstream is gone (" + upstream_.why_gone() + ")"};
  }

  std::string initialize(const std::string& id, const JsonNode* params) {
    std::string_view version = protocol_version(params, mcp_protocol_versions[0]);
    // The upstream is offered the client's capabilities of those its requests the spec allows
    // (roots, sampling, elicitation), and no others.
    JsonOut offered;
    offered.begin_object();
    const JsonNode* client_caps = params != nullptr && params->kind == JsonNode::Kind::object
                                      ? params->find("capabilities")
                                      : nullptr;
    for (const auto& [cap, method] : {std::pair{"roots", "roots/list"},
                                      std::pair{"sampling", "sampling/createMessage"},
                                      std::pair{"elicitation", "elicitation/create"}}) {
      const JsonNode* c = client_caps != nullptr && client_caps->kind == JsonNode::Kind::object
                              ? client_caps->find(cap)
                              : nullptr;
      if (c != nullptr && std::string_view(cap) == "elicitation") client_elicits_ = true;
      if (c == nullptr || !bindings_.allows(method)) continue;
      std::string raw;
      append_json(raw, *c);
      offered.key(cap).raw(raw);
    }
    offered.end_object();
    const UpstreamAnswer a = upstream_.initialize(version, false, offered.take());
    if (a.kind != UpstreamAnswer::Kind::result) upstream_failed(a, "initialize");
    version = protocol_version(&a.body, version);  // the upstream's answer, when we speak it
    upstream_capabilities_ = a.body.find("capabilities") != nullptr ? *a.body.find("capabilities")
                                                                    : JsonNode::make_object();
    JsonOut j;
    j.begin_object().key("protocolVersion").value(version);
    j.key("capabilities").begin_object().key("tools").begin_object();
    j.key("listChanged").value(false).end_object();
    for (const char* cap : {"resources", "prompts"}) {
      const bool allowed =
          std::any_of(bindings_.allow.begin(), bindings_.allow.end(), [&](const std::string& m) {
            return m.starts_with(std::string(cap) + "/");
          });
      if (const JsonNode* c = upstream_capabilities_.find(cap); c != nullptr && allowed) {
        std::string raw;
        append_json(raw, *c);
        j.key(cap).raw(raw);
      }
    }
    j.end_object();
    std::string upstream_name = "upstream";
    if (const JsonNode* info = a.body.find("serverInfo")) {
      if (const JsonNode* n = info->find("name"); n != nullptr && n->kind == JsonNode::Kind::string)
        upstream_name = n->text;
    }
    j.key("serverInfo").begin_object().key("name").value("clampai-gateway(" + upstream_name + ")");
    j.key("version").value(CLAMPAI_VERSION).end_object();
    j.key("instructions")
        .value("Every tool call passes the ClampAI safety kernel of task `" + model_->name +
               "` before it reaches `" + upstream_name +
               "`: a rejected call is never forwarded and says why, with the closest "
               "parameters the kernel would approve.");
    j.end_object();
    return result_message(id, j.take());
  }

  // The upstream's tools by name (every page), each with its pin or why it has none.
  const std::map<std::string, ListedTool>& upstream_tools() {
    try {
      return upstream_.tools();
    } catch (const InvalidArgument& e) {
      throw RpcError{kInternalError, e.what()};
    }
  }
  std::optional<std::string> hidden(const ToolBinding& b) {
    (void)upstream_tools();  // a listing that fails is the client's -32603
    return upstream_.hidden(b);
  }

  void report_hidden(const std::string& why) { log_ << "clampai gateway: " << why << "\n"; }

  std::string tools_list() {
    upstream_.forget_tools();  // the client's list is the upstream's of now, pins checked afresh
    const auto& tools = upstream_tools();
    std::string out = "{\"tools\":[";
    bool first = true;
    for (const auto& [name, listed] : tools) {
      const ToolBinding* b = bindings_.find(name);
      if (b == nullptr) continue;
      if (auto why = hidden(*b)) {
        report_hidden(*why);
        continue;
      }
      if (!first) out += ',';
      first = false;
      append_json(out, pinned_fields(listed.tool));  // what the pin covers, nothing else
    }
    for (const ToolBinding& b : bindings_.tools) {
      if (tools.find(b.tool) == tools.end()) report_hidden(*hidden(b));
    }
    return out + "]}";
  }

  // Decides and commits one step: the one place the gateway commits.
  driver::StepResult commit_step(const ck::Proposal& proposal) {
    return driver::step(*committer_, proposal);
  }

  std::string call_tool(const std::string& id, const JsonNode* params) {
    // Its answer, and a cancellation, must name one call.
    for (const auto& [upstream_id, call] : in_flight_) {
      if (call.client_id == id)
        throw RpcError{kInvalidRequest,
                       "tools/call: request id " + id +
                           " is already in flight: ids of requests in flight must differ"};
    }
    if (params == nullptr || params->kind != JsonNode::Kind::object)
      throw RpcError{kInvalidParams, "tools/call: params must be an object with `name`"};
    const JsonNode* name = params->find("name");
    if (name == nullptr || name->kind != JsonNode::Kind::string)
      throw RpcError{kInvalidParams, "tools/call: `name` must be a tool name"};
    const ToolBinding* b = bindings_.find(name->text);
    if (b == nullptr)
      throw RpcError{kInvalidParams,
                     "refused by the gateway: tool `" + name->text +
                         "` is not bound to an action in the spec (bindings.tools)"};
    if (auto why = hidden(*b)) {
      report_hidden(*why);
      throw RpcError{kInvalidParams, "refused by the gateway: " + *why};
    }
    const JsonNode* args = params->find("arguments");
    if (args != nullptr && args->kind == JsonNode::Kind::null) args = nullptr;
    if (args != nullptr && args->kind != JsonNode::Kind::object)
      throw RpcError{kInvalidParams, "tools/call: `arguments` must be an object"};
    // A call that cannot be forwarded is not charged.
    if (!upstream_.alive()) upstream_failed(UpstreamAnswer{}, "tools/call");
    const ck::Action& a = model_->actions[b->action];
    ck::ParamMap values;
    std::vector<std::pair<std::string, std::string>> texts;
    for (const auto& [index, expr] : b->params) {
      try {
        values.emplace_back(a.parameters[index].name, evaluate_binding(expr, args));
      } catch (const InvalidArgument& e) {
        throw RpcError{kInvalidParams, "tool `" + b->tool + "`: " + e.what()};
      }
      texts.emplace_back(a.parameters[index].name, expr.text);
    }
    const auto proposal = raw_proposal(*model_, b->action, values);
    if (std::holds_alternative<std::string>(proposal))
      throw RpcError{kInvalidParams, "tool `" + b->tool + "`: " + std::get<std::string>(proposal)};
    std::optional<ck::Outcome> committed;
    try {
      if (a.approval) return ask_approval(id, *b, params, args, values, texts, proposal);
      committed = commit_step(std::get<ck::Proposal>(proposal)).outcome;
    } catch (const InvalidArgument& e) {
      return result_message(id, tool_result(std::string("not executed: ") + e.what(), "{}", true));
    }
    const ck::Outcome& out = *committed;
    if (!out.decision.approved || !out.receipt)
      return rejected(id, *b, values, texts, out.decision);
    return forward(id, *b, params, args, *out.receipt);
  }

  // The client's answer to a call of `b` that the kernel rejected (`decision`): the decision
  // goes in `_meta` (and in structuredContent when the tool declares no output schema, which
  // it would not match).
  std::string rejected(const std::string& id,
                       const ToolBinding& b,
                       const ck::ParamMap& values,
                       const std::vector<std::pair<std::string, std::string>>& texts,
                       const ck::Decision& decision) {
    const Rejection r = rejection_result(
        *model_, committer_->view().situation(), b.action, values, decision, texts, kSolverMs);
    JsonOut j;
    j.begin_object().key("content").begin_array().begin_object();
    j.key("type").value("text").key("text").value(r.text).end_object().end_array();
    if (upstream_tools().at(b.tool).tool.find("outputSchema") == nullptr)
      j.key("structuredContent").raw(r.structured);
    j.key("isError").value(true).key("_meta").begin_object().key("clampai/decision");
    j.raw(r.structured).end_object().end_object();
    return result_message(id, j.take());
  }

  // A call of an action whose spec asks for an approval (docs/GATEWAY.md, "Approvals"): decided
  // now and, if approved, a ticket of the one book (asked by kGatewayClientPrincipal), answered
  // by --approvals: the human at the client asked through MCP elicitation (granted: decided
  // afresh and committed, then forwarded like any call), denied, or left pending (the call's
  // answer is the ticket, as `clampai mcp` answers it).
  std::string ask_approval(const std::string& id,
                           const ToolBinding& b,
                           const JsonNode* params,
                           const JsonNode* args,
                           const ck::ParamMap& values,
                           const std::vector<std::pair<std::string, std::string>>& texts,
                           const std::variant<ck::Proposal, std::string>& proposal) {
    const ck::Action& a = model_->actions[b.action];
    ck::Proposal p = std::get<ck::Proposal>(proposal);
    p.principal = std::string(kGatewayClientPrincipal);
    driver::Approvals::Asked asked;
    try {
      asked = approvals_->ask(p);
    } catch (const driver::TicketRefused& e) {  // too many waiting already
      return result_message(id, tool_result(std::string("not executed: ") + e.what(), "{}", true));
    }
    if (!asked.ticket) return rejected(id, b, values, texts, asked.decision);
    const driver::Ticket t = *asked.ticket;
    bool grant = false;
    std::string approver = "--approvals deny";
    if (options_.approvals != GatewayApprovals::deny) {
      if (options_.approvals == GatewayApprovals::skip || !client_elicits_)
        return result_message(id, pending_result(a, t));
      const std::optional<bool> said = elicit(b, t);
      if (!said && approvals_->now() < t.expires_us)  // nobody answered: it stays pending
        return result_message(id, pending_result(a, t));
      grant = said.value_or(false);  // too late: the book answers it expired
      approver = std::string(kGatewayApproverPrincipal);
    }
    std::optional<driver::StepResult> step;
    try {
      step.emplace(approvals_
                       ->answer(t.id,
                                grant,
                                approver,
                                {},
                                [this](const ck::Proposal& q) { return commit_step(q); })
                       .step);
    } catch (const driver::TicketRefused& e) {
      if (e.why != driver::TicketRefused::Why::expired) throw;
      return rejected(id,
                      b,
                      values,
                      texts,
                      driver::approval_refusal(b.action,
                                               ck::ReasonCode::approval_expired,
                                               a.id,
                                               "ticket " + t.id + " of `" + a.id +
                                                   "` expired: nobody approved it within its "
                                                   "ttl_s"));
    }
    const ck::Outcome& out = step->outcome;
    if (!out.decision.approved || !out.receipt) return rejected(id, b, values, texts, out.decision);
    return forward(id, b, params, args, *out.receipt);
  }

  // Asks the human at the client whether to approve ticket `t` (MCP elicitation, a yes/no
  // question), waiting at most until the ticket expires when the client's input is watched.
  // Whether they approve (declined or cancelled: no), or nothing when the client did not answer.
  std::optional<bool> elicit(const ToolBinding& b, const driver::Ticket& t) {
    const ck::Action& a = model_->actions[b.action];
    std::string what = "`" + a.id + "` (tool `" + b.tool + "`";
    for (std::size_t i = 0; i < t.params.size(); ++i)
      what += (i == 0 ? " with " : ", ") + t.params[i].first + "=" + t.params[i].second.to_string();
    what += ")";
    JsonOut j;
    j.begin_object().key("message").value(
        "Approve " + what + "? The ClampAI safety kernel approves it now; it waits for " +
        "your approval (ticket " + t.id + ", valid " + std::to_string(a.approval->ttl_s) +
        " s) and is decided again before it is forwarded.");
    j.key("requestedSchema").begin_object().key("type").value("object").key("properties");
    j.begin_object().key("approve").begin_object().key("type").value("boolean");
    j.key("title").value("Approve").key("description").value("Approve " + what);
    j.end_object().end_object().key("required").begin_array().value("approve").end_array();
    j.end_object().end_object();
    const ClientReply r = request_client("elicitation/create", j.take(), [this, &t] {
      return (t.expires_us - approvals_->now() + 999) / 1000;
    });
    if (r.kind != ClientReply::Kind::result) {
      log_ << "clampai gateway: ticket " << t.id << " of `" << a.id << "`: the client "
           << (r.kind == ClientReply::Kind::error ? "refused the elicitation" : r.why) << "\n";
      return std::nullopt;
    }
    const JsonNode* action = r.body.find("action");
    const JsonNode* content = r.body.find("content");
    const JsonNode* approve = content != nullptr && content->kind == JsonNode::Kind::object
                                  ? content->find("approve")
                                  : nullptr;
    return action != nullptr && action->kind == JsonNode::Kind::string &&
           action->text == "accept" && approve != nullptr &&
           approve->kind == JsonNode::Kind::boolean && approve->boolean;
  }

  // Forwards a call of `b` whose step the kernel committed (`receipt`) to the upstream.
  std::string forward(const std::string& id,
                      const ToolBinding& b,
                      const JsonNode* params,
                      const JsonNode* args,
                      const ck::Receipt& receipt) {
    std::string forward = "{\"name\":";
    append_json_string(forward, b.tool);
    // The arguments forwarded are those the bindings read: the same parse (duplicate keys and
    // invalid UTF-8 refused by it), written back.
    if (args != nullptr) {
      forward += ",\"arguments\":";
      append_json(forward, *args);
    }
    if (const JsonNode* meta = params->find("_meta")) {  // a progress token
      forward += ",\"_meta\":";
      append_json(forward, *meta);
    }
    forward += "}";
    // Not waited for: its answer is the client's when it comes (`finish`), and the client's
    // next messages are handled meanwhile, up to --max-in-flight calls in flight.
    const std::string upstream_id = upstream_.start("tools/call", forward);
    if (upstream_id.empty()) {
      in_flight_.emplace("", InFlight{id, b.action, b.tool, receipt});
      return finish("", UpstreamAnswer{});
    }
    in_flight_.emplace(upstream_id, InFlight{id, b.action, b.tool, receipt});
    return "";
  }

  // What became of the call in flight `upstream_id` (its step settled), answered `answer`: the
  // client's answer, or nothing for a call it cancelled (MCP's cancellation).
  std::string finish(const std::string& upstream_id, const UpstreamAnswer& answer) {
    auto node = in_flight_.extract(upstream_id);
    if (node.empty()) return "";
    const InFlight& call = node.mapped();
    const ck::Action& a = model_->actions[call.action];
    const std::string why = answer.kind == UpstreamAnswer::Kind::timeout
                                ? "the upstream did not answer in time"
                            : answer.kind == UpstreamAnswer::Kind::cancelled
                                ? "the client cancelled the call after "
                                  "the kernel committed it"
                                : "the upstream is gone (" + upstream_.why_gone() + ")";
    Settled settled = Settled::unknown;
    try {
      settled =
          settle_step(*committer_, {own_.get(), shared_.get()}, a, call.receipt, answer, why, log_);
    } catch (const std::exception& e) {  // a ledger gone, say: the client is answered all the same
      log_ << "clampai gateway: step " << call.receipt.sequence << " not settled: " << e.what()
           << "\n";
      if (answer.kind != UpstreamAnswer::Kind::cancelled)
        return error_message(
            call.client_id, kInternalError, std::string("gateway error: ") + e.what());
    }
    // A cancelled request is not answered (MCP's cancellation).
    if (answer.kind == UpstreamAnswer::Kind::cancelled) return "";
    if (auto message = answered(call.client_id, settled_answer(answer, settled, call.receipt)))
      return *std::move(message);
    return error_message(call.client_id,
                         kInternalError,
                         "tool `" + call.tool + "`: " + why +
                             "; the outcome is unknown (the tool may have acted): its charge "
                             "stays");
  }

  std::string pass_through(const std::string& id,
                           const std::string& method,
                           const JsonNode* params) {
    std::string p = "{}";
    if (params != nullptr) {
      p.clear();
      append_json(p, *params);
    }
    const UpstreamAnswer a = upstream_.request(method, p);
    if (auto message = answered(id, a)) return *std::move(message);
    upstream_failed(a, method);
  }

  // The client's answer to its request `id` when the upstream answered it (a result or an
  // error, passed on as given); nothing otherwise.
  static std::optional<std::string> answered(const std::string& id, const UpstreamAnswer& a) {
    std::string raw;
    if (a.kind == UpstreamAnswer::Kind::result) {
      append_json(raw, a.body);
      return result_message(id, raw);
    }
    if (a.kind != UpstreamAnswer::Kind::error) return std::nullopt;
    raw = R"({"jsonrpc":"2.0","id":)" + id + ",\"error\":";
    append_json(raw, a.body);
    return raw + "}";
  }

  std::shared_ptr<const ck::TaskModel> model_;
  const Bindings& bindings_;
  const GatewayOptions& options_;
  std::ostream& out_;
  std::ostream& log_;
  std::unique_ptr<ck::SafetyKernel> own_;
  std::shared_ptr<ck::Ledger> ledger_;
  std::unique_ptr<ck::SharedKernel> shared_;
  std::unique_ptr<driver::Committer> committer_;
  std::unique_ptr<driver::Approvals> approvals_;  // the tickets (the committer's trace)
  UpstreamClient upstream_;
  JsonNode upstream_capabilities_;
  LineReader* client_ = nullptr;
  int* client_wait_ms_ = nullptr;  // the client's reads wait this long (-1: at will)
  // A call forwarded and not answered yet.
  struct InFlight {
    std::string client_id;  // JSON text
    std::size_t action = 0;
    std::string tool;
    ck::Receipt receipt;
  };
  std::map<std::string, InFlight> in_flight_;  // by the upstream's request id
  std::deque<std::string> backlog_;
  bool client_ended_ = false;
  bool client_elicits_ = false;  // it declared the `elicitation` capability
  std::uint64_t asks_ = 0;
};

void check_options(const GatewayOptions& o) {
  if (o.max_in_flight < 1 || o.max_in_flight > 1024)
    throw InvalidArgument("--max-in-flight " + std::to_string(o.max_in_flight) +
                          ": must be 1 to 1024");
  if (!o.trace.empty() && !o.ledger.empty())
    throw InvalidArgument("--trace and --ledger exclude each other: a ledger keeps the trace");
}

}  // namespace

void OutcomeTracker::add(const ck::TraceEntry& entry) {
  if (entry.kind == ck::EntryKind::executed) pending_.insert(entry.sequence);
  if (entry.kind != ck::EntryKind::attested) return;
  const auto param = [&](std::string_view name) -> const ck::Value* {
    for (const auto& [k, v] : entry.params) {
      if (k == name) return &v;
    }
    return nullptr;
  };
  const ck::Value* attestor = param("attestor");
  const ck::Value* detail = param("detail");
  if (attestor == nullptr || detail == nullptr || attestor->kind() != ck::Value::Kind::string ||
      detail->kind() != ck::Value::Kind::string || attestor->as_string() != "gateway")
    return;
  // `step N: OUTCOME...`, as record_outcome writes it.
  const std::string& d = detail->as_string();
  if (!d.starts_with("step ")) return;
  std::uint64_t step = 0;
  const auto [end, ec] = std::from_chars(d.data() + 5, d.data() + d.size(), step);
  if (ec == std::errc() && end != d.data() + 5 && *end == ':') pending_.erase(step);
}

namespace {

// What the gateway refuses to serve whatever its transport.
void check_servable(const ck::TaskModel& model, const GatewayOptions& options, bool over_http) {
  check_options(options);
  if (ck::needs_reference_monitor(model)) throw InvalidArgument(monitor_refusal(model.name));
  for (const ck::Action& a : model.actions) {
    if (a.approval && over_http)
      throw InvalidArgument("task `" + model.name + "`: action `" + a.id +
                            "` waits for an approval, which the gateway asks of the client "
                            "through MCP elicitation, and over HTTP it has no stream to ask on: "
                            "serve it over stdio (without --port)");
  }
}

// The one loop over the client's lines, read by `reader`; through `fd` (reads waiting `*wait_ms`)
// also while a call is forwarded, when it has one.
int serve(std::shared_ptr<const ck::TaskModel> model,
          const Bindings& bindings,
          const GatewayOptions& options,
          LineReader& reader,
          int fd,
          int* wait_ms,
          std::ostream& out,
          std::ostream& log) {
  check_servable(*model, options, /*over_http=*/false);
  std::optional<Gateway> started;
  try {
    started.emplace(std::move(model), bindings, options, out, log);
  } catch (const UpstreamError& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
  Gateway& gateway = *started;
  gateway.attach(reader, fd, wait_ms);
  // Up to --max-in-flight calls are forwarded at once; while that many are, the client is read
  // (for its cancellations) but nothing it sends is handled until one is answered.
  const bool watched = fd >= 0 && wait_ms != nullptr;
  std::string line;
  for (;;) {
    if (gateway.full()) {
      gateway.await_answer(false);
      continue;
    }
    if (auto kept = gateway.take_backlog()) {
      gateway.handle(*kept);
      continue;
    }
    if (gateway.calls_in_flight() && (watched || gateway.client_ended())) {
      gateway.await_answer(watched && !gateway.client_ended());
      continue;
    }
    if (gateway.client_ended()) break;
    const LineReader::Got got = reader.next(line);
    if (got == LineReader::Got::end || got == LineReader::Got::timeout) {
      gateway.set_client_ended();  // the calls in flight are still answered
      continue;
    }
    if (got == LineReader::Got::too_long) {
      out << too_long_message(options.max_message_bytes) << '\n' << std::flush;
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    gateway.handle(line);
  }
  return 0;
}

}  // namespace

int run_gateway(std::shared_ptr<const ck::TaskModel> model,
                const Bindings& bindings,
                const GatewayOptions& options,
                std::istream& in,
                std::ostream& out,
                std::ostream& log) {
  LineReader reader(in, options.max_message_bytes);
  return serve(std::move(model), bindings, options, reader, -1, nullptr, out, log);
}

int run_gateway(std::shared_ptr<const ck::TaskModel> model,
                const Bindings& bindings,
                const GatewayOptions& options,
                int in_fd,
                std::ostream& out,
                std::ostream& log) {
  int wait_ms = -1;
  LineReader reader(
      [in_fd, &wait_ms](char* buf, std::size_t cap) -> std::ptrdiff_t {
        for (;;) {
          pollfd p{in_fd, POLLIN, 0};
          const int r = ::poll(&p, 1, wait_ms);
          if (r < 0 && errno == EINTR) continue;
          if (r == 0) return -1;
          const ssize_t n = ::read(in_fd, buf, cap);
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          return n < 0 ? 0 : n;
        }
      },
      options.max_message_bytes);
  return serve(std::move(model), bindings, options, reader, in_fd, &wait_ms, out, log);
}

int run_gateway_http(std::shared_ptr<const ck::TaskModel> model,
                     const Bindings& bindings,
                     const GatewayOptions& options,
                     const GatewayHttpOptions& http,
                     const std::function<void(const std::string& url)>& on_listening,
                     std::ostream& log) {
  check_servable(*model, options, /*over_http=*/true);
  // The gateway writes its answers here; each exchange takes what one message made it write.
  std::ostringstream sent;
  std::optional<Gateway> started;
  try {
    started.emplace(std::move(model), bindings, options, sent, log);
  } catch (const UpstreamError& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
  Gateway& gateway = *started;
  std::mutex one_at_a_time;
  const McpExchange exchange = [&](const std::string& message) {
    const std::lock_guard lock(one_at_a_time);
    sent.str("");
    sent.clear();
    gateway.handle(message);
    while (gateway.calls_in_flight()) gateway.await_answer(false);
    return sent.str();
  };
  return serve_mcp_http(exchange, http, on_listening, log);
}

int print_bindings(const GatewayOptions& options, std::ostream& out, std::ostream& log) {
  std::optional<UpstreamClient> started;
  try {
    started.emplace(options, log);
  } catch (const UpstreamError& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
  UpstreamClient& up = *started;
  try {
    if (up.initialize(mcp_protocol_versions[0], true).kind != UpstreamAnswer::Kind::result)
      throw InvalidArgument("the upstream did not answer `initialize`");
    // One tool a line, to edit by hand.
    std::string text = "{\n  \"bindings\": {\n    \"tools\": {";
    bool first = true;
    for (const auto& [name, listed] : up.tools()) {
      if (!listed.unpinnable.empty()) {
        log << "clampai gateway: tool `" << name << "`: " << listed.unpinnable << "\n";
        continue;
      }
      text += first ? "\n      " : ",\n      ";
      first = false;
      append_json_string(text, name);
      text += R"(: {"action": "", "pin": ")" + listed.pin + R"(", "params": {}})";
    }
    out << text << "\n    }\n  }\n}\n";
    return 0;
  } catch (const InvalidArgument& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace clampai::server
