// What a task spec declares for the reference monitor (docs/HARDENING.md): security labels on
// variables and sinks, what actions emit to sinks, attestors and the attestations actions and
// the goal require. The kernel's decision reads none of it; the model carries it for
// clampai::hardening (the monitor) and the verifier (the static flow report).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/expr.hpp"

namespace clampai::kernel {

/// The information-flow lattice, a chain: PUBLIC ⊑ INTERNAL ⊑ PII ⊑ SECRET. An unlabelled
/// variable is PUBLIC.
enum class SecurityLabel : std::uint8_t { public_data, internal, pii, secret };
/// `PUBLIC`, `INTERNAL`, `PII` or `SECRET`.
std::string_view to_string(SecurityLabel label);
/// The label spelled `name` (as `to_string` spells it), or nullopt.
std::optional<SecurityLabel> parse_security_label(std::string_view name);
/// True iff data labelled `from` may flow to a place labelled `to` (`from ⊑ to`).
constexpr bool may_flow(SecurityLabel from, SecurityLabel to) noexcept { return from <= to; }
/// The least upper bound.
constexpr SecurityLabel join(SecurityLabel a, SecurityLabel b) noexcept { return a < b ? b : a; }

/// A place data leaves the task for (a log, a mailbox, a third-party API), with its label.
struct SinkDecl {
  std::string name{};
  SecurityLabel label = SecurityLabel::public_data;
  std::string description{};
};

/// What an action sends to a sink: the value of `value` (an expression over the pre-action
/// state and the parameters) goes to sink `sink`.
struct EmitDecl {
  std::string sink{};
  std::string value{};
};

/// A built emit.
struct Emit {
  std::size_t sink = 0;  // index into TaskModel::sinks
  ExprPtr value{};
};

/// How an attestor declared in a spec checks the world.
enum class AttestorKind : std::uint8_t {
  command,   // runs `argv` (an allowlisted program; hardening::SubprocessAttestor)
  http,      // asks `url` (hardening::HttpAttestor)
  all,       // every one of `members` passes
  quorum,    // at least `quorum` of `members` pass
  external,  // supplied by the host program through the C++ API under this name
};
/// `command`, `http`, `all`, `quorum`, `external`.
std::string_view to_string(AttestorKind kind);

/// An attestor as a spec declares it (`attestors.NAME`). Which programs may run is not the
/// spec's to say: the monitor's allowlist decides.
struct AttestorDecl {
  std::string name{};
  AttestorKind kind = AttestorKind::external;
  std::vector<std::string> argv{};  // command
  std::string url{};                // http
  std::string method = "GET";       // http
  std::string body{};               // http (POST)
  std::int64_t expect_status = 200;
  std::optional<std::string> expect_body_contains{};
  std::vector<std::string> members{};  // all, quorum
  std::int64_t quorum = 0;             // quorum
  std::optional<std::int64_t> timeout_ms{};
  std::optional<std::int64_t> max_output_bytes{};
  std::string description{};
};

/// An environment reconciliation probe (`probes.VARIABLE`): a command or HTTP check whose
/// output (trimmed) is the world's value of `variable`. A number drifts when it differs from
/// the model's by more than `tolerance`; any other value when it differs.
struct ProbeDecl {
  std::string variable{};
  AttestorDecl check{};  // command or http; `name` is the spec path
  Decimal tolerance{};
};

/// A readiness probe on the `dependencies` edges into `dependency` (`readiness.ACTION`): an
/// action that depends on `dependency` runs only once the check passes, polled with exponential
/// backoff until `deadline_ms` after the first check.
struct ReadinessDecl {
  std::string dependency{};
  AttestorDecl check{};  // command or http; passes iff ready
  std::int64_t initial_delay_ms = 100;
  Decimal multiplier{2, 0};
  std::int64_t max_delay_ms = 5000;
  std::int64_t deadline_ms = 30000;
};

class TaskModel;

/// One flow of labelled data inside one action, from what an expression reads to what the
/// action writes or emits. Exact data flow over the expressions' reads: an action that reads
/// no labelled variable has no flow; `len(x)` reads a list's length (`x`), not its elements
/// (`x[]`); both branches and the condition of an `if` flow to its value; the action's
/// `requires` flows to everything it writes or emits (whether it runs reveals its guard).
/// Parameters are PUBLIC (the agent supplies them).
struct InformationFlow {
  std::size_t action = 0;  // index in the model
  std::string source{};    // a variable, or `x[]` for the elements of list x
  SecurityLabel source_label = SecurityLabel::public_data;
  std::string target{};  // a variable, `x[]`, or `sink:NAME`
  SecurityLabel target_label = SecurityLabel::public_data;
  std::string path{};        // the expression's JSON path: `actions[2].effects[0].value`...
  std::string expression{};  // its source text
  /// True iff the flow moves data to a lower label (`source_label ⋢ target_label`).
  [[nodiscard]] bool downward() const noexcept { return !may_flow(source_label, target_label); }
};

/// Every flow of labelled (non-PUBLIC) data in the model's actions, or only the downward ones.
/// In action order, then effect and emit order. No counterpart in the proofs: the analysis is
/// syntactic and sound for the data it sees (docs/HARDENING.md says what it does not see).
std::vector<InformationFlow> information_flows(const TaskModel& model, bool downward_only = false);

/// True iff `model` declares a check that only the reference monitor (`hardening/`) enforces:
/// an attestation of an action or of the goal, a reconciliation probe, a readiness probe, or a
/// downward information flow. A bare SafetyKernel does not run these, so a front end that
/// serves the model without the monitor must refuse it rather than approve what it forbids.
[[nodiscard]] bool needs_reference_monitor(const TaskModel& model);

}  // namespace clampai::kernel
