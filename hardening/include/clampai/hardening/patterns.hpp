// The regular-expression engine of the invariant library's pattern templates (`pii_pattern`,
// `secret_pattern`): RE2, linear-time matching, no backtracking blow-up on hostile input.
#pragma once

#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"

namespace clampai::hardening {

/// Installs RE2 as the kernel's pattern compiler (kernel::set_pattern_compiler), so that specs
/// with pattern templates load. Call it once before loading such specs; calling it again is
/// harmless. A pattern invariant holds iff no string in its variables (strings, enums, the
/// elements of lists of them) contains a match of one of its patterns.
void install_pattern_engine();

/// The compiler `install_pattern_engine` installs.
/// @throws SpecError at `path[k]` for a pattern RE2 refuses, with RE2's reason.
kernel::NativePredicate compile_patterns(const std::vector<kernel::VarId>& variables,
                                         const std::vector<std::string>& patterns,
                                         const std::string& path);

}  // namespace clampai::hardening
