// Persistent states: updates share structure, equality and diff are exact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/state.hpp"

using namespace clampai::kernel;

namespace {
State numbered(std::size_t n) {
  std::vector<std::string> names;
  std::vector<Value> values;
  for (std::size_t i = 0; i < n; ++i) {
    names.push_back("v" + std::to_string(i));
    values.push_back(Value::integer(static_cast<std::int64_t>(i)));
  }
  return State(std::make_shared<const Schema>(names), values);
}
}  // namespace

TEST_CASE("State: reads back every value at every size", "[kernel][state]") {
  for (std::size_t n : {0U, 1U, 31U, 32U, 33U, 1024U, 1025U, 40000U}) {
    const State s = numbered(n);
    REQUIRE(s.size() == n);
    for (std::size_t i = 0; i < n; i += 1 + n / 97)
      REQUIRE(s.get(static_cast<VarId>(i)) == Value::integer(static_cast<std::int64_t>(i)));
    REQUIRE(s.values().size() == n);
  }
}

TEST_CASE("State: with() leaves the original unchanged", "[kernel][state]") {
  const State s = numbered(5000);
  const State t = s.with(4321, Value::string("x"));
  REQUIRE(s.get(4321) == Value::integer(4321));
  REQUIRE(t.get(4321) == Value::string("x"));
  REQUIRE(t.get(4320) == Value::integer(4320));
  REQUIRE_FALSE(s == t);
  REQUIRE(t.with(4321, Value::integer(4321)) == s);
}

TEST_CASE("State: assign_with() is with(), in place only when nothing else sees it",
          "[kernel][state]") {
  for (const std::size_t n : {1, 4, 32, 33, 1100}) {
    const State base = numbered(n);
    const std::vector<std::pair<VarId, Value>> changes{
        {0, Value::integer(-1)}, {VarId(n - 1), Value::string("s")}, {0, Value::integer(-2)}};
    const State expected = base.with(changes);
    State scratch = numbered(n).with({{0, Value::integer(7)}});
    scratch.assign_with(base, changes);
    CHECK(scratch == expected);
    CHECK(scratch.get(0) == Value::integer(-2));  // later changes win
    // A copy taken before is a state of its own: assigning again leaves it alone.
    const State kept = scratch;
    scratch.assign_with(base, {{0, Value::integer(5)}});
    CHECK(kept == expected);
    CHECK(scratch == base.with({{0, Value::integer(5)}}));
    CHECK(base == numbered(n));
    // Assigned to the base itself: the base does not change.
    State alias = base;
    alias.assign_with(base, {{0, Value::integer(9)}});
    CHECK(base == numbered(n));
    CHECK(alias.get(0) == Value::integer(9));
  }
}

TEST_CASE("Changes: inline or spilled, copied and moved, read as a span", "[kernel][state]") {
  // Four fit inline (no allocation); a fifth moves them to the heap. Every path keeps the
  // values, their order, and what with() makes of them.
  for (const std::size_t n : {0, 1, 4, 5, 9}) {
    const State base = numbered(12);
    Changes changes;
    std::vector<Change> expected;
    for (std::size_t i = 0; i < n; ++i) {
      const Change c{VarId(i % 7), Value::string(std::string(i + 1, 'x'))};  // shared payloads
      changes.push_back(c);
      expected.push_back(c);
    }
    const ChangeSpan span = changes;
    REQUIRE(span.size() == n);
    REQUIRE(std::equal(span.begin(), span.end(), expected.begin(), expected.end()));
    const State want = base.with(expected);  // later entries win (i and i + 7 write one var)
    CHECK(base.with(changes) == want);
    Changes copy = changes;
    Changes moved = std::move(copy);
    CHECK(moved.size() == n);
    CHECK(base.with(moved) == want);
    Changes assigned;
    assigned.emplace_back(0, Value::integer(1));
    assigned = moved;
    CHECK(base.with(assigned) == want);
    CHECK(base.with(changes) == want);  // the original is unchanged by all of this
  }
}

TEST_CASE("State: diff lists exactly the changed variables", "[kernel][state]") {
  const State s = numbered(3000);
  const State t =
      s.with({{7, Value::boolean(true)}, {2999, Value::integer(0)}, {1500, Value::integer(1500)}});
  REQUIRE(s.diff(t) == std::vector<VarId>{7, 2999});
  REQUIRE(s.diff(s).empty());
}

TEST_CASE("State: unknown names are errors naming the variable", "[kernel][state]") {
  const State s = make_state({{"balance", Value::integer(10)}});
  REQUIRE(s.get("balance") == Value::integer(10));
  REQUIRE_THROWS_WITH(s.get("balnce"), Catch::Matchers::Contains("unknown variable `balnce`"));
  REQUIRE_THROWS_AS(Schema({"a", "a"}), clampai::InvalidArgument);
}
