// The routes of the HTTP API (docs/SERVE.md): authentication, request bodies, the kernel's
// answers and every error as JSON with a stable code. No I/O but the tasks' trace files.
#include "clampai/server/service.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <system_error>
#include <utility>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/security.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/kernel/suggest.hpp"
#include "clampai/ledger/ledger.hpp"
#include "decision_log.hpp"
#include "json_out.hpp"
#include "live.hpp"
#include "metrics.hpp"
#include "ops.hpp"
#include "reload.hpp"
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
namespace fs = std::filesystem;
using ck::jsonio::JsonNode;

namespace {

// True iff two SHA-256 digests (hex) are equal, in time that depends on neither.
bool same_digest(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  const std::string_view scheme = authorization.substr(0, 7);
  if (authorization.size() <= 7 || (scheme != "Bearer " && scheme != "bearer "))
    return std::nullopt;
  return authorization.substr(7);
}

bool token_matches(std::string_view given, std::string_view expected) {
  return same_digest(ck::sha256_hex(given), ck::sha256_hex(expected));
}

Response Service::error(int status, std::string_view code, std::string_view message) {
  JsonOut j;
  j.begin_object().key("error").begin_object();
  j.key("code").value(code).key("message").value(message);
  j.end_object().end_object();
  return {status, "application/json", j.take(), {}};
}

namespace {

// A failure that ends a request with an error response.
struct Refusal {
  int status;
  std::string code;
  std::string message;
};

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const std::size_t j = std::min(path.find('/', i), path.size());
    parts.push_back(path.substr(i, j - i));
    i = j;
  }
  return parts;
}

// The body as JSON, within the limits.
JsonNode parse_json_body(const std::string& body, const Limits& limits) {
  ck::jsonio::JsonLimits jl;
  jl.max_bytes = limits.max_body_bytes;
  jl.max_depth = limits.max_json_depth;
  JsonNode n;
  try {
    n = ck::jsonio::parse_json(body, "request body", jl);
  } catch (const SpecError& e) {
    const std::string what = e.what();
    if (what.find("nested more than") != std::string::npos)
      throw Refusal{400, "json_too_deep", "request body: " + what};
    throw Refusal{400, "malformed_json", "request body: " + what};
  }
  return n;
}

// The body as a JSON object (an empty body is `{}`), with only `allowed` keys.
JsonNode parse_body(const std::string& body,
                    const Limits& limits,
                    std::initializer_list<std::string_view> allowed) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) return JsonNode::make_object();
  JsonNode n = parse_json_body(body, limits);
  if (n.kind != JsonNode::Kind::object)
    throw Refusal{400,
                  "invalid_request",
                  "request body: expected an object, found " + ck::jsonio::describe(n)};
  for (const auto& [k, v] : n.members) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (const auto a : allowed) list += (list.empty() ? "`" : ", `") + std::string(a) + "`";
      throw Refusal{400,
                    "invalid_request",
                    "request body: unknown key `" + k + "` (expected " +
                        (list.empty() ? std::string("none") : list) + ")"};
    }
  }
  return n;
}

// The action id of a body; an unknown id is a 404 with a did-you-mean.
std::size_t body_action(const JsonNode& body, const ck::TaskModel& model, std::string& id) {
  const JsonNode* a = body.find("action");
  if (a == nullptr) throw Refusal{400, "invalid_request", "request body: missing key `action`"};
  if (a->kind != JsonNode::Kind::string)
    throw Refusal{400,
                  "invalid_request",
                  "request body: action: expected a string, found " + ck::jsonio::describe(*a)};
  id = a->text;
  const auto index = model.find_action(id);
  if (!index)
    throw Refusal{404,
                  "unknown_action",
                  "task `" + model.name + "` has no action `" + id + "`" +
                      ck::did_you_mean(id, action_ids(model))};
  return *index;
}

ck::ParamMap body_params(const JsonNode& body) {
  ck::ParamMap params;
  if (auto bad = read_params(body.find("params"), "params", params))
    throw Refusal{400, "invalid_params", *bad};
  return params;
}

// A streamed file: whole lines only, up to its size when the request came (a line being
// written then is left for the next request).
std::function<bool(std::string&)> stream_lines(const std::string& path) {
  struct State {
    std::ifstream in;
    std::uintmax_t left = 0;
    std::string carry;
  };
  auto st = std::make_shared<State>();
  st->in.open(path, std::ios::binary);
  std::error_code ec;
  st->left = fs::file_size(path, ec);
  if (ec || !st->in) st->left = 0;
  return [st](std::string& chunk) {
    while (st->left > 0) {
      std::string buf(static_cast<std::size_t>(std::min<std::uintmax_t>(st->left, 64 * 1024)),
                      '\0');
      st->in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.resize(static_cast<std::size_t>(st->in.gcount()));
      if (buf.empty()) break;
      st->left -= buf.size();
      st->carry += buf;
      const auto nl = st->carry.rfind('\n');
      if (nl == std::string::npos) continue;
      chunk = st->carry.substr(0, nl + 1);
      st->carry.erase(0, nl + 1);
      return true;
    }
    return false;
  };
}

std::function<bool(std::string&)> stream_entries(std::vector<ck::TraceEntry> entries) {
  auto st =
      std::make_shared<std::pair<std::vector<ck::TraceEntry>, std::size_t>>(std::move(entries), 0);
  return [st](std::string& chunk) {
    auto& [all, next] = *st;
    if (next >= all.size()) return false;
    chunk.clear();
    for (std::size_t n = 0; n < 256 && next < all.size(); ++n, ++next) {
      chunk += all[next].to_json_line();
      chunk += '\n';
    }
    return true;
  };
}

// An execute's answer after the decision's members: `executed`, `sequence` (the commit's
// entry, or null), `state`, `budget`, `pools` (with `--pools`: the commit's charge at each
// level), `goal_reached`.
void write_execute_members(JsonOut& j,
                           const ck::TaskModel& m,
                           std::string_view id,
                           const ck::Decision& d,
                           const std::optional<ck::Receipt>& receipt,
                           const ck::State& state,
                           Task& task,
                           const std::vector<ck::PoolCharge>& pools = {}) {
  write_decision_members(j, m, id, d);
  j.key("executed").value(receipt.has_value()).key("sequence");
  if (receipt) {
    j.value(receipt->sequence);
  } else {
    j.null();
  }
  j.key("state");
  write_state(j, state);
  j.key("budget");
  write_budget(j, m, task.kernel().budget());
  if (!pools.empty()) {  // what the commit charged at each pool level (--pools)
    j.key("pools");
    report::write_pool_charges(j, pools);
  }
  j.key("goal_reached").value(m.goal_holds(state));
}

// A ticket's members: `ticket`, `action`, `params`, `principal`, `request_sequence` (its
// `approval_requested` entry), `requested_at_us`, `expires_at_us`.
void write_ticket_members(JsonOut& j, const Ticket& t) {
  j.key("ticket").value(t.id).key("action").value(t.action).key("params").begin_object();
  for (const auto& [name, v] : t.params) j.key(name).value(v);
  j.end_object().key("principal");
  if (t.principal.empty()) {
    j.null();
  } else {
    j.value(t.principal);
  }
  j.key("request_sequence").value(t.sequence).key("requested_at_us").value(t.requested_us);
  j.key("expires_at_us").value(t.expires_us);
}

void write_ticket(JsonOut& j, const Ticket& t) {
  j.begin_object();
  write_ticket_members(j, t);
  j.end_object();
}

// The answer to an execute that waits for an approval: `approved` false, `pending` true, the
// ticket, what the kernel would change now, nothing executed.
void write_pending(
    JsonOut& j, const ck::TaskModel& m, const Ticket& t, const ck::Decision& now, Task& task) {
  write_ticket_members(j, t);
  j.key("approved").value(false).key("pending").value(true);
  j.key("cost").value(m.format_amount(now.cost)).key("emergency").value(now.emergency);
  j.key("reasons").begin_array().end_array().key("warnings");
  write_reasons(j, now.warnings);
  j.key("changes").begin_object();
  for (const auto& [var, v] : now.changes) j.key(m.variables[var].name).value(v);
  j.end_object();
  j.key("executed").value(false).key("sequence").null().key("state");
  const ck::State state = task.kernel().state();
  write_state(j, state);
  j.key("budget");
  write_budget(j, m, task.kernel().budget());
  j.key("goal_reached").value(m.goal_holds(state));
}

void count_decision(Task& task, std::size_t endpoint, const ck::Decision& d) {
  task.counters.decisions[endpoint][d.approved ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
  for (const ck::Reason& r : d.reasons)
    task.counters.rejections[static_cast<std::size_t>(r.code)].fetch_add(1,
                                                                         std::memory_order_relaxed);
}

}  // namespace

struct Service::Impl {
  ServiceOptions options;
  mutable std::shared_mutex mutex;
  // Who may call (empty: anyone; no authentication). Replaced whole by set_principals.
  mutable std::mutex principals_mutex;
  std::shared_ptr<const std::vector<Principal>> principals =
      std::make_shared<const std::vector<Principal>>();

  std::shared_ptr<const std::vector<Principal>> current_principals() const {
    std::lock_guard lock(principals_mutex);
    return principals;
  }

  // The principal whose token `authorization` carries; nullptr when the server needs none.
  // Every principal's digest is compared, in constant time, whichever matches.
  static const Principal* authenticate(const std::vector<Principal>& all,
                                       std::string_view authorization) {
    if (all.empty()) return nullptr;
    const std::optional<std::string_view> token = bearer_token(authorization);
    if (!token)
      throw Refusal{401,
                    "unauthorized",
                    "this server needs `Authorization: Bearer TOKEN` (its --token-file, or a "
                    "token of its --principals)"};
    const std::string given = ck::sha256_hex(*token);
    const Principal* found = nullptr;
    for (const Principal& p : all)
      if (same_digest(p.token_sha256, given)) found = &p;
    if (found == nullptr) throw Refusal{401, "unauthorized", "the bearer token is wrong"};
    return found;
  }

  // Refuses (403 forbidden) unless `who` holds `right` on `task` (on `*` when `task` is empty).
  static void require(const Principal* who, Right right, std::string_view task) {
    if (who == nullptr || who->may(right, task)) return;
    throw Refusal{403,
                  "forbidden",
                  "principal `" + who->name + "` lacks the right `" +
                      std::string(right_name(right)) + "` " +
                      (task.empty() ? std::string("on every task (`*`)")
                                    : "on task `" + std::string(task) + "`")};
  }
  // Tasks are never removed, so a Task* stays valid for the service's life.
  std::map<std::string, std::unique_ptr<Task>, std::less<>> tasks;
  Metrics metrics;
  LiveFeed live;                           // what the live page shows (GET /v1/live)
  std::unique_ptr<DecisionLog> decisions;  // --decision-log, or null
  std::mutex log_mutex;
  std::chrono::steady_clock::time_point last_malformed_log{};
  std::uint64_t malformed_logged = 0;
  std::chrono::steady_clock::time_point last_accept_log{};

  void log(const std::string& line) {
    if (options.log) options.log(line);
  }

  // The rate of malformed requests, at most one line every 10 seconds.
  void note_malformed(int status, std::string_view code, std::string_view message) {
    metrics.malformed();
    if (!options.log) return;
    std::lock_guard lock(log_mutex);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_malformed_log < std::chrono::seconds(10)) return;
    const std::uint64_t total = metrics.malformed_count();
    const double seconds = last_malformed_log == std::chrono::steady_clock::time_point{}
                               ? 0.0
                               : std::chrono::duration<double>(now - last_malformed_log).count();
    log(std::to_string(total - malformed_logged) + " malformed request(s)" +
        (seconds > 0 ? " in the last " + std::to_string(static_cast<long>(seconds)) + " s" : "") +
        " (" + std::to_string(total) + " in all); the last: " + std::to_string(status) + " " +
        std::string(code) + ": " + std::string(message));
    last_malformed_log = now;
    malformed_logged = total;
  }

  Task* find(std::string_view name) const {
    std::shared_lock lock(mutex);
    const auto it = tasks.find(name);
    return it == tasks.end() ? nullptr : it->second.get();
  }

  std::string spec_path(const std::string& name) const { return spec_file(options.data_dir, name); }
  std::string trace_path(const std::string& name) const {
    return (fs::path(options.data_dir) / (name + ".jsonl")).string();
  }

  // Where a task being added comes from: its spec file in the data directory (at a start), a
  // --spec (whose trace in the data directory, if any, it continues) or POST /v1/tasks (for
  // which a trace of that name in the data directory is an orphan, and refused).
  enum class Origin : std::uint8_t { restored, given, posted };

  // Adds a loaded model as a task (its spec text kept in the data directory). Returns the task.
  Task& add(std::shared_ptr<const ck::TaskModel> model, std::string_view text, Origin origin) {
    // Refused before its spec is kept in the data directory (a restart would meet it again).
    if (auto why = serve_refusal(*model)) throw Refusal{400, "invalid_spec", *why};
    std::unique_lock lock(mutex);
    if (const auto it = tasks.find(model->name); it != tasks.end()) {
      if (it->second->model().digest == model->digest) return *it->second;
      throw Refusal{409,
                    "task_exists",
                    "a task named `" + model->name + "` is served already, with another spec"};
    }
    const TaskStorage storage{options.data_dir,
                              options.ledger,
                              options.clock,
                              options.signer,
                              options.checkpoint_every,
                              options.pools};
    if (options.data_dir.empty() || origin == Origin::restored) {
      auto task = open_task(model, storage, options.log);
      shadow_if_named(*task);
      Task& ref = *task;
      tasks.emplace(model->name, std::move(task));
      return ref;
    }
    // A new task in the data directory has one commit point: its trace is created (with its
    // first entry), then its spec file is written atomically and renamed into place, last. A
    // failure before removes the trace it created; a crash before leaves no spec, so a restart
    // does not meet the task (docs/FILES.md).
    const std::string spec = spec_path(model->name);
    const std::string trace = trace_path(model->name);
    std::error_code ec;
    if (fs::symlink_status(spec, ec).type() != fs::file_type::not_found)
      throw Refusal{409,
                    "task_exists",
                    "the data directory has a spec file `" + spec +
                        "` of no served task: move it away or remove it, then add the task"};
    const bool orphan = fs::symlink_status(trace, ec).type() != fs::file_type::not_found;
    if (orphan && origin == Origin::posted)
      throw Refusal{409,
                    "task_exists",
                    "the data directory has a trace `" + trace + "` of no served task `" +
                        model->name +
                        "` (left by an earlier server, or by a crash while the task was added): "
                        "move it away or remove it, then add the task (or start the server "
                        "with --spec to continue it)"};
    std::unique_ptr<Task> task;
    try {
      task = open_task(model, storage, options.log);
      shadow_if_named(*task);
      ck::write_file_atomically(spec, text, /*replace=*/false, "spec");
    } catch (...) {
      if (!orphan) {
        task.reset();  // closes the trace
        fs::remove(trace, ec);
      }
      throw;
    }
    Task& ref = *task;
    tasks.emplace(model->name, std::move(task));
    return ref;
  }

  // Shadow mode for a task `--mode shadow` or `--shadow` names (shadow.cpp).
  void shadow_if_named(Task& task) const {
    const std::string& name = task.model().name;
    if (!options.shadow_all &&
        std::find(options.shadow.begin(), options.shadow.end(), name) == options.shadow.end())
      return;
    try {
      task.enter_shadow_mode();
    } catch (const InvalidArgument& e) {
      throw Refusal{400, "invalid_spec", e.what()};
    }
  }

  // A line of the decision log; a log that cannot be written is logged, and the answer stands.
  void log_decision(Task& task,
                    std::string_view principal,
                    std::string_view endpoint,
                    std::string_view action,
                    const JsonNode* params,
                    const ck::Decision& d,
                    std::uint64_t position,
                    std::string_view outcome = {}) {  // empty: approved or rejected
    try {
      decisions->write({task.model().name,
                        principal,
                        endpoint,
                        action,
                        params_digest(params),
                        !outcome.empty() ? outcome
                        : d.approved     ? "approved"
                                         : "rejected",
                        &d.reasons,
                        task.model().digest,
                        position});
    } catch (const std::exception& e) {
      log(std::string("decision log: ") + e.what());
    }
  }

  // PUT /v1/tasks/{task}/spec: a reload behind proofs (reload.cpp).
  Response reload_route(Task& task, const Request& req, const Principal* who) {
    bool dry_run = false;
    try {
      dry_run = dry_run_of(req.target);
    } catch (const InvalidArgument& e) {
      throw Refusal{400, "invalid_request", e.what()};
    }
    (void)parse_json_body(req.body, options.limits);  // the limits first
    try {
      const Reloaded r = server::reload_task(task, req.body, reload_options(dry_run, who));
      std::shared_lock hold(task.reload_mutex);
      return {200, "application/json", reloaded_json(task.model().name, r, dry_run), {}};
    } catch (const ReloadRefused& e) {
      return {409, "application/json", refused_json(e), {}};
    } catch (const InvalidArgument& e) {
      throw Refusal{409, "task_sealed", e.what()};
    }
  }

  ReloadOptions reload_options(bool dry_run, const Principal* who) const {
    ReloadOptions o;
    o.dry_run = dry_run;
    if (who != nullptr) o.principal = who->name;
    o.solver_timeout_ms = options.limits.solver_timeout_ms;
    o.storage = TaskStorage{options.data_dir,
                            options.ledger,
                            options.clock,
                            options.signer,
                            options.checkpoint_every,
                            options.pools};
    o.pause = options.pause;
    o.log = options.log;
    return o;
  }

  Response route(const Request& req);
  // The budget pools: --pools' tree, or a PostgreSQL ledger's rows (none otherwise).
  std::vector<ck::PoolStatus> pool_figures() const;
  Response task_route(Task& task, std::string_view op, const Request& req, const Principal* who);
  Response answer_route(Task& task,
                        std::string_view ticket,
                        const Request& req,
                        const Principal* who);
};

Service::Service(ServiceOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (!impl_->options.token.empty() && !impl_->options.principals.empty())
    throw InvalidArgument(
        "--token-file and --principals cannot be combined: a token file stands for one "
        "principal with every right; list it in the principals file instead");
  if (!impl_->options.token.empty())
    impl_->principals = std::make_shared<const std::vector<Principal>>(
        std::vector<Principal>{token_principal(impl_->options.token)});
  else if (!impl_->options.principals.empty())
    impl_->principals =
        std::make_shared<const std::vector<Principal>>(std::move(impl_->options.principals));
  impl_->options.principals.clear();
  if (!impl_->options.decision_log.empty())
    impl_->decisions = std::make_unique<DecisionLog>(impl_->options.decision_log);
  if (!impl_->options.ledger.empty() && !impl_->options.data_dir.empty())
    throw InvalidArgument(
        "--data-dir and --ledger cannot be combined: with --ledger each task's trace, state and "
        "budget live in the ledger and a restarted server resumes from it (give the --spec "
        "again), so there is nothing to keep in a data directory; give one of them");
  if (!impl_->options.ledger.empty() &&
      (impl_->options.shadow_all || !impl_->options.shadow.empty()))
    driver::refuse_shadow_on_ledger("shadow mode (--mode shadow, --shadow)");
  const std::string& dir = impl_->options.data_dir;
  if (dir.empty()) return;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw FileError("--data-dir `" + dir +
                    "`: " + (fs::exists(dir, ec) ? "not a directory" : "no such directory"));
  std::vector<fs::path> specs;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 10 && name.ends_with(".spec.json")) specs.push_back(e.path());
  }
  std::sort(specs.begin(), specs.end());
  for (const fs::path& p : specs) {
    try {
      impl_->add(ck::load_spec_file(p.string()), {}, Impl::Origin::restored);
    } catch (const Refusal& r) {
      throw Error(p.string() + ": " + r.message);
    }
  }
}

Service::~Service() = default;

std::string Service::add_task(std::string_view spec_text, const std::string& origin) {
  const auto model = ck::load_spec(spec_text);
  if (!impl_->options.data_dir.empty()) {
    const std::string kept = impl_->spec_path(model->name);
    if (impl_->find(model->name) == nullptr && fs::exists(kept))
      throw Error(origin + ": the data directory has a spec file `" + kept +
                  "` that did not load as a task");
  }
  try {
    return impl_->add(model, spec_text, Impl::Origin::given).model().name;
  } catch (const Refusal& r) {
    if (r.code == "task_exists" && impl_->find(model->name) != nullptr)
      throw Error(origin + ": task `" + model->name +
                  "`: its spec differs from the one its trace in `" + impl_->options.data_dir +
                  "` was written for (or from another --spec of that name)");
    throw Error(origin + ": " + r.message);
  }
}

std::string Service::reload_task(std::string_view spec_text, const std::string& origin) {
  std::shared_ptr<const ck::TaskModel> model;
  try {
    model = ck::load_spec(spec_text);
  } catch (const SpecError& e) {
    throw Error(origin + ": reload refused (spec): " + e.what());
  }
  Task* task = impl_->find(model->name);
  if (task == nullptr)
    throw Error(origin + ": no task `" + model->name + "` is served (a reload replaces a task's " +
                "spec; POST /v1/tasks adds a task)");
  try {
    const Reloaded r = server::reload_task(*task, spec_text, impl_->reload_options(false, nullptr));
    if (!r.changed) return origin + ": task `" + model->name + "`: its spec is unchanged";
    return origin + ": task `" + model->name + "`: spec " + r.previous.substr(0, 12) +
           "... replaced by " + r.digest.substr(0, 12) + "... (trace entry " +
           std::to_string(*r.sequence) + ")";
  } catch (const ReloadRefused& e) {
    std::string why;
    for (const std::string& d : e.details) why += "; " + d;
    throw Error(origin + ": reload refused (" + e.failed + "): " + e.what() + why);
  }
}

void Service::set_principals(std::vector<Principal> principals) {
  if (principals.empty())
    throw InvalidArgument("the principals file lists no principal; the old ones stay");
  std::lock_guard lock(impl_->principals_mutex);
  if (impl_->principals->empty())
    throw InvalidArgument("this server serves without authentication; it cannot take principals");
  impl_->principals = std::make_shared<const std::vector<Principal>>(std::move(principals));
}

void Service::reopen_decision_log() {
  if (impl_->decisions) impl_->decisions->reopen();
}

void Service::note_refused(int status, std::string_view code) {
  impl_->metrics.observe(status, 0.0);
  impl_->note_malformed(status, code, "refused by the transport");
}

void Service::note_accept_error(std::string_view message) {
  impl_->metrics.accept_error();
  if (!impl_->options.log) return;
  std::lock_guard lock(impl_->log_mutex);
  const auto now = std::chrono::steady_clock::now();
  if (impl_->last_accept_log != std::chrono::steady_clock::time_point{} &&
      now - impl_->last_accept_log < std::chrono::seconds(10))
    return;
  impl_->last_accept_log = now;
  impl_->log("cannot accept a connection: " + std::string(message) + " (" +
             std::to_string(impl_->metrics.accept_error_count()) +
             " in all); accepting again as descriptors free up");
}

void Service::shutdown() {
  std::shared_lock lock(impl_->mutex);
  for (auto& [name, task] : impl_->tasks) {
    std::shared_lock hold(task->reload_mutex);
    try {
      if (task->seal()) impl_->log("task `" + name + "`: trace sealed and flushed");
    } catch (const std::exception& e) {
      impl_->log("task `" + name + "`: cannot seal: " + e.what());
    }
  }
}

std::vector<std::string> Service::task_names() const {
  std::shared_lock lock(impl_->mutex);
  std::vector<std::string> names;
  for (const auto& [name, task] : impl_->tasks) names.push_back(name);
  return names;
}

Response Service::handle(const Request& request) noexcept {
  const auto start = std::chrono::steady_clock::now();
  Response r;
  try {
    r = impl_->route(request);
  } catch (const Refusal& f) {
    r = error(f.status, f.code, f.message);
    if (f.status == 400) impl_->note_malformed(f.status, f.code, f.message);
  } catch (const TraceError& e) {
    r = error(500, "trace_write_failed", e.what());
  } catch (const LedgerUnavailable& e) {
    r = error(503, "ledger_unavailable", e.what());
  } catch (const std::bad_alloc&) {
    r = error(503, "out_of_memory", "the server ran out of memory answering this request");
  } catch (const std::exception& e) {
    r = error(500, "internal_error", e.what());
  }
  // One document a line, as curl users expect (JSON allows the trailing white space).
  if (r.content_type == "application/json" && !r.body.empty() && r.body.back() != '\n')
    r.body += '\n';
  impl_->metrics.observe(
      r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return r;
}

std::vector<ck::PoolStatus> Service::Impl::pool_figures() const {
  if (options.pools) return options.pools->status();
  // On a PostgreSQL ledger, the pools are its rows, read afresh (other processes charge them).
  if (clampai::ledger::is_postgres_url(options.ledger))
    return clampai::ledger::pool_status(
        clampai::ledger::read_pools(clampai::ledger::split_postgres_url(options.ledger).conninfo),
        false);
  return {};
}

Response Service::Impl::route(const Request& req) {
  // A body that could not be read is never taken for an empty one, whatever the route.
  if (!req.body_unreadable.empty())
    throw Refusal{400, "malformed_request", "the body cannot be read: " + req.body_unreadable};
  std::string_view path = req.target;
  path = path.substr(0, std::min(path.find('?'), path.size()));
  const auto parts = split_path(path);
  const auto method_not_allowed = [&](std::string_view allowed) {
    return Refusal{405,
                   "method_not_allowed",
                   std::string(path) + " accepts " + std::string(allowed) + ", not " + req.method};
  };
  if (parts.size() == 2 && parts[0] == "v1" && parts[1] == "health") {
    if (req.method != "GET") throw method_not_allowed("GET");
    std::shared_lock lock(mutex);
    JsonOut j;
    j.begin_object().key("status").value("ok").key("version").value(CLAMPAI_VERSION);
    j.key("tasks").value(static_cast<std::uint64_t>(tasks.size())).end_object();
    return {200, "application/json", j.take(), {}};
  }
  if (parts.empty()) {  // the live page: static, no secret in it, no token needed to load it
    if (req.method != "GET") throw method_not_allowed("GET");
    return live_page();
  }
  // The principals stay alive for the request even if SIGHUP replaces them meanwhile.
  const auto held = current_principals();
  const Principal* who = authenticate(*held, req.authorization);
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (req.method != "GET") throw method_not_allowed("GET");
    require(who, Right::read, "");
    std::vector<std::pair<std::string, const TaskCounters*>> counters;
    {
      std::shared_lock lock(mutex);
      for (const auto& [name, task] : tasks) counters.emplace_back(name, &task->counters);
    }
    std::string text = metrics.render(counters);
    try {
      if (const auto pools = pool_figures(); !pools.empty()) text += render_pools(pools);
    } catch (const LedgerUnavailable& e) {  // the other figures still answer a scrape
      log(std::string("/metrics: the ledger's pools left out: ") + e.what());
    }
    return {200, "text/plain; version=0.0.4", std::move(text), {}};
  }
  if (parts.size() == 2 && parts[0] == "v1" && parts[1] == "pools") {
    if (req.method != "GET") throw method_not_allowed("GET");
    require(who, Right::read, "");  // on `*`: the pools cover every task, as /metrics does
    JsonOut j;
    j.begin_object().key("pools");
    report::write_pools(j, pool_figures());
    j.end_object();
    return {200, "application/json", j.take(), {}};
  }
  if (parts.size() == 2 && parts[0] == "v1" && parts[1] == "live") {
    if (req.method != "GET") throw method_not_allowed("GET");
    // As the task list: the tasks the principal may read; the pools with `read` on `*`.
    if (who != nullptr && !who->may_somewhere(Right::read)) require(who, Right::read, "");
    std::vector<Task*> readable;
    {
      std::shared_lock lock(mutex);
      for (const auto& [name, task] : tasks)
        if (who == nullptr || who->may(Right::read, name)) readable.push_back(task.get());
    }
    const bool all = who == nullptr || who->may(Right::read, "");
    return {200, "application/json", live.json(readable, all ? options.pools.get() : nullptr), {}};
  }
  if (parts.size() == 2 && parts[0] == "v1" && parts[1] == "tasks") {
    if (req.method == "GET") {
      // Anyone who may read some task; each sees the tasks it may read.
      if (who != nullptr && !who->may_somewhere(Right::read)) require(who, Right::read, "");
      JsonOut j;
      j.begin_object().key("tasks").begin_array();
      std::shared_lock lock(mutex);
      for (const auto& [name, task] : tasks) {
        if (who != nullptr && !who->may(Right::read, name)) continue;
        std::shared_lock hold(task->reload_mutex);
        j.begin_object().key("name").value(name).key("spec_digest").value(task->model().digest);
        j.key("sealed").value(task->kernel().is_sealed()).end_object();
      }
      j.end_array().end_object();
      return {200, "application/json", j.take(), {}};
    }
    if (req.method != "POST") throw method_not_allowed("GET and POST");
    // Refused before the body is read if `admin` is nowhere; on the spec's name once known.
    if (who != nullptr && !who->may_somewhere(Right::admin)) require(who, Right::admin, "");
    (void)parse_json_body(req.body, options.limits);  // the limits first
    std::shared_ptr<const ck::TaskModel> model;
    try {
      model = ck::load_spec(req.body);
    } catch (const SpecError& e) {
      throw Refusal{400, "invalid_spec", std::string("spec: ") + e.what()};
    }
    require(who, Right::admin, model->name);
    if (find(model->name) != nullptr)
      throw Refusal{409, "task_exists", "a task named `" + model->name + "` is served already"};
    Task* added = nullptr;
    try {
      added = &add(model, req.body, Origin::posted);
    } catch (const SpecError& e) {  // its budget's pool (unknown, or not at its scale)
      throw Refusal{400, "invalid_spec", std::string("spec: ") + e.what()};
    }
    Task& task = *added;
    JsonOut j;
    j.begin_object().key("task").value(task.model().name);
    j.key("spec_digest").value(task.model().digest).key("actions").begin_array();
    for (const auto& a : task.model().actions) j.value(a.id);
    j.end_array().end_object();
    return {201, "application/json", j.take(), {}};
  }
  const auto task_named = [&](std::string_view name) -> Task& {
    Task* task = find(name);
    if (task == nullptr) {
      std::vector<std::string> names;
      {
        std::shared_lock lock(mutex);
        for (const auto& [n, t] : tasks) names.push_back(n);
      }
      throw Refusal{
          404,
          "unknown_task",
          "no task `" + std::string(name) + "` is served" + ck::did_you_mean(name, names)};
    }
    return *task;
  };
  if (parts.size() == 4 && parts[0] == "v1" && parts[1] == "tasks" && parts[3] == "spec") {
    Task& task = task_named(parts[2]);
    if (req.method != "PUT") throw method_not_allowed("PUT");
    require(who, Right::admin, parts[2]);
    return reload_route(task, req, who);
  }
  // Every other request on a task holds off its reloads (reload.cpp) while it runs.
  if (parts.size() == 4 && parts[0] == "v1" && parts[1] == "tasks") {
    Task& task = task_named(parts[2]);
    std::shared_lock hold(task.reload_mutex);
    return task_route(task, parts[3], req, who);
  }
  if (parts.size() == 5 && parts[0] == "v1" && parts[1] == "tasks" && parts[3] == "approvals") {
    Task& task = task_named(parts[2]);
    if (req.method != "POST") throw method_not_allowed("POST");
    std::shared_lock hold(task.reload_mutex);
    return answer_route(task, parts[4], req, who);
  }
  throw Refusal{404, "not_found", "no route " + std::string(path) + " (docs/SERVE.md)"};
}

Response Service::Impl::task_route(Task& task,
                                   std::string_view op,
                                   const Request& req,
                                   const Principal* who) {
  const ck::TaskModel& m = task.model();
  const Limits& limits = options.limits;
  const bool get = op == "state" || op == "trace" || op == "approvals";
  const bool known = get || op == "evaluate" || op == "execute" || op == "rollback" ||
                     op == "lookahead" || op == "repair" || op == "verify";
  if (!known)
    throw Refusal{404,
                  "not_found",
                  "no operation `" + std::string(op) +
                      "` on a task (evaluate, execute, rollback, state, trace, approvals, "
                      "lookahead, repair, verify)"};
  if (req.method != (get ? "GET" : "POST"))
    throw Refusal{405,
                  "method_not_allowed",
                  std::string("/") + std::string(op) + " accepts " + (get ? "GET" : "POST") +
                      ", not " + req.method};
  require(who,
          get                ? Right::read
          : op == "execute"  ? Right::execute
          : op == "rollback" ? Right::admin
                             : Right::decide,
          m.name);
  if (op == "state") return {200, "application/json", status_json(task), {}};
  if (op == "approvals") {
    JsonOut j;
    j.begin_object().key("task").value(m.name).key("tickets").begin_array();
    for (const Ticket& t : task.pending()) write_ticket(j, t);
    j.end_array().end_object();
    return {200, "application/json", j.take(), {}};
  }
  if (op == "trace") {
    Response r{200, "application/jsonl", {}, {}};
    r.next_chunk =
        task.trace_path().empty() ? stream_entries(task.trace()) : stream_lines(task.trace_path());
    return r;
  }
  if (op == "evaluate" || op == "execute") {
    const JsonNode body = parse_body(req.body, limits, {"action", "params"});
    std::string id;
    body_action(body, m, id);
    const ck::ParamMap params = body_params(body);
    const std::size_t endpoint = op == "execute" ? 1 : 0;
    const std::string principal = who != nullptr ? who->name : std::string();
    JsonOut j;
    j.begin_object().key("task").value(m.name);
    ck::Decision d;
    std::uint64_t position = 0;              // the decision log's trace position
    std::optional<std::uint64_t> committed;  // the commit's trace entry
    if (endpoint == 0) {
      position = decisions ? task.trace_length() : 0;
      d = task.kernel().evaluate(id, params);
      write_decision_members(j, m, id, d);
    } else if (task.shadow()) {
      // Shadow mode: followed whatever the decision, never blocked; `shadow` is the answer the
      // enforcing kernel would have given (an action that waits for an approval does not).
      std::optional<driver::StepResult> step;
      try {
        step = task.execute(id, params, principal);
      } catch (const InvalidArgument& e) {
        throw Refusal{409, "task_sealed", e.what()};
      }
      ck::Outcome& out = step->outcome;
      const ck::Decision& would_be = *step->would_be;
      const bool pending = m.actions[*m.find_action(id)].approval && would_be.approved;
      if (!out.receipt) {  // what it does could not be computed: not followed, nor blocked
        out.decision.approved = true;
        out.decision.reasons.clear();
        out.decision.changes.clear();
        out.decision.cost = 0;
      }
      write_execute_members(j, m, id, out.decision, out.receipt, out.state, task, out.pools);
      write_shadow_members(j, m, id, would_be, pending);
      if (decisions)
        log_decision(task,
                     principal,
                     op,
                     id,
                     body.find("params"),
                     would_be,
                     out.receipt ? out.receipt->sequence : task.trace_length() - 1,
                     pending             ? "shadow_pending"
                     : would_be.approved ? "shadow_approved"
                                         : "shadow_rejected");
      for (const ck::Reason& r : would_be.reasons)
        task.counters.shadow_rejections[static_cast<std::size_t>(r.code)].fetch_add(
            1, std::memory_order_relaxed);
      j.end_object();
      count_decision(task, endpoint, out.decision);
      return {200, "application/json", j.take(), {}};
    } else if (const std::size_t index = *m.find_action(id); m.actions[index].approval) {
      // It waits for an approval: decided now, and if approved, a ticket; nothing committed.
      auto resolved = task.kernel().resolve(id, params);
      std::optional<Task::Asked> asked;
      if (auto* p = std::get_if<ck::Proposal>(&resolved)) {
        if (who != nullptr) p->principal = who->name;
        try {
          asked = task.ask(*p);
        } catch (const TicketRefused& e) {
          throw Refusal{429, "too_many_tickets", e.what()};
        } catch (const InvalidArgument& e) {
          throw Refusal{409, "task_sealed", e.what()};
        }
      } else {
        asked.emplace();
        asked->decision.reasons.push_back(std::get<ck::Reason>(std::move(resolved)));
      }
      if (asked->ticket) {
        // Pending: not counted as a decision until it is answered.
        write_pending(j, m, *asked->ticket, asked->decision, task);
        live.note(task,
                  {.endpoint = "execute",
                   .action = id,
                   .principal = principal,
                   .outcome = "pending",
                   .cost = m.format_amount(asked->decision.cost),
                   .sequence = asked->ticket->sequence},
                  false);
        j.end_object();
        if (decisions)
          log_decision(task,
                       principal,
                       op,
                       id,
                       body.find("params"),
                       asked->decision,
                       asked->ticket->sequence,
                       "pending");
        return {200, "application/json", j.take(), {}};
      }
      d = std::move(asked->decision);
      write_execute_members(j, m, id, d, std::nullopt, task.kernel().state(), task);
      if (decisions) position = task.trace_length();
    } else {
      std::optional<ck::Outcome> executed;
      try {
        executed = task.execute(id, params, principal).outcome;
      } catch (const InvalidArgument& e) {
        throw Refusal{409, "task_sealed", e.what()};
      }
      ck::Outcome& out = *executed;
      d = std::move(out.decision);
      write_execute_members(j, m, id, d, out.receipt, out.state, task, out.pools);
      if (out.receipt) committed = out.receipt->sequence;
      if (decisions) position = out.receipt ? out.receipt->sequence : task.trace_length();
    }
    j.end_object();
    if (decisions) log_decision(task, principal, op, id, body.find("params"), d, position);
    count_decision(task, endpoint, d);
    live.note(task,
              {.endpoint = std::string(op),
               .action = id,
               .principal = principal,
               .outcome = endpoint == 0 ? (d.approved ? "approved" : "rejected")
                          : committed   ? "executed"
                                        : "rejected",
               .reasons = d.reasons,
               .cost = m.format_amount(d.cost),
               .sequence = committed},
              endpoint == 1);
    return {200, "application/json", j.take(), {}};
  }
  if (op == "rollback") {
    const JsonNode body = parse_body(req.body, limits, {"sequence"});
    std::optional<std::uint64_t> sequence;
    if (const JsonNode* s = body.find("sequence")) {
      if (s->kind != JsonNode::Kind::number || !s->integral || s->text.starts_with('-'))
        throw Refusal{400,
                      "invalid_request",
                      "request body: sequence: expected a trace entry number, found " +
                          ck::jsonio::describe(*s)};
      sequence = std::stoull(s->text);
    }
    std::optional<ck::Outcome> undone;
    try {
      undone = task.rollback(sequence, who != nullptr ? who->name : std::string_view());
    } catch (const InvalidArgument& e) {
      throw Refusal{409, task.kernel().is_sealed() ? "task_sealed" : "rollback_refused", e.what()};
    } catch (const std::out_of_range&) {
      throw Refusal{400, "invalid_request", "request body: sequence: out of range"};
    }
    const ck::Outcome& out = *undone;
    task.counters.rollbacks.fetch_add(1, std::memory_order_relaxed);
    live.note(task,
              {.endpoint = "rollback",
               .action = m.actions[out.decision.action].id,
               .principal = who != nullptr ? who->name : std::string(),
               .outcome = "rolled_back",
               .cost = m.format_amount(out.decision.cost)},
              true);
    JsonOut j;
    j.begin_object().key("task").value(m.name).key("rolled_back").value(true);
    j.key("action").value(m.actions[out.decision.action].id).key("state");
    write_state(j, out.state);
    j.key("budget");
    write_budget(j, m, task.kernel().budget());
    j.end_object();
    return {200, "application/json", j.take(), {}};
  }
  if (op == "lookahead") {
    const JsonNode body = parse_body(req.body, limits, {"action", "params", "depth"});
    std::string id;
    body_action(body, m, id);
    const ck::ParamMap params = body_params(body);
    unsigned depth = 3;
    if (const JsonNode* d = body.find("depth")) {
      if (d->kind != JsonNode::Kind::number || !d->integral || d->text.starts_with('-') ||
          d->text.size() > 3 || std::stoul(d->text) > limits.max_lookahead_depth)
        throw Refusal{400,
                      "invalid_request",
                      "request body: depth: expected a whole number from 0 to " +
                          std::to_string(limits.max_lookahead_depth)};
      depth = static_cast<unsigned>(std::stoul(d->text));
    }
    return {200,
            "application/json",
            lookahead_json(task, id, params, depth, limits.solver_timeout_ms),
            {}};
  }
  if (op == "repair") {
    const JsonNode body = parse_body(req.body, limits, {"action", "params"});
    std::string id;
    const std::size_t action = body_action(body, m, id);
    auto r = repair_json(task, action, body_params(body), limits.solver_timeout_ms);
    if (r.index() == 1) throw Refusal{400, "invalid_params", std::get<1>(r)};
    return {200, "application/json", std::move(std::get<0>(r)), {}};
  }
  // verify
  (void)parse_body(req.body, limits, {});
  return {200, "application/json", verify_json(task, limits.solver_timeout_ms), {}};
}

Response Service::Impl::answer_route(Task& task,
                                     std::string_view ticket,
                                     const Request& req,
                                     const Principal* who) {
  const ck::TaskModel& m = task.model();
  const JsonNode body = parse_body(req.body, options.limits, {"approve"});
  const JsonNode* approve = body.find("approve");
  if (approve == nullptr)
    throw Refusal{400, "invalid_request", "request body: missing key `approve` (true or false)"};
  if (approve->kind != JsonNode::Kind::boolean)
    throw Refusal{
        400,
        "invalid_request",
        "request body: approve: expected true or false, found " + ck::jsonio::describe(*approve)};
  // Checked with the ticket in hand, before its answer is recorded: the right the action's
  // approval names, and that the approver is not the one who asked.
  const auto check = [&](const Ticket& t) {
    const ck::Action& a = m.actions[*m.find_action(t.action)];
    if (who == nullptr)
      throw Refusal{403,
                    "forbidden",
                    "this server serves without authentication, so nobody can be told apart "
                    "from who asked: approvals need --principals"};
    require(who, *right_named(a.approval ? a.approval->right : "approve"), m.name);
    if (who->name == t.principal)
      throw Refusal{403,
                    "forbidden",
                    "principal `" + who->name + "` asked for ticket `" + t.id + "` of `" +
                        t.action +
                        "` and cannot approve or deny it: another principal with the "
                        "right must"};
  };
  std::optional<Task::Answered> answered;
  try {
    answered = task.answer(ticket, approve->boolean, who != nullptr ? who->name : "", check);
  } catch (const TicketRefused& e) {
    if (e.why == TicketRefused::Why::expired) {
      throw Refusal{409, "ticket_expired", e.what()};
    }
    throw Refusal{404, "unknown_ticket", e.what()};
  } catch (const InvalidArgument& e) {
    throw Refusal{409, "task_sealed", e.what()};
  }
  const Task::Answered& a = *answered;
  const ck::Outcome& out = a.step.outcome;
  JsonOut j;
  j.begin_object().key("task").value(m.name).key("ticket").value(a.ticket.id);
  j.key("granted").value(a.granted).key("by").value(who != nullptr ? who->name : "");
  j.key("answer_sequence").value(a.sequence);
  write_execute_members(j, m, a.ticket.action, out.decision, out.receipt, out.state, task);
  j.end_object();
  count_decision(task, 1, out.decision);
  live.note(task,
            {.endpoint = "approval",
             .action = a.ticket.action,
             .principal = who != nullptr ? who->name : std::string(),
             .outcome = !a.granted    ? "denied"
                        : out.receipt ? "executed"
                                      : "rejected",
             .reasons = out.decision.reasons,
             .cost = m.format_amount(out.decision.cost),
             .sequence = out.receipt ? out.receipt->sequence : a.sequence},
            true);
  return {200, "application/json", j.take(), {}};
}

}  // namespace clampai::server
