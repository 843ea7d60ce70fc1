// The one MCP client of an upstream server (upstream.hpp): `clampai gateway` and `clampai agent
// --upstream` forward through it.
#include "upstream.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "clampai/driver/committer.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/server/mcp.hpp"
#include "json_out.hpp"
#include "jsonrpc.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace clampai::server {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;
using namespace jsonrpc;  // NOLINT(google-build-using-namespace)

namespace {

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

}  // namespace

// The upstream server's process: a child whose stdin and stdout are pipes (no shell).
class UpstreamProcess {
 public:
  explicit UpstreamProcess(const GatewayOptions& o)
      : reader_([this](char* buf, std::size_t cap) { return read_some(buf, cap); },
                o.max_upstream_bytes),
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
  ~UpstreamProcess() { stop(); }
  UpstreamProcess(const UpstreamProcess&) = delete;
  UpstreamProcess& operator=(const UpstreamProcess&) = delete;

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
      // The client is read meanwhile, when it is watched: once it has cancelled a request, or
      // `stop_` holds for another reason, the wait ends (as a timeout, with `stopped_` set).
      if (watch_ && watch_->buffered()) watch_->drain();
      if (stop_ && stop_()) {
        stopped_ = true;
        return -1;
      }
      const int client = watch_ ? watch_->fd() : -1;
      std::array<pollfd, 2> p{pollfd{from_, POLLIN, 0}, pollfd{client, POLLIN, 0}};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline_ - std::chrono::steady_clock::now());
      const int r = ::poll(
          p.data(), client >= 0 ? 2 : 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return -1;
      if (p[0].revents == 0) {
        watch_->drain();
        continue;
      }
      const ssize_t n = ::read(from_, buf, cap);
      if (n < 0 && errno == EINTR) continue;
      return n < 0 ? 0 : n;
    }
  }

 public:
  std::optional<ClientWatch> watch_;
  std::function<bool()> stop_;  // while a message is waited for: whether to stop waiting
  bool stopped_ = false;        // the last wait ended by `stop_`, not by a deadline
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::now();

 private:
  void gone(const std::string& why) {
    if (!alive_) return;
    alive_ = false;
    why_ = why;
  }

  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  LineReader reader_;
  std::size_t limit_;
  bool alive_ = true;
  std::string why_;
};

namespace {

std::unique_ptr<UpstreamProcess> start_upstream(const GatewayOptions& options) {
  std::signal(SIGPIPE, SIG_IGN);  // a dead upstream is an error on write, not a signal
  return std::make_unique<UpstreamProcess>(options);
}

}  // namespace

UpstreamClient::UpstreamClient(const GatewayOptions& options,
                               std::ostream& log,
                               Notify notify,
                               Ask ask)
    : process_(start_upstream(options)),
      log_(log),
      notify_(std::move(notify)),
      ask_(std::move(ask)),
      timeout_ms_(options.upstream_timeout_ms) {}
UpstreamClient::~UpstreamClient() = default;

void UpstreamClient::watch(std::optional<ClientWatch> watch) {
  process_->watch_ = std::move(watch);
}

bool UpstreamClient::alive() const { return process_->alive(); }
std::string UpstreamClient::why_gone() const {
  return process_->why_gone().empty() ? std::string("no answer") : process_->why_gone();
}
bool UpstreamClient::notify(const std::string& message) { return process_->send(message); }

std::string UpstreamClient::start(const std::string& method, const std::string& params_json) {
  UpstreamProcess& up = *process_;
  if (!up.alive()) return "";
  std::string id = "\"clampai-gateway-" + std::to_string(++next_id_) + "\"";
  std::string m = R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":)";
  append_json_string(m, method);
  m += ",\"params\":" + params_json + "}";
  if (!up.send(m)) return "";
  pending_.emplace(
      id,
      Pending{method, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_)});
  return id;
}

bool UpstreamClient::cancel(const std::string& id) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return false;
  pending_.erase(it);
  // Passed on; the upstream's late answer, if any, is dropped as one to an unknown id.
  (void)process_->send(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" + id +
      R"(,"reason":"cancelled by the client"}})");
  UpstreamAnswer a;
  a.kind = UpstreamAnswer::Kind::cancelled;
  done_.emplace_back(id, std::move(a));
  return true;
}

UpstreamAnswer UpstreamClient::request(const std::string& method, const std::string& params_json) {
  const std::string id = start(method, params_json);
  if (id.empty()) return UpstreamAnswer{};
  for (;;) {
    const auto it =
        std::find_if(done_.begin(), done_.end(), [&](const auto& d) { return d.first == id; });
    if (it != done_.end()) {
      UpstreamAnswer a = std::move(it->second);
      done_.erase(it);
      return a;
    }
    pump({});
  }
}

std::optional<std::pair<std::string, UpstreamAnswer>> UpstreamClient::next_answer(
    const std::function<bool()>& stop) {
  for (;;) {
    if (!done_.empty()) {
      auto d = std::move(done_.front());
      done_.pop_front();
      return d;
    }
    if (pending_.empty() || (stop && stop())) return std::nullopt;
    pump(stop);
  }
}

void UpstreamClient::pump(const std::function<bool()>& stop) {
  UpstreamProcess& up = *process_;
  const auto all_gone = [&] {
    for (auto& [id, p] : pending_) done_.emplace_back(id, UpstreamAnswer{});
    pending_.clear();
  };
  if (!up.alive() || pending_.empty()) return all_gone();
  // The time the upstream has: until the first deadline of the requests outstanding, however
  // many other messages it sends meanwhile.
  const auto first =
      std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
        return a.second.deadline < b.second.deadline;
      });
  up.deadline_ = first->second.deadline;
  const std::size_t before = done_.size();
  up.stop_ = [&] { return done_.size() > before || (stop && stop()); };
  up.stopped_ = false;
  Envelope env;
  const UpstreamProcess::Got got = up.next(env, log_);
  up.stop_ = nullptr;
  if (got == UpstreamProcess::Got::gone) return all_gone();
  if (got == UpstreamProcess::Got::timeout) {
    if (up.stopped_) return;
    // The first deadline passed: the upstream cannot be trusted to answer any more.
    const auto late =
        std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
          return a.second.deadline < b.second.deadline;
        });
    up.kill_it("it did not answer `" + late->second.method + "` in time");
    UpstreamAnswer a;
    a.kind = UpstreamAnswer::Kind::timeout;
    done_.emplace_back(late->first, std::move(a));
    pending_.erase(late);
    return all_gone();
  }
  if (env.reply) {
    const auto it = pending_.find(env.id);
    if (it == pending_.end()) {
      log_ << "clampai gateway: the upstream answered an unknown id " << env.id << ": dropped\n";
      return;
    }
    UpstreamAnswer a;
    if (const JsonNode* r = env.message.find("result")) {
      a.kind = UpstreamAnswer::Kind::result;
      a.body = *r;
    } else {
      a.kind = UpstreamAnswer::Kind::error;
      a.body = *env.message.find("error");
    }
    done_.emplace_back(it->first, std::move(a));
    pending_.erase(it);
    return;
  }
  const std::string& what = env.method->text;
  if (!env.notification) {
    // Roots, sampling, elicitation: asked of the client only when the spec allows them by
    // name (the `ask` hook decides), refused otherwise.
    std::string reply;
    if (what == "ping") {
      reply = result_message(env.id, "{}");
    } else if (ask_) {
      reply = ask_(what, env.id, env.params);
    }
    if (reply.empty()) {
      log_ << "clampai gateway: refused the upstream's request `" << what << "`\n";
      reply = error_message(env.id,
                            kMethodNotFound,
                            "refused by the gateway: `" + what + "` is not passed to the client");
    }
    up.send(reply);
    return;
  }
  if (what == "notifications/tools/list_changed") tools_.reset();
  if (notify_ && (what == "notifications/message" || what == "notifications/progress")) {
    std::string n;
    append_json(n, env.message);
    notify_(n);
  }
}

UpstreamAnswer UpstreamClient::initialize(std::string_view version,
                                          bool then_initialized,
                                          const std::string& capabilities) {
  JsonOut p;
  p.begin_object().key("protocolVersion").value(version);
  p.key("capabilities").raw(capabilities);
  p.key("clientInfo").begin_object().key("name").value("clampai-gateway");
  p.key("version").value(CLAMPAI_VERSION).end_object().end_object();
  UpstreamAnswer a = request("initialize", p.take());
  if (then_initialized && a.kind == UpstreamAnswer::Kind::result)
    (void)notify(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  return a;
}

const std::map<std::string, ListedTool>& UpstreamClient::tools() {
  if (tools_) return *tools_;
  std::map<std::string, ListedTool> tools;
  list_tools(
      [&](const std::string& params) {
        UpstreamAnswer a = request("tools/list", params);
        if (a.kind == UpstreamAnswer::Kind::error) {
          const JsonNode* msg = a.body.find("message");
          throw InvalidArgument("the upstream refused `tools/list`: " +
                                (msg != nullptr ? msg->text : std::string("(no message)")));
        }
        if (a.kind != UpstreamAnswer::Kind::result)
          throw InvalidArgument("the upstream is gone (" + why_gone() + ")");
        return std::move(a.body);
      },
      [&](const std::string& name, const JsonNode& t) {
        ListedTool l;
        l.tool = t;
        try {
          l.pin = tool_pin(t);
        } catch (const InvalidArgument& e) {
          l.unpinnable = e.what();
        }
        tools.emplace(name, std::move(l));
      });
  tools_ = std::move(tools);
  return *tools_;
}

std::optional<std::string> UpstreamClient::hidden(const ToolBinding& b) {
  const auto& tools = this->tools();
  const auto it = tools.find(b.tool);
  if (it == tools.end()) return "the upstream has no tool `" + b.tool + "`";
  if (!it->second.unpinnable.empty()) return "tool `" + b.tool + "`: " + it->second.unpinnable;
  if (it->second.pin != b.pin)
    return "tool `" + b.tool + "` changed since it was pinned (pin " + b.pin + ", now " +
           it->second.pin + "): hidden, refused";
  return std::nullopt;
}

namespace {

// Records what became of a forwarded step (an `attested` entry of the trace, attestor
// `gateway`), and says on the log what was not `ok`.
void record_outcome(OutcomeTrace trace,
                    const ck::Action& a,
                    const ck::Receipt& receipt,
                    std::string_view outcome,
                    const std::string& detail,
                    std::ostream& log) {
  if (outcome != "ok")  // the trace keeps every outcome; the log what went wrong
    log << "clampai gateway: step " << receipt.sequence << " (`" << a.id << "`): " << outcome
        << (detail.empty() ? "" : ": " + detail) << "\n";
  if (trace.own == nullptr && trace.shared == nullptr) return;
  ck::AttestationRecord r;
  r.attestor = "gateway";
  r.gate = a.id;
  r.passed = outcome == "ok";
  r.evidence = "step " + std::to_string(receipt.sequence) + ": " + std::string(outcome);
  if (outcome != "ok") r.error = r.evidence + (detail.empty() ? "" : ": " + detail);
  try {
    if (trace.own != nullptr)
      (void)trace.own->record_attested(ck::attestation_entry(r));
    else
      (void)trace.shared->record_attested(ck::attestation_entry(r));
  } catch (const std::exception& e) {
    log << "clampai gateway: could not record the outcome: " << e.what() << "\n";
  }
}

// Undoes a step whose call failed: rolled back when it is still the latest step in effect,
// else compensated; `why` gets why neither could be done.
Settled undo_step(driver::Committer& committer, const ck::Receipt& receipt, std::string& why) {
  try {
    if (committer.rollback(receipt).has_value()) return Settled::undone;
  } catch (const InvalidArgument&) {
    // Not the latest (or irreversible: compensation says so too).
  }
  try {
    (void)committer.compensate(receipt);
    return Settled::compensated;
  } catch (const InvalidArgument& e) {
    why = e.what();
    return Settled::charged;
  }
}

}  // namespace

Settled settle_step(driver::Committer& committer,
                    OutcomeTrace trace,
                    const ck::Action& a,
                    const ck::Receipt& receipt,
                    const UpstreamAnswer& answer,
                    const std::string& why_gone,
                    std::ostream& log) {
  std::string error;
  switch (answer.kind) {
    case UpstreamAnswer::Kind::result: {
      const JsonNode* e = answer.body.find("isError");
      if (e == nullptr || e->kind != JsonNode::Kind::boolean || !e->boolean) {
        record_outcome(trace, a, receipt, "ok", "", log);
        return Settled::ok;
      }
      error = "the tool answered isError";
      break;
    }
    case UpstreamAnswer::Kind::error: {
      const JsonNode* msg = answer.body.find("message");
      error = msg != nullptr && msg->kind == JsonNode::Kind::string ? msg->text : "";
      break;
    }
    case UpstreamAnswer::Kind::gone:
    case UpstreamAnswer::Kind::timeout:
    case UpstreamAnswer::Kind::cancelled:
      record_outcome(trace, a, receipt, "unknown", why_gone, log);
      return Settled::unknown;
  }
  std::string why;
  const Settled settled = undo_step(committer, receipt, why);
  const std::string what = settled == Settled::undone        ? "rolled back"
                           : settled == Settled::compensated ? "compensated"
                                                             : "stays charged: " + why;
  // Recorded after the undo, so that it says what became of the step (first: the detail is
  // cut at kAttestationExcerptBytes).
  record_outcome(trace, a, receipt, "error", what + (error.empty() ? "" : " (" + error + ")"), log);
  return settled;
}

UpstreamAnswer settled_answer(UpstreamAnswer answer, Settled settled, const ck::Receipt& receipt) {
  if (settled != Settled::undone && settled != Settled::compensated && settled != Settled::charged)
    return answer;
  if (answer.body.kind != JsonNode::Kind::object) return answer;
  const char* const key = answer.kind == UpstreamAnswer::Kind::error ? "data" : "_meta";
  JsonNode* holder = nullptr;
  for (auto& [k, v] : answer.body.members)
    if (k == key) holder = &v;
  if (holder == nullptr) holder = &answer.body.add(key, JsonNode::make_object());
  if (holder->kind != JsonNode::Kind::object || holder->find("clampai/step") != nullptr)
    return answer;  // the upstream's own: left as it is
  JsonNode step = JsonNode::make_object();
  step.add("sequence", JsonNode::make_integer(static_cast<std::int64_t>(receipt.sequence)));
  step.add("settled",
           JsonNode::make_string(settled == Settled::undone        ? "rolled_back"
                                 : settled == Settled::compensated ? "compensated"
                                                                   : "charged"));
  holder->add("clampai/step", std::move(step));
  return answer;
}

}  // namespace clampai::server
