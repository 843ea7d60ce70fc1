// The kernel's private additions to the JSON layer (clampai/kernel/json.hpp); the kernel's
// sources name all of it as `detail::`.
#pragma once

#include <string>
#include <string_view>

#include "clampai/kernel/json.hpp"

namespace clampai::kernel::jsonio {

/// Appends the canonical JSON of a value (same text as canonicalising value_to_json(v)).
void append_value(std::string& out, const Value& v);
/// The boolean member `key`, or `fallback` when absent.
bool get_bool(const JsonNode& obj, const std::string& path, const char* key, bool fallback);

}  // namespace clampai::kernel::jsonio

namespace clampai::kernel::detail {
using namespace clampai::kernel::jsonio;  // NOLINT(google-build-using-namespace)
}  // namespace clampai::kernel::detail
