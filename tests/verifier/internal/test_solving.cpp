// The one place where the verifier's solver calls run (verifier/src/solving.hpp): the words of
// an unknown, and the run's deadline.
#include <catch2/catch.hpp>

#include "../../../verifier/src/solving.hpp"

using namespace clampai::verifier;

TEST_CASE("Solving: a give-up of Z3's sequence theory is not called nonlinear arithmetic",
          "[verifier][solving]") {
  // Issue 34: an action that multiplies made every give-up "nonlinear arithmetic (...)", even
  // Z3's sequence theory giving up on a list.
  const std::string seq = detail::gave_up("incomplete (theory seq)", /*nonlinear=*/true);
  CHECK(seq.rfind("incomplete (sequences): ", 0) == 0);
  CHECK_THAT(seq, Catch::Contains("(incomplete (theory seq))"));
  CHECK_THAT(seq, !Catch::Contains("nonlinear"));
  CHECK(detail::gave_up("(incomplete (theory arithmetic))", true) ==
        "nonlinear arithmetic ((incomplete (theory arithmetic)))");
  CHECK(detail::gave_up("unknown", false) == "the solver gave up (unknown)");
}

TEST_CASE("Solving: a deadline cuts each call to the time left, and none runs after it",
          "[verifier][solving]") {
  const Deadline none;
  CHECK_FALSE(none.set());
  CHECK_FALSE(none.passed());
  CHECK(none.cut(500) == 500);
  CHECK_FALSE(Deadline::after(0).set());

  const Deadline later = Deadline::after(3600000);
  CHECK(later.cut(500) == 500);
  CHECK(later.cut(7200000) <= 3600000);
  CHECK(later.cut(7200000) >= 1);

  const Deadline soon = Deadline::after(1);
  while (!soon.passed()) {
  }
  CHECK(soon.cut(500) == 0);
  CHECK(soon.not_reached() ==
        "not checked: the run's time limit (1 ms, --timeout) was reached first");

  // A call after the deadline is unknown without solving; before it, it solves.
  detail::Session session(/*alone=*/true);
  z3::context& ctx = session.ctx();
  z3::solver solver(ctx);
  solver.add(ctx.int_const("x") > 3);
  const z3::expr_vector none_assumed(ctx);
  const detail::Outcome late = session.check(solver, none_assumed, detail::Limits{500, soon});
  CHECK(late.result == z3::unknown);
  CHECK(late.reason == soon.not_reached());
  CHECK_FALSE(late.failed);
  const detail::Outcome in_time = session.check(solver, none_assumed, detail::Limits{500, later});
  CHECK(in_time.result == z3::sat);
}
