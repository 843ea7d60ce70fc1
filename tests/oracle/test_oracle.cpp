// The brute-force oracle campaign (issue 14): random specs over small bounded domains, every
// verdict of verify, verify --depth, both lookahead engines and repair checked against the
// kernel on every state and parameter vector.
//
// Environment:
//   CLAMPAI_ORACLE_SPECS=N      specs to generate (default 250)
//   CLAMPAI_ORACLE_SEED=S       first seed (default 1); spec i uses seed S + i
//   CLAMPAI_ORACLE_FEATURES=... generator features: `+enum_cross,+if_scale_overflow`, `known`
//                               (every feature whose verifier bug is known), `all`, `-decimals`
//   CLAMPAI_ORACLE_OUT=DIR      where each disagreement's minimized spec is written
//                               (default: the working directory's oracle-out/)
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "oracle.hpp"

namespace fs = std::filesystem;
using namespace clampai::oracle;
using nlohmann::json;

namespace {

std::string env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

void print_summary(const Tally& t, std::size_t disagreements) {
  std::cout << "oracle campaign: " << t.specs << " specs (" << t.load_errors
            << " rejected by the loader), " << t.obligations << " obligations, " << t.lookaheads
            << " lookaheads x 2 engines, " << t.repairs << " repairs; " << t.states
            << " states enumerated, " << t.transitions << " transitions decided; " << disagreements
            << " disagreements\n";
  std::map<std::string, std::map<std::string, std::size_t>> by_area;
  for (const auto& [k, n] : t.verdicts) {
    const auto dot = k.rfind('.');
    by_area[k.substr(0, dot)][k.substr(dot + 1)] += n;
  }
  for (const auto& [area, counts] : by_area) {
    std::size_t total = 0, unknown = 0;
    std::cout << "  " << area << ":";
    for (const auto& [v, n] : counts) {
      std::cout << " " << v << " " << n;
      total += n;
      if (v == "unknown" || v == "incomplete") unknown += n;
    }
    if (unknown > 0)
      std::cout << " (unknown rate " << (100.0 * static_cast<double>(unknown) / total) << "%)";
    std::cout << "\n";
  }
  for (const auto& [r, n] : t.unknown_reasons)
    std::cout << "    unknown: " << n << " x " << r << "\n";
}

}  // namespace

TEST_CASE("oracle: every verdict agrees with the kernel on random bounded specs", "[oracle]") {
  const std::size_t specs = std::stoul(env("CLAMPAI_ORACLE_SPECS", "250"));
  const std::uint64_t first = std::stoull(env("CLAMPAI_ORACLE_SEED", "1"));
  const Features features = parse_features(env("CLAMPAI_ORACLE_FEATURES", ""));
  const fs::path out = env("CLAMPAI_ORACLE_OUT", "oracle-out");
  Tally total;
  std::vector<std::string> found;
  std::set<std::string> kinds_written;
  for (std::size_t i = 0; i < specs; ++i) {
    const std::uint64_t seed = first + i;
    const json spec = with_valid_initial(generate(seed, features), seed);
    Tally t;
    const auto ds = check_spec(spec, seed, features, Checks{}, t);
    total.add(t);
    for (const Disagreement& d : ds) {
      found.push_back("seed " + std::to_string(seed) + ": " + d.kind + ": " + d.detail);
      if (!kinds_written.insert(d.kind).second) continue;  // one reproducer per kind
      const json small = minimize(spec, d.kind, seed, features);
      fs::create_directories(out);
      const fs::path file = out / (d.kind + "-seed" + std::to_string(seed) + ".json");
      std::ofstream(file) << small.dump(2) << "\n";
      Tally scratch;
      std::string again;
      for (const auto& x : check_spec(small, seed, features, Checks{}, scratch))
        if (x.kind == d.kind) again = x.detail;
      found.back() +=
          "\n    minimized: " + file.string() + "\n    " + again + "\n    " + small.dump();
    }
  }
  print_summary(total, found.size());
  for (const auto& f : found) UNSCOPED_INFO(f);
  CHECK(found.empty());
  // The campaign must exercise the verifier: most specs load, and every kind of verdict occurs.
  CHECK(total.load_errors * 10 < specs);
  CHECK(total.verdicts["preservation.proved"] > 0);
  CHECK(total.verdicts["preservation.refuted"] > 0);
}

TEST_CASE("oracle: the feature switches parse, and an unknown one is an error", "[oracle]") {
  const Features f = parse_features("-enum_cross,-decimals");
  CHECK_FALSE(f.enum_cross);
  CHECK_FALSE(f.decimals);
  CHECK(f.if_scale_overflow);
  const Features k = parse_features("known");
  CHECK((k.enum_cross && k.if_scale_overflow && k.depth_bad_initial && k.depth_strict));
  CHECK_THROWS_WITH(parse_features("+enum_crosss"), Catch::Contains("`enum_crosss`"));
  CHECK(feature_names().size() == 12);
}

// The reproducers of the verifier bugs the oracle found (tests/oracle/cases/, see its README),
// kept as regression cases now that the single symbolic step fixed them.
TEST_CASE("oracle: the reproducers in tests/oracle/cases agree with the kernel",
          "[oracle][known]") {
  const Features all = parse_features("all");
  for (const auto& entry :
       fs::directory_iterator(fs::path(CLAMPAI_SOURCE_DIR) / "tests/oracle/cases")) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const json spec = json::parse(in);
    Tally t;
    for (std::uint64_t seed = 1; seed <= 4; ++seed)
      for (const auto& d : check_spec(spec, seed, all, Checks{}, t))
        FAIL_CHECK(entry.path().filename().string() + ": " + d.kind + ": " + d.detail);
    CHECK(t.specs == 4);
  }
}
