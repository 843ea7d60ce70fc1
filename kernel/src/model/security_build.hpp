// Building the monitor's parts of a model (labels, sinks, emits, attestors, native templates)
// and their canonical form. Private to the kernel (model.cpp calls it).
#pragma once

#include <functional>
#include <string>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/model.hpp"
#include "json.hpp"

namespace clampai::kernel::detail {

/// Sinks, attestors (names resolve, composites without cycles), the actions' emits and
/// attestations, the goal's attestations. Requires the variables and actions to be built.
/// Each problem goes to `problem`.
void build_security(TaskModel& m,
                    const TaskDecl& decl,
                    const std::function<void(const SpecError&)>& problem);

/// The predicate of a native template invariant (`no_duplicate_ids`, the pattern ones) into
/// `out`, with its opaque reason. @throws SpecError under `path`.
void build_native_invariant(const TaskModel& m,
                            const InvariantDecl& decl,
                            const std::string& path,
                            Invariant& out);

/// Adds the monitor's parts to the canonical form (only those a spec declares, so that a spec
/// without them keeps its digest).
void add_security_form(JsonNode& root, const TaskModel& m);

/// Adds the native template invariants' parameters (variables, patterns) to the canonical form,
/// so that two specs that differ only in them have different digests.
void add_native_invariants_form(JsonNode& root, const TaskDecl& decl);

}  // namespace clampai::kernel::detail
