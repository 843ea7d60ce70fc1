// The HTTP API of `clampai serve` without the sockets: one request in, one response out, so
// every route, error and limit is testable without a network (docs/SERVE.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/kernel/pools.hpp"
#include "clampai/server/principals.hpp"

namespace clampai::server {

/// The limits that keep a hostile or broken client from exhausting the server.
struct Limits {
  std::size_t max_body_bytes = std::size_t{1} << 20;  // larger bodies: 413 body_too_large
  std::size_t max_header_bytes = 8 * 1024;            // larger headers: 431 headers_too_large
  std::size_t max_json_depth = 32;                    // deeper bodies: 400 json_too_deep
  std::uint32_t request_timeout_ms = 30000;           // to read a request, and to write back
  unsigned max_lookahead_depth = 8;                   // `depth` of /lookahead
  std::uint32_t solver_timeout_ms = 5000;             // Z3's limit in /repair and /verify
};

/// How a `Service` runs.
struct ServiceOptions {
  /// Where each task's trace (`TASK.jsonl`) and spec (`TASK.spec.json`) are kept; empty: the
  /// traces live in memory only (the last 4,096 entries of each task).
  std::string data_dir{};
  /// A shared ledger's URL (docs/LEDGER.md: postgresql://..., file:PATH, memory:): each task's
  /// kernel shares its budget, state and trace with other processes through the task's ledger
  /// (named by the spec's `name`). Not with `data_dir` (the constructor refuses both).
  std::string ledger{};
  /// The bearer token every request but `GET /v1/health` must carry; empty: no authentication
  /// (the command allows that only on a loopback address, with `--insecure-no-auth`).
  std::string token{};
  /// Who may call, and what each may do (`--principals`): every request but `GET /v1/health`
  /// must carry one's token, and each route needs a right (docs/SERVE.md); a missing right is
  /// 403 forbidden. Not with `token` (which stands for one principal with every right).
  std::vector<Principal> principals{};
  Limits limits{};
  /// Signs each task's seal and checkpoints (`--signing-key`: `KernelOptions::signer`); with
  /// `ledger`, the checkpoints this server commits (`SharedOptions::signer`), one at shutdown.
  std::function<std::string(std::string_view)> signer{};
  /// A `checkpoint` entry every this many trace entries (`--checkpoint-every`); 0: none.
  std::uint64_t checkpoint_every = 0;
  /// Where to append one JSON line per decision (`--decision-log`,
  /// schema/decision-log.schema.json); empty: none.
  std::string decision_log{};
  /// The budget pools of the process (`--pools`, clampai/kernel/pools.hpp): a task whose budget
  /// names a pool charges every level of it (`GET /v1/pools` shows them); null: none, and a
  /// task whose budget names a pool is refused.
  std::shared_ptr<kernel::PoolTree> pools{};
  /// Shadow mode (`--shadow TASK`, docs/SERVE.md): the tasks named here decide and record every
  /// execute but block none (`SafetyKernel::execute_unenforced`); `shadow_all` (`--mode
  /// shadow`): every task. Not with `ledger` (the constructor refuses it).
  std::vector<std::string> shadow{};
  bool shadow_all = false;
  /// Where to log (one line each: a restored task, a rate of malformed requests); may be empty.
  std::function<void(const std::string&)> log{};
  /// The clock of the tasks' trace entries and approvals' deadlines, in microseconds since the
  /// epoch (tests inject one: a ticket expires when it is touched or listed at or after its
  /// deadline); empty: the system clock.
  std::function<std::int64_t()> clock{};
  /// Test hook: called at the named points of a reload's commit (reload.hpp); may be empty.
  std::function<void(std::string_view)> pause{};
};

/// One HTTP request, as the transport parsed it.
struct Request {
  std::string method{};         // `GET`, `POST`...
  std::string target{};         // the path and query, e.g. `/v1/tasks/t/evaluate`
  std::string authorization{};  // the `Authorization` header, if any
  std::string body{};
  /// Empty when `body` is the request's whole body (possibly empty). Otherwise why the
  /// transport could not read the body (its length could not be determined): `handle` then
  /// refuses the request (400 malformed_request) whatever its route, so that no route ever
  /// takes a lost body for an empty one (a rollback for "the latest").
  std::string body_unreadable{};
  /// Every header field as received (names as sent), for handlers that read more than
  /// `authorization` (the gateway over HTTP: Origin, Mcp-Session-Id...).
  std::vector<std::pair<std::string, std::string>> headers{};
  /// The first header field named `name` (case-insensitive), or nothing.
  [[nodiscard]] const std::string* header(std::string_view name) const;
};

/// One response. JSON unless `content_type` says otherwise; when `next_chunk` is set, the body
/// is streamed in chunks (each call puts the next one in its argument and returns false at the
/// end) instead of `body`.
struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body{};
  std::function<bool(std::string&)> next_chunk{};
  /// Headers to send besides Content-Type (the live page's Content-Security-Policy...).
  std::vector<std::pair<std::string, std::string>> headers{};
};

class Task;

/// The tasks a server serves, each its own kernel named by its spec's `name`, and the routes of
/// the API. Thread-safe: `handle` may run on any number of threads at once.
class Service {
 public:
  /// Creates the service; with a data directory, restores every task whose spec is kept there
  /// (`TASK.spec.json`), each resumed from its trace (`TASK.jsonl`): the chain verified and
  /// every entry replayed through a fresh kernel. A trace whose last line was cut short by a
  /// crash loses that line (it was never acknowledged); a sealed trace is kept whole as
  /// `TASK.N.sealed.jsonl` and continued from the entry before its seal.
  /// @throws Error naming the task and the file if a trace does not verify or replay, or the
  /// data directory cannot be used.
  explicit Service(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Adds a task from a spec file's text (`origin` names it in errors). A task of that name
  /// already restored from the data directory is kept if its spec has the same digest.
  /// Returns the task's name.
  /// @throws SpecError for an invalid spec; Error if its name is not a task name (letters,
  /// digits, `_` and `-`, at most 64) or is taken by another spec.
  std::string add_task(std::string_view spec_text, const std::string& origin);

  /// Answers `request`. Never throws: every failure is a JSON error with a stable code
  /// (docs/SERVE.md). A request that is malformed or unauthorised changes no kernel.
  Response handle(const Request& request) noexcept;

  /// The JSON error response `{"error": {"code": CODE, "message": MESSAGE}}`.
  static Response error(int status, std::string_view code, std::string_view message);

  /// Reloads the task `spec_text` names (SIGHUP re-reads the `--spec` files) behind the
  /// proofs of `PUT /v1/tasks/{task}/spec` (docs/SERVE.md, "Reloads"). Returns a line for the
  /// log (`origin` names the file): what was replaced, or that the spec is unchanged.
  /// @throws Error naming `origin` and which check failed, with the details, if it is refused
  /// (the old spec stays) or names no served task; what the reload's writes throw.
  std::string reload_task(std::string_view spec_text, const std::string& origin);

  /// Replaces the principals (SIGHUP re-reads `--principals`): requests that arrive afterwards
  /// are authenticated against `principals` only.
  /// @throws InvalidArgument if `principals` is empty, or the service serves without
  /// authentication (it cannot be switched on, nor off, while serving).
  void set_principals(std::vector<Principal> principals);

  /// Opens the decision log's path again (SIGHUP, after a rotation moved it away): later
  /// lines go to the new file. Nothing without a decision log.
  /// @throws FileError if it cannot be opened; the old file stays in use.
  void reopen_decision_log();

  /// Counts a request the transport refused before it reached `handle` (413, 431, 400), for
  /// the metrics and the malformed-request log.
  void note_refused(int status, std::string_view code);

  /// Counts a connection the listener failed to accept (`clampai_accept_errors_total`; the
  /// listener goes on accepting), and logs it at most every 10 seconds.
  void note_accept_error(std::string_view message);

  /// Seals every task's trace and flushes it to its file. Afterwards every request that would
  /// change a kernel is refused (409 task_sealed). Idempotent.
  void shutdown();

  /// The names of the tasks, sorted.
  [[nodiscard]] std::vector<std::string> task_names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in either case the clients
/// send it: `Bearer`, `bearer`), or nothing when the header carries no bearer token.
[[nodiscard]] std::optional<std::string_view> bearer_token(std::string_view authorization);

/// True iff `given` equals `expected`, in time that depends on neither (both are hashed with
/// SHA-256 and the digests compared with CRYPTO_memcmp).
[[nodiscard]] bool token_matches(std::string_view given, std::string_view expected);

}  // namespace clampai::server
