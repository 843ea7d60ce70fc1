// The brute-force oracle: random task specs over small bounded domains, and every verdict of the
// public verifier API (verify, --depth, both lookahead engines, repair) checked against what the
// kernel decides on every state and parameter vector of the domain.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace clampai::oracle {

/// Generator features, all on by default; CLAMPAI_ORACLE_FEATURES turns some off (see
/// feature_names()). `known` names the four that found the verifier bugs of issue 14, fixed by
/// the single symbolic step.
struct Features {
  bool enum_cross = true;         // enums that are subsets/permutations of each other, mixed
  bool if_scale_overflow = true;  // an int literal that overflows only at an `if`'s joined scale
  bool depth_bad_initial = true;  // `--depth` on a spec whose initial state breaks an invariant
  bool depth_strict = true;       // a `--depth` unknown whose exact answer is known: a failure
  bool near_overflow = true;      // literals near the int64 edge
  bool old_values = true;         // `old(x)` in invariants
  bool dependencies = true;
  bool emergency = true;
  bool parameters = true;
  bool decimals = true;
  bool enums = true;
  bool lists = true;  // lists of numbers of mixed scales and of enumeration values (issue 34)
};

/// "enum_cross,if_scale_overflow,..." (the known-failing ones) and how to turn each on.
std::vector<std::string> feature_names();
/// Parses "+a,-b,all,known": `all` turns every feature on, `known` every known-failing one.
/// @throws std::invalid_argument naming an unknown feature.
Features parse_features(const std::string& text, Features base = {});

/// One disagreement between a verdict and the kernel.
struct Disagreement {
  std::string kind;    // stable: "verify.false_proved", "lookahead.symbolic.dead_end", ...
  std::string detail;  // the obligation or proposal, and what each side said
};

/// What the campaign saw.
struct Tally {
  std::size_t specs = 0, load_errors = 0, obligations = 0;
  std::map<std::string, std::size_t> verdicts;  // "preservation.proved", "depth.unknown", ...
  std::map<std::string, std::size_t> unknown_reasons;
  std::size_t lookaheads = 0, repairs = 0, states = 0, transitions = 0;
  void add(const Tally& o);
};

struct Checks {
  bool verify = true, depth = true, lookahead = true, repair = true;
};

/// A random spec (JSON) for `seed`.
nlohmann::json generate(std::uint64_t seed, const Features& features);

/// `spec` with an initial state (of the domain) that satisfies every blocking state invariant,
/// when one exists and the spec's does not; otherwise `spec`.
nlohmann::json with_valid_initial(nlohmann::json spec, std::uint64_t seed);

/// Runs every check on `spec`; appends disagreements and counts into `tally`. A spec the loader
/// rejects is counted (load_errors) and not checked.
std::vector<Disagreement> check_spec(const nlohmann::json& spec,
                                     std::uint64_t seed,
                                     const Features& features,
                                     const Checks& checks,
                                     Tally& tally);

/// Removes parts of `spec` while a disagreement of the same kind remains.
nlohmann::json minimize(const nlohmann::json& spec,
                        const std::string& kind,
                        std::uint64_t seed,
                        const Features& features);

}  // namespace clampai::oracle
