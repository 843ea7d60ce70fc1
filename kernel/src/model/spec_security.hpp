// Reading the spec's parts for the reference monitor and the invariant library: labels,
// sinks, emits, attestors, attestations, templates. Private to the kernel's spec loader.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"
#include "json.hpp"

namespace clampai::kernel::detail {

/// The label member `key` of `obj` (`PUBLIC`, ...), or nullopt when absent.
std::optional<SecurityLabel> get_label(const JsonNode& obj,
                                       const std::string& path,
                                       const char* key);
/// An action's `emits`: `[{"sink": NAME, "value": EXPR}]`.
std::vector<EmitDecl> parse_emits(const JsonNode& n, const std::string& path);
/// A list of attestor names (an action's or the goal's `attestations`).
std::vector<std::string> parse_attestation_names(const JsonNode& n, const std::string& path);
/// The top-level `sinks`: `{NAME: {"label": L, "description": D}}`.
std::vector<SinkDecl> parse_sinks(const JsonNode& n);
/// The top-level `attestors`: `{NAME: {"command": [...]} | {"http": {...}} | {"all": [...]} |
/// {"quorum": K, "of": [...]} | {"external": true}}`.
std::vector<AttestorDecl> parse_attestors(const JsonNode& n);
/// The top-level `probes`: `{VARIABLE: {"command": [...] | "http": {...}, "tolerance": N,
/// "timeout_ms": N, "max_output_bytes": N}}`.
std::vector<ProbeDecl> parse_probes(const JsonNode& n);
/// The top-level `readiness`: `{ACTION: {"command": [...] | "http": {...}, "initial_delay_ms",
/// "multiplier", "max_delay_ms", "deadline_ms", "timeout_ms", "max_output_bytes"}}`.
std::vector<ReadinessDecl> parse_readiness(const JsonNode& n);
/// An invariant written as an invariant-library template (`"template": NAME` and its
/// parameters, instead of `check`): reads the whole invariant object, filling `inv.expression`
/// or the native-template fields.
void parse_invariant_template(const JsonNode& n, const std::string& path, InvariantDecl& inv);

}  // namespace clampai::kernel::detail
