// White-box: the explicit lookahead engine compiled with situation keys of two bits, so that
// nearly every new situation's key is already taken and whether it is known rests on the exact
// comparisons alone (state, spend, steps and every completion count). It must still find
// exactly what the naive breadth-first search finds. Built twice: with the completion counts
// compared as one packed word (a search of few actions) and count by count
// (CLAMPAI_LOOKAHEAD_UNPACKED_COUNTS).
#define CLAMPAI_LOOKAHEAD_KEY_MASK \
  std::uint64_t { 3 }
#include "../../driver/src/lookahead.cpp"  // NOLINT: the engine itself, with colliding keys

#include <catch2/catch.hpp>
#include <random>

#include "lookahead_reference.hpp"
#include "random_basin_spec.hpp"

TEST_CASE("with colliding keys the engine still finds exactly the naive search's situations",
          "[lookahead][property]") {
  using namespace clampai::kernel;
  using namespace clampai::driver;
  std::mt19937_64 rng(20261129);
  int compared = 0;
  for (int i = 0; i < 200; ++i) {
    const auto m = clampai::test::random_basin_spec(rng);
    if (!m) continue;
    const Situation start = Situation::initial(*m);
    LookaheadOptions o;
    o.depth = 3;
    for (std::size_t a = 0; a < m->actions.size(); ++a) {
      const Proposal p{a, clampai::test::param_vectors(m->actions[a]).back()};
      const Decision d = decide(*m, start, p);
      if (!d.approved) continue;
      INFO("spec " << i << ", action " << m->actions[a].id);
      clampai::test::NaiveBfs look{*m, true, o.depth};
      look.run(advance(*m, start, d));
      clampai::test::check_against_bfs(*m, lookahead(*m, start, p, o), look);
      ++compared;
    }
    clampai::test::NaiveBfs plan{*m, false, o.depth};
    plan.run(start);
    INFO("spec " << i << ", plan to the goal");
    clampai::test::check_against_bfs(*m, plan_to_goal(*m, start, o), plan);
  }
  CHECK(compared > 80);
}
