// `clampai gateway`: an MCP server on stdio for the client, an MCP client of one upstream
// server (a child process on pipes). Every tools/call is decided and committed by the kernel
// before it is forwarded (docs/GATEWAY.md).
#include "clampai/server/gateway.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <variant>

#include "clampai/driver/committer.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/ledger/ledger.hpp"
#include "clampai/server/mcp.hpp"
#include "json_out.hpp"
#include "jsonrpc.hpp"
#include "ops.hpp"
#include "task.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace clampai::server {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;
using namespace jsonrpc;  // NOLINT(google-build-using-namespace)

namespace {

constexpr std::uint32_t kSolverMs = 2000;  // repair's limit for the closest approved values

// Every page of an upstream's `tools/list`: `page(params)` asks for one and answers its result;
// `each(name, tool)` sees every tool that has a name. At most 1,000 pages.
// @throws InvalidArgument if a page has no `tools` array.
void list_tools(const std::function<JsonNode(const std::string& params)>& page,
                const std::function<void(const std::string& name, const JsonNode& tool)>& each) {
  std::string cursor;
  for (int n = 0; n < 1000; ++n) {
    std::string params = "{}";
    if (!cursor.empty()) {
      params = "{\"cursor\":";
      append_json_string(params, cursor);
      params += "}";
    }
    const JsonNode r = page(params);
    const JsonNode* tools = r.find("tools");
    if (tools == nullptr || tools->kind != JsonNode::Kind::array)
      throw InvalidArgument("the upstream's tools/list has no `tools` array");
    for (const JsonNode& t : tools->items) {
      const JsonNode* name = t.find("name");
      if (name != nullptr && name->kind == JsonNode::Kind::string) each(name->text, t);
    }
    const JsonNode* next = r.find("nextCursor");
    if (next == nullptr || next->kind != JsonNode::Kind::string || next->text.empty()) return;
    cursor = next->text;
  }
}

// The upstream could not be started (exit status 1, not a usage error).
class UpstreamError : public Error {
 public:
  using Error::Error;
};

// The upstream server: a child process whose stdin and stdout are pipes (no shell).
class Upstream {
 public:
  Upstream(const GatewayOptions& o)
      : reader_([this](char* buf, std::size_t cap) { return read_some(buf, cap); },
                o.max_upstream_bytes),
        timeout_ms_(o.upstream_timeout_ms),
        limit_(o.max_upstream_bytes) {
    if (o.command.empty()) throw InvalidArgument("no upstream command: give it after `--`");
    std::vector<std::string> env;
    if (!o.clear_env) {
      for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    }
    for (const std::string& kv : o.env) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw InvalidArgument("--env `" + kv + "`: must be NAME=VALUE");
      const std::string name = kv.substr(0, eq + 1);
      std::erase_if(env, [&](const std::string& s) { return s.starts_with(name); });
      env.push_back(kv);
    }
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
      throw UpstreamError(std::string("cannot make pipes: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    // Nothing else of the gateway's (the trace, a ledger's connection) reaches the upstream.
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    std::vector<char*> argv;
    for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) {
      pid_ = -1;
      throw UpstreamError("cannot start the upstream `" + o.command[0] + "`: " + std::strerror(rc));
    }
  }
  ~Upstream() { stop(); }
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  [[nodiscard]] bool alive() const { return alive_; }
  [[nodiscard]] const std::string& why_gone() const { return why_; }

  // Writes one message; false if the upstream is gone.
  bool send(const std::string& line) {
    if (!alive_) return false;
    std::string data = line + "\n";
    std::size_t at = 0;
    while (at < data.size()) {
      const ssize_t n = ::write(to_, data.data() + at, data.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        gone("its input is closed");
        return false;
      }
      at += static_cast<std::size_t>(n);
    }
    return true;
  }

  /// Starts the time the upstream has for its answer: `upstream_timeout_ms` from now, however
  /// many other messages it sends meanwhile.
  void start_clock() {
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  }

  enum class Got : std::uint8_t { message, gone, timeout };
  // The next message of the upstream (malformed ones are logged and skipped).
  Got next(Envelope& env, std::ostream& log) {
    std::string line;
    for (;;) {
      if (!alive_) return Got::gone;
      const LineReader::Got got = reader_.next(line);
      if (got == LineReader::Got::timeout) return Got::timeout;
      if (got == LineReader::Got::end) {
        gone("it closed its output");
        return Got::gone;
      }
      if (got == LineReader::Got::too_long) {
        log << "clampai gateway: the upstream sent a message longer than " << limit_
            << " bytes: dropped\n";
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      ck::jsonio::JsonLimits limits;
      limits.max_bytes = limit_;
      limits.max_string = limit_;
      limits.max_depth = 64;
      std::string refusal;
      auto e = read_envelope(line, limits, refusal);
      if (!e) {
        log << "clampai gateway: the upstream sent a malformed message, dropped: " << refusal
            << "\n";
        continue;
      }
      env = std::move(*e);
      return Got::message;
    }
  }

  void stop() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
    if (from_ >= 0) ::close(from_);
    from_ = -1;
    if (pid_ > 0) {
      // Closing its input ends a well-behaved server; one that does not end is killed.
      int status = 0;
      for (int i = 0; i < 50; ++i) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        pollfd none{};
        ::poll(&none, 0, 20);
      }
      if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
      pid_ = -1;
    }
    alive_ = false;
  }

  // After a timeout: the upstream cannot be trusted to answer in order any more.
  void kill_it(const std::string& why) {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    gone(why);
  }

 private:
  std::ptrdiff_t read_some(char* buf, std::size_t cap) {
    for (;;) {
      pollfd p{from_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline_ - std::chrono::steady_clock::now());
      const int r = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return -1;
      const ssize_t n = ::read(from_, buf, cap);
      if (n < 0 && errno == EINTR) continue;
      return n < 0 ? 0 : n;
    }
  }
  void gone(const std::string& why) {
    if (!alive_) return;
    alive_ = false;
    why_ = why;
  }

  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  LineReader reader_;
  int timeout_ms_;
  std::size_t limit_;
  bool alive_ = true;
  std::string why_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::now();
};

// What the upstream answered to one request.
struct Answer {
  enum class Kind : std::uint8_t { result, error, gone, timeout } kind = Kind::gone;
  JsonNode body;  // the result, or the error object
};

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
        upstream_(options) {
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

  // Answers one line of the client (nothing for a notification or a reply).
  void handle(const std::string& line) {
    ck::jsonio::JsonLimits limits;
    limits.max_bytes = options_.max_message_bytes;
    limits.max_string = options_.max_message_bytes;
    limits.max_depth = 64;
    std::string refusal;
    const std::optional<Envelope> env = read_envelope(line, limits, refusal);
    if (!env) return write(refusal);
    if (env->reply) return;  // the gateway asks the client nothing
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

  void notify(const std::string& method, const JsonNode* params) {
    // The lifecycle's notification goes on; cancellations cannot reach a call in flight (calls
    // are serialised: the client's next message is read when the answer is in).
    if (method != "notifications/initialized") return;
    std::string m = R"({"jsonrpc":"2.0","method":")" + method + "\"";
    if (params != nullptr) {
      m += ",\"params\":";
      append_json(m, *params);
    }
    upstream_.send(m + "}");
  }

  // Sends a request to the upstream and waits for its answer, refusing what it asks of the
  // client and passing on its progress and log notifications.
  Answer request(const std::string& method, const std::string& params_json) {
    Answer a;
    if (!upstream_.alive()) return a;
    const std::string id = "\"clampai-gateway-" + std::to_string(++next_id_) + "\"";
    std::string m = R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":)";
    append_json_string(m, method);
    m += ",\"params\":" + params_json + "}";
    if (!upstream_.send(m)) return a;
    upstream_.start_clock();
    Envelope env;
    for (;;) {
      const Upstream::Got got = upstream_.next(env, log_);
      if (got == Upstream::Got::gone) {
        a.kind = Answer::Kind::gone;
        return a;
      }
      if (got == Upstream::Got::timeout) {
        upstream_.kill_it("it did not answer `" + method + "` in time");
        a.kind = Answer::Kind::timeout;
        return a;
      }
      if (env.reply) {
        if (env.id != id) {
          log_ << "clampai gateway: the upstream answered an unknown id " << env.id
               << ": dropped\n";
          continue;
        }
        if (const JsonNode* r = env.message.find("result")) {
          a.kind = Answer::Kind::result;
          a.body = *r;
        } else {
          a.kind = Answer::Kind::error;
          a.body = *env.message.find("error");
        }
        return a;
      }
      const std::string& what = env.method->text;
      if (!env.notification) {
        // Roots, sampling, elicitation...: the gateway asks the client nothing on the
        // upstream's behalf.
        log_ << "clampai gateway: refused the upstream's request `" << what << "`\n";
        upstream_.send(what == "ping" ? result_message(env.id, "{}")
                                      : error_message(env.id,
                                                      kMethodNotFound,
                                                      "refused by the gateway: `" + what +
                                                          "` is not passed to the client"));
        continue;
      }
      if (what == "notifications/tools/list_changed") pins_.reset();
      if (what == "notifications/message" || what == "notifications/progress") {
        std::string n;
        append_json(n, env.message);
        write(n);
      }
    }
  }

  [[noreturn]] void upstream_failed(const Answer& a, const std::string& method) {
    if (a.kind == Answer::Kind::error) {
      const JsonNode* msg = a.body.find("message");
      throw RpcError{kInternalError,
                     "the upstream refused `" + method +
                         "`: " + (msg != nullptr ? msg->text : std::string("(no message)"))};
    }
    throw RpcError{
        kInternalError,
        "the upstream is gone (" +
            (upstream_.why_gone().empty() ? std::string("no answer") : upstream_.why_gone()) + ")"};
  }

  std::string initialize(const std::string& id, const JsonNode* params) {
    std::string_view version = protocol_version(params, mcp_protocol_versions[0]);
    // The upstream is offered no client capabilities (roots, sampling, elicitation).
    JsonOut p;
    p.begin_object().key("protocolVersion").value(version);
    p.key("capabilities").begin_object().end_object();
    p.key("clientInfo").begin_object().key("name").value("clampai-gateway");
    p.key("version").value(CLAMPAI_VERSION).end_object().end_object();
    const Answer a = request("initialize", p.take());
    if (a.kind != Answer::Kind::result) upstream_failed(a, "initialize");
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
  struct Listed {
    JsonNode tool;
    std::string pin;
    std::string unpinnable;
  };
  const std::map<std::string, Listed>& upstream_tools() {
    if (pins_) return *pins_;
    std::map<std::string, Listed> tools;
    try {
      list_tools(
          [&](const std::string& params) {
            Answer a = request("tools/list", params);
            if (a.kind != Answer::Kind::result) upstream_failed(a, "tools/list");
            return std::move(a.body);
          },
          [&](const std::string& name, const JsonNode& t) {
            Listed l;
            l.tool = t;
            try {
              l.pin = tool_pin(t);
            } catch (const InvalidArgument& e) {
              l.unpinnable = e.what();
            }
            tools.emplace(name, std::move(l));
          });
    } catch (const InvalidArgument& e) {
      throw RpcError{kInternalError, e.what()};
    }
    pins_ = std::move(tools);
    return *pins_;
  }

  // Why the bound tool `b` is not offered, or nothing.
  std::optional<std::string> hidden(const ToolBinding& b) {
    const auto& tools = upstream_tools();
    const auto it = tools.find(b.tool);
    if (it == tools.end()) return "the upstream has no tool `" + b.tool + "`";
    if (!it->second.unpinnable.empty()) return "tool `" + b.tool + "`: " + it->second.unpinnable;
    if (it->second.pin != b.pin)
      return "tool `" + b.tool + "` changed since it was pinned (pin " + b.pin + ", now " +
             it->second.pin + "): hidden, refused";
    return std::nullopt;
  }

  void report_hidden(const std::string& why) { log_ << "clampai gateway: " << why << "\n"; }

  std::string tools_list() {
    pins_.reset();  // the client's list is the upstream's of now, its pins checked afresh
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
  ck::Outcome commit_step(const ck::Proposal& proposal) {
    return driver::step(*committer_, proposal).outcome;
  }

  // Undoes a step whose call failed: rolled back when it is still the latest.
  bool undo_step(const ck::Receipt& receipt) {
    try {
      return committer_->rollback(receipt).has_value();
    } catch (const InvalidArgument& e) {
      log_ << "clampai gateway: step " << receipt.sequence << " not undone: " << e.what() << "\n";
      return false;
    }
  }

  // Records what became of a forwarded step (an `attested` entry of the trace, attestor
  // `gateway`), and says on the log what was not `ok`.
  void record_outcome(const ck::Action& a,
                      const ck::Receipt& receipt,
                      std::string_view outcome,
                      const std::string& detail) {
    if (outcome != "ok")  // the trace keeps every outcome; the log what went wrong
      log_ << "clampai gateway: step " << receipt.sequence << " (`" << a.id << "`): " << outcome
           << (detail.empty() ? "" : ": " + detail) << "\n";
    if (!own_) return;  // a shared ledger takes only the kernel's entries
    ck::AttestationRecord r;
    r.attestor = "gateway";
    r.gate = a.id;
    r.passed = outcome == "ok";
    r.evidence = "step " + std::to_string(receipt.sequence) + ": " + std::string(outcome);
    if (outcome != "ok") r.error = r.evidence + (detail.empty() ? "" : ": " + detail);
    try {
      (void)own_->record_attested(ck::attestation_entry(r));
    } catch (const std::exception& e) {
      log_ << "clampai gateway: could not record the outcome: " << e.what() << "\n";
    }
  }

  std::string call_tool(const std::string& id, const JsonNode* params) {
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
    if (!upstream_.alive()) upstream_failed(Answer{}, "tools/call");
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
      committed = commit_step(std::get<ck::Proposal>(proposal));
    } catch (const InvalidArgument& e) {
      return result_message(id, tool_result(std::string("not executed: ") + e.what(), "{}", true));
    }
    const ck::Outcome& out = *committed;
    if (!out.decision.approved || !out.receipt) {
      // The decision goes in `_meta` (and in structuredContent when the tool declares no
      // output schema, which it would not match).
      const Rejection r = rejection_result(*model_,
                                           committer_->view().situation(),
                                           b->action,
                                           values,
                                           out.decision,
                                           texts,
                                           kSolverMs);
      JsonOut j;
      j.begin_object().key("content").begin_array().begin_object();
      j.key("type").value("text").key("text").value(r.text).end_object().end_array();
      if (upstream_tools().at(b->tool).tool.find("outputSchema") == nullptr)
        j.key("structuredContent").raw(r.structured);
      j.key("isError").value(true).key("_meta").begin_object().key("clampai/decision");
      j.raw(r.structured).end_object().end_object();
      return result_message(id, j.take());
    }
    // Approved and committed: now the call may happen.
    std::string forward = "{\"name\":";
    append_json_string(forward, b->tool);
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
    const Answer answer = request("tools/call", forward);
    const ck::Receipt receipt = *out.receipt;
    switch (answer.kind) {
      case Answer::Kind::result: {
        const JsonNode* e = answer.body.find("isError");
        std::string raw;
        append_json(raw, answer.body);
        if (e != nullptr && e->kind == JsonNode::Kind::boolean && e->boolean) {
          record_outcome(a, receipt, "error", "the tool answered isError");
          const bool undone = undo_step(receipt);
          log_ << "clampai gateway: step " << receipt.sequence
               << (undone ? " rolled back" : " stays charged") << "\n";
        } else {
          record_outcome(a, receipt, "ok", "");
        }
        return result_message(id, raw);
      }
      case Answer::Kind::error: {
        const JsonNode* msg = answer.body.find("message");
        record_outcome(a, receipt, "error", msg != nullptr ? msg->text : "");
        const bool undone = undo_step(receipt);
        log_ << "clampai gateway: step " << receipt.sequence
             << (undone ? " rolled back" : " stays charged") << "\n";
        std::string raw = R"({"jsonrpc":"2.0","id":)" + id + ",\"error\":";
        append_json(raw, answer.body);
        return raw + "}";
      }
      case Answer::Kind::gone:
      case Answer::Kind::timeout:
        break;
    }
    const std::string why = answer.kind == Answer::Kind::timeout
                                ? "the upstream did not answer in time"
                                : "the upstream is gone (" + upstream_.why_gone() + ")";
    record_outcome(a, receipt, "unknown", why);
    throw RpcError{kInternalError,
                   "tool `" + b->tool + "`: " + why +
                       "; the outcome is unknown (the tool may have acted): its charge stays"};
  }

  std::string pass_through(const std::string& id,
                           const std::string& method,
                           const JsonNode* params) {
    std::string p = "{}";
    if (params != nullptr) {
      p.clear();
      append_json(p, *params);
    }
    const Answer a = request(method, p);
    std::string raw;
    if (a.kind == Answer::Kind::result) {
      append_json(raw, a.body);
      return result_message(id, raw);
    }
    if (a.kind == Answer::Kind::error) {
      std::string m = R"({"jsonrpc":"2.0","id":)" + id + ",\"error\":";
      append_json(m, a.body);
      return m + "}";
    }
    upstream_failed(a, method);
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
  Upstream upstream_;
  std::uint64_t next_id_ = 0;
  JsonNode upstream_capabilities_;
  std::optional<std::map<std::string, Listed>> pins_;
};

void check_options(const GatewayOptions& o) {
  if (o.max_in_flight != 1)
    throw InvalidArgument("--max-in-flight " + std::to_string(o.max_in_flight) +
                          ": only 1 is supported yet (calls are serialised)");
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

int run_gateway(std::shared_ptr<const ck::TaskModel> model,
                const Bindings& bindings,
                const GatewayOptions& options,
                std::istream& in,
                std::ostream& out,
                std::ostream& log) {
  check_options(options);
  if (ck::needs_reference_monitor(*model)) throw InvalidArgument(monitor_refusal(model->name));
  for (const ck::Action& a : model->actions)
    if (a.approval)
      throw InvalidArgument("task `" + model->name + "`: action `" + a.id +
                            "` waits for an approval, which the gateway cannot ask for yet (it "
                            "would forward the call unapproved): serve it with `clampai serve`");
  std::signal(SIGPIPE, SIG_IGN);  // a dead upstream is an error on write, not a signal
  std::optional<Gateway> started;
  try {
    started.emplace(std::move(model), bindings, options, out, log);
  } catch (const UpstreamError& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
  Gateway& gateway = *started;
  LineReader reader(in, options.max_message_bytes);
  std::string line;
  for (;;) {
    const LineReader::Got got = reader.next(line);
    if (got == LineReader::Got::end || got == LineReader::Got::timeout) break;
    if (got == LineReader::Got::too_long) {
      out << error_message("null",
                           kInvalidRequest,
                           "invalid request: a message longer than " +
                               std::to_string(options.max_message_bytes) +
                               " bytes (--max-message-bytes), discarded up to its end of line")
          << '\n'
          << std::flush;
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    gateway.handle(line);
  }
  return 0;
}

int print_bindings(const GatewayOptions& options, std::ostream& out, std::ostream& log) {
  std::signal(SIGPIPE, SIG_IGN);
  std::optional<Upstream> started;
  try {
    started.emplace(options);
  } catch (const UpstreamError& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
  Upstream& up = *started;
  const auto ask = [&](const std::string& method, const std::string& params) -> JsonNode {
    const std::string m =
        R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"(","params":)" + params + "}";
    if (!up.send(m)) throw InvalidArgument("the upstream is gone");
    up.start_clock();
    Envelope env;
    for (;;) {
      if (up.next(env, log) != Upstream::Got::message)
        throw InvalidArgument("the upstream did not answer `" + method + "`");
      if (!env.reply) continue;
      if (const JsonNode* r = env.message.find("result")) return *r;
      throw InvalidArgument("the upstream refused `" + method + "`");
    }
  };
  try {
    (void)ask("initialize",
              std::string(R"({"protocolVersion":")") + std::string(mcp_protocol_versions[0]) +
                  R"(","capabilities":{},"clientInfo":{"name":"clampai-gateway","version":")" +
                  CLAMPAI_VERSION + "\"}}");
    up.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    // One tool a line, to edit by hand.
    std::string text = "{\n  \"bindings\": {\n    \"tools\": {";
    bool first = true;
    list_tools([&](const std::string& params) { return ask("tools/list", params); },
               [&](const std::string& name, const JsonNode& t) {
                 std::string pin;
                 try {
                   pin = tool_pin(t);
                 } catch (const InvalidArgument& e) {
                   log << "clampai gateway: tool `" << name << "`: " << e.what() << "\n";
                   return;
                 }
                 text += first ? "\n      " : ",\n      ";
                 first = false;
                 append_json_string(text, name);
                 text += R"(: {"action": "", "pin": ")" + pin + R"(", "params": {}})";
               });
    out << text << "\n    }\n  }\n}\n";
    return 0;
  } catch (const InvalidArgument& e) {
    log << "clampai gateway: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace clampai::server
