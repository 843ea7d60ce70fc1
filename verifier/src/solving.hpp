// The one place where the verifier's solver calls run: a fresh Z3 context per unit of work, a
// watchdog that interrupts a check at its limit (the per-call limit, cut to the run's deadline),
// the memory limit every context shares, and the words of an `unknown`.
//
// The memory limit is Z3's, for the whole process (Z3 counts what all its contexts allocate):
// a query that Z3 cannot interrupt (some sequence queries grow for many seconds without looking
// at the interrupt) ends there, out of memory, instead of taking gigabytes. Since the count is
// shared, a unit that runs out of memory beside others may be the victim of another: it is run
// again alone (`run_unit`), so that what it reports depends on itself only.
#pragma once

#include <z3++.h>

#include <shared_mutex>
#include <string>

#include "clampai/verifier/deadline.hpp"
#include "watchdog.hpp"

namespace clampai::verifier::detail {

/// Z3's memory limit for all contexts of the process, in megabytes: kSolverMemoryMb, plus
/// kSessionMemoryMb for each Session alive (a context that has solved holds about 17 MB), plus
/// what Z3 kept after running out of memory (rebase_memory_limit).
inline constexpr unsigned kSolverMemoryMb = 1024;
inline constexpr unsigned kSessionMemoryMb = 32;

/// The limits of every solver call of a run.
struct Limits {
  unsigned call_ms = 10000;  // --timeout-ms
  Deadline deadline{};       // --timeout
};

/// Thrown out of a unit that is not alone when Z3 ran out of memory (see run_unit).
struct OutOfMemory {};

/// How a check ended. `reason` says why it is unknown.
struct Outcome {
  z3::check_result result = z3::unknown;
  std::string reason{};
  bool failed = false;  // a z3::exception (not a give-up or a time limit)
};

/// A fresh Z3 context with its watchdog: one per unit of work whose answers must not depend on
/// what else was solved (a model depends on the context's history).
class Session {
 public:
  /// `alone`: no other unit runs (run_unit), so running out of memory is this unit's own
  /// failure; otherwise it throws OutOfMemory. @throws z3::exception if Z3 cannot create it
  explicit Session(bool alone);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  z3::context& ctx() noexcept { return scoped_(); }
  [[nodiscard]] bool alone() const noexcept { return alone_; }

  /// Checks `solver` (of this context) under `assumptions` within `limits`. Never throws a
  /// z3::exception: a failure is an unknown outcome (`failed`). `nonlinear`: the query
  /// multiplies non-constant terms (it names a give-up of Z3's arithmetic).
  /// @throws OutOfMemory (see the constructor)
  Outcome check(z3::solver& solver,
                const z3::expr_vector& assumptions,
                const Limits& limits,
                bool nonlinear = false);

  /// The reason when the constructor threw `e`. @throws OutOfMemory when not `alone` (Z3
  /// cannot say why without a context, so the unit runs again alone)
  static std::string not_created(const z3::exception& e, bool alone);

  /// True iff the last call in this context failed because Z3 ran out of memory.
  [[nodiscard]] bool out_of_memory() noexcept;

  /// The reason for a z3::exception raised by work in this context: `the solver failed: ...`.
  /// @throws OutOfMemory when Z3 ran out of memory and this session is not alone
  std::string failure(const z3::exception& e);

 private:
  // z3::context does not check that Z3 could create the context (it cannot when out of
  // memory): this one does, and deletes it last.
  struct Raw {
    Z3_context c;
    Raw();  // @throws z3::exception
    ~Raw();
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;
  };
  Raw raw_;
  z3::scoped_context scoped_{raw_.c};
  Watchdog watchdog_{scoped_()};
  bool alone_;
};

/// Why Z3 gave up (`reason_unknown`), in the report's words: `incomplete (sequences): ...` when
/// its sequence theory (lists) gave up, `nonlinear arithmetic (...)` when the query multiplies
/// non-constant terms, `the solver gave up (...)` otherwise.
std::string gave_up(const std::string& z3_reason, bool nonlinear);

/// Shared by units that solve: held shared while a unit runs, exclusively by a unit run alone.
std::shared_mutex& units();

/// Z3 does not free everything a query held when it runs out of memory (hundreds of megabytes
/// stay allocated, and counted): the limit is raised by what Z3 holds now. Called with no
/// other unit running, after a unit that ran out of memory, so that the next ones get the
/// same room.
void rebase_memory_limit();

/// Runs `unit(alone)` beside other units (alone = false); if it throws OutOfMemory, runs it
/// again from scratch with no other unit running (alone = true). Units never nest.
template <typename Unit>
void run_unit(Unit&& unit) {
  {
    std::shared_lock lock(units());
    try {
      unit(false);
      return;
    } catch (const OutOfMemory&) {
    }
  }
  std::unique_lock lock(units());
  struct Rebase {
    ~Rebase() { rebase_memory_limit(); }
  } rebase;
  unit(true);
}

}  // namespace clampai::verifier::detail
