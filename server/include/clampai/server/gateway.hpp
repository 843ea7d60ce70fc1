// `clampai gateway SPEC -- COMMAND`: the kernel between an MCP client and one upstream MCP
// server (docs/GATEWAY.md). The spec's `bindings` section (docs/SPEC.md, "Bindings") binds each
// upstream tool to an action, pins it, and computes the action's parameters from the call's
// arguments; every call is decided and committed before it is forwarded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/json.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/kernel/value.hpp"
#include "clampai/server/http.hpp"

namespace clampai::kernel {
class TaskModel;
class SafetyKernel;
class SharedKernel;
}  // namespace clampai::kernel
namespace clampai::driver {
class Committer;
}

namespace clampai::server {

/// One binding expression: computes a number from a tool call's arguments.
struct BindingExpr {
  enum class Op : std::uint8_t {
    constant,    ///< `12`, `-1.5`
    number,      ///< `path.to.arg`: a number argument
    utf8_bytes,  ///< `utf8_bytes(arg)`: a string argument's length in UTF-8 bytes
    count,       ///< `count(arg)`: an array argument's length
    under,       ///< `under(arg, '/prefix')`: 1 if the path lies lexically under the prefix, else 0
  };
  Op op = Op::constant;
  kernel::Decimal constant{};
  std::vector<std::string> argument{};  // the argument's path: `a.b` is {"a", "b"}
  std::string prefix{};                 // `under`: normalised, absolute
  std::string text{};                   // as written in the spec
};

/// An upstream tool bound to an action.
struct ToolBinding {
  std::string tool{};
  std::size_t action = 0;  // index in the model's actions
  std::string pin{};       // tool_pin of the tool as it was bound
  std::vector<std::pair<std::size_t, BindingExpr>> params{};  // parameter index, expression
};

/// The spec's `bindings` section.
struct Bindings {
  std::vector<ToolBinding> tools{};
  /// Methods passed to the upstream as they are (`resources/list`, `prompts/get`...), and the
  /// upstream's requests passed to the client (`is_client_request`).
  std::vector<std::string> allow{};
  [[nodiscard]] const ToolBinding* find(std::string_view tool) const;
  [[nodiscard]] bool allows(std::string_view method) const;
};

/// Whether `method` is one an upstream asks of the client (`roots/list`,
/// `sampling/createMessage`, `elicitation/create`): refused unless `bindings.allow` names it.
bool is_client_request(std::string_view method);

/// Reads the `bindings` section of a spec's JSON text against its model: every tool bound to
/// an action of `model`, every parameter without a default computed by one expression, every
/// expression well formed. A spec without the section has no bindings.
/// @throws SpecError naming the JSON path and, inside an expression, `:1:COLUMN`, with the line
/// and column in the file.
Bindings load_bindings(std::string_view spec_text, const kernel::TaskModel& model);

/// Parses one binding expression (`path` names it in errors).
/// @throws SpecError at `path:1:COLUMN`.
BindingExpr parse_binding_expr(std::string_view text, const std::string& path);

/// The expression's value over a call's `arguments` (an object, or null for none).
/// @throws InvalidArgument naming the argument when it is missing or of the wrong kind.
kernel::Value evaluate_binding(const BindingExpr& e, const kernel::jsonio::JsonNode* arguments);

/// Whether `path` lies lexically under the absolute, normalised `prefix`: `.` and `..`
/// resolved without looking at the file system; a relative path, `~`, or a NUL byte is never
/// under.
bool path_under(std::string_view path, std::string_view prefix);
/// `path` normalised lexically (absolute), or empty when it is not absolute.
std::string normalise_path(std::string_view path);

/// The members of a tool object that its pin covers, and all the client is shown of it:
/// `name`, `title`, `description`, `inputSchema`, `outputSchema` and `annotations`.
kernel::jsonio::JsonNode pinned_fields(const kernel::jsonio::JsonNode& tool);

/// A tool's pin: the SHA-256 (hex) of the RFC 8785 form of its `pinned_fields`.
/// @throws InvalidArgument if the object has no canonical form (a number that is not an
/// integer).
std::string tool_pin(const kernel::jsonio::JsonNode& tool);

/// Reads a gateway's trace entry by entry (`trace verify --spec` of a spec with bindings): the
/// executed steps that no `gateway` outcome entry followed, whose call the gateway forwarded,
/// or was about to, when it stopped: their effect may or may not have happened.
class OutcomeTracker {
 public:
  void add(const kernel::TraceEntry& entry);
  [[nodiscard]] std::vector<std::uint64_t> pending() const {
    return {pending_.begin(), pending_.end()};
  }

 private:
  std::set<std::uint64_t> pending_;
};

/// Who answers the approval a call of an action with `approval` waits for (docs/GATEWAY.md,
/// "Approvals"): the human at the client, asked through MCP elicitation when the client
/// declared it (`elicit`; otherwise as `skip`); nobody, the ticket denied (`deny`); nobody now,
/// the ticket left pending and the call answered with it (`skip`).
enum class GatewayApprovals : std::uint8_t { elicit, deny, skip };

/// The principal a gateway's approval tickets name as who asked, and the one that answers them
/// through elicitation (the client's user: the gateway trusts the client's UI to be a human's).
inline constexpr std::string_view kGatewayClientPrincipal = "gateway-client";
inline constexpr std::string_view kGatewayApproverPrincipal = "client-user";

struct GatewayOptions {
  std::vector<std::string> command{};  // the upstream: program and arguments
  bool clear_env = false;
  std::vector<std::string> env{};  // NAME=VALUE
  std::string trace{};             // the kernel's trace file (this process's own kernel)
  std::string ledger{};            // a shared ledger's URL
  std::size_t max_in_flight = 1;   // calls forwarded and not answered yet at once (1 to 1024)
  std::size_t max_message_bytes = 1 << 20;                // of the client's messages
  std::size_t max_upstream_bytes = 64 << 20;              // of the upstream's
  int upstream_timeout_ms = 5 * 60 * 1000;                // for one answer of the upstream
  GatewayApprovals approvals = GatewayApprovals::elicit;  // --approvals
};

/// Serves one client on `in`/`out` in front of the upstream `options.command`, until `in`
/// ends and every call in flight is answered. Writes what it refuses and hides to `log`.
/// Returns 0, or 1 if the upstream could not be started. `in` is not read while calls are
/// forwarded: with `max_in_flight` above 1, the answers of the calls in flight are read once
/// `max_in_flight` of them are, or `in` has ended.
int run_gateway(std::shared_ptr<const kernel::TaskModel> model,
                const Bindings& bindings,
                const GatewayOptions& options,
                std::istream& in,
                std::ostream& out,
                std::ostream& log);

/// `clampai agent SPEC --upstream -- COMMAND` (docs/GATEWAY.md, "The agent on real tools"): a
/// committer over `inner` that executes every committed step of a bound action through its tool
/// on the upstream `options.command`, started and initialised here, so that what an agent's
/// chooser commits reaches the world only as a call the kernel approved. The call's arguments
/// are the step's parameters written where the bindings read them (`number` bindings; a
/// parameter computed by a `constant` is not written), and the bindings must compute exactly
/// the step's parameters back from them, or the step is refused before the kernel commits it.
/// An action bound to no tool only changes the kernel's state. Each step's outcome is recorded
/// as the gateway records it (in `own`'s trace, or `shared`'s, when not null); an error undoes the
/// step (the chooser is told it was rejected, with the tool's message); a lost answer keeps the
/// charge and throws, ending the run. `bindings`, `inner`, `own` and `log` outlive the committer.
/// @throws InvalidArgument when an action is bound to several tools, a binding cannot be
/// written back (`utf8_bytes`, `count`, `under`), or a bound tool is missing or changed;
/// UpstreamError (an Error) when the upstream cannot be started or initialised.
std::unique_ptr<driver::Committer> upstream_committer(driver::Committer& inner,
                                                      kernel::SafetyKernel* own,
                                                      kernel::SharedKernel* shared,
                                                      const Bindings& bindings,
                                                      const GatewayOptions& options,
                                                      std::ostream& log);

/// The same on the file descriptor `in_fd` (the CLI's standard input), which is also read while
/// calls are forwarded: the client may cancel one (`notifications/cancelled`), a request it
/// cancels before the gateway handles it is dropped unanswered, and its next calls are
/// forwarded while the others wait for their answers, up to `max_in_flight` at once.
int run_gateway(std::shared_ptr<const kernel::TaskModel> model,
                const Bindings& bindings,
                const GatewayOptions& options,
                int in_fd,
                std::ostream& out,
                std::ostream& log);

/// How the gateway serves its client over MCP's Streamable HTTP transport (`--port`).
struct GatewayHttpOptions {
  /// Where and how it listens: `http.limits.max_body_bytes` is --max-message-bytes.
  HttpOptions http{};
  /// The bearer token every request must carry (`--token-file`); empty: none
  /// (`--insecure-no-auth`, a loopback address only).
  std::string token{};
};

/// The same gateway serving its client over HTTP (docs/GATEWAY.md, "Over HTTP"): one endpoint,
/// `/mcp`, where each POST of a JSON-RPC message is answered `application/json`; a session id
/// (`Mcp-Session-Id`) issued at `initialize` and required afterwards (several sessions share
/// the one upstream, initialised once); no server-to-client stream (GET: 405), so the
/// upstream's requests of the client are refused. Calls are forwarded one at a time. Serves
/// until SIGTERM or SIGINT; `on_listening` gets the URL. Returns 0, or 1 if the upstream could
/// not be started.
/// @throws Error if the address cannot be bound or the TLS files cannot be loaded.
int run_gateway_http(std::shared_ptr<const kernel::TaskModel> model,
                     const Bindings& bindings,
                     const GatewayOptions& options,
                     const GatewayHttpOptions& http,
                     const std::function<void(const std::string& url)>& on_listening,
                     std::ostream& log);

/// Starts the upstream, lists its tools and writes a starting `bindings` section (each tool
/// with its pin, bound to no action yet) to `out`. Returns 0, or 1 on failure (said on `log`).
int print_bindings(const GatewayOptions& options, std::ostream& out, std::ostream& log);

}  // namespace clampai::server
