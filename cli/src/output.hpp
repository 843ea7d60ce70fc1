// Output helpers shared by the `clampai` subcommands (private to the CLI).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "clampai/kernel/value.hpp"
#include "clampai/verifier/verify.hpp"

namespace clampai::cli {

/// `{"name": "value as text", ...}`.
nlohmann::json named_values_json(const std::vector<std::pair<std::string, kernel::Value>>& values);

/// Prints a counterexample as a table of variables, before and (for a transition) after, on
/// stdout, indented by four spaces.
void print_counterexample(const verifier::Counterexample& cex);

}  // namespace clampai::cli
