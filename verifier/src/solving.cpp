#include "solving.hpp"

#include <cstdint>
#include <mutex>
#include <string>

namespace clampai::verifier::detail {

namespace {

std::mutex sessions_mutex;
unsigned sessions = 0;      // alive
std::uint64_t kept_mb = 0;  // what Z3 still holds after running out of memory (see rebase)

// Under sessions_mutex.
void set_memory_limit() {
  const std::uint64_t mb = kept_mb + kSolverMemoryMb + std::uint64_t{kSessionMemoryMb} * sessions;
  Z3_global_param_set("memory_max_size", std::to_string(mb).c_str());
}

}  // namespace

void limit_solver_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::lock_guard lock(sessions_mutex);
    set_memory_limit();
  });
}

void rebase_memory_limit() {
  const std::lock_guard lock(sessions_mutex);
  kept_mb = Z3_get_estimated_alloc_size() >> 20;
  set_memory_limit();
}

std::shared_mutex& units() {
  static std::shared_mutex m;
  return m;
}

Session::Raw::Raw() {
  {
    const std::lock_guard lock(sessions_mutex);
    ++sessions;
    set_memory_limit();
  }
  z3::config config;
  c = Z3_mk_context_rc(config);
  if (c == nullptr) {
    const std::lock_guard lock(sessions_mutex);
    --sessions;
    set_memory_limit();
    throw z3::exception("Z3 could not create a context (out of memory)");
  }
}

Session::Raw::~Raw() {
  Z3_del_context(c);
  const std::lock_guard lock(sessions_mutex);
  --sessions;
  set_memory_limit();
}

Session::Session(bool alone) : alone_(alone) {}

std::string Session::not_created(const z3::exception& e, bool alone) {
  if (!alone) throw OutOfMemory{};
  return std::string("the solver failed: ") + e.msg();
}

bool Session::out_of_memory() noexcept { return Z3_get_error_code(ctx()) == Z3_MEMOUT_FAIL; }

std::string Session::failure(const z3::exception& e) {
  if (out_of_memory()) {
    if (!alone_) throw OutOfMemory{};
    return "the solver failed: out of memory (Z3's limit: " + std::to_string(kSolverMemoryMb) +
           " MB, and " + std::to_string(kSessionMemoryMb) + " MB per context in use)";
  }
  return std::string("the solver failed: ") + e.msg();
}

Outcome Session::check(z3::solver& solver,
                       const z3::expr_vector& assumptions,
                       const Limits& limits,
                       bool nonlinear) {
  Outcome out;
  const unsigned ms = limits.deadline.cut(limits.call_ms);
  if (ms == 0) {
    out.reason = limits.deadline.not_reached();
    return out;
  }
  try {
    out.result = watchdog_.run(ms, [&] { return solver.check(assumptions); });
    if (out.result != z3::unknown) return out;
    const std::string why = solver.reason_unknown();
    if (watchdog_.timed_out() || why.find("timeout") != std::string::npos ||
        why.find("canceled") != std::string::npos) {
      out.reason = ms < limits.call_ms ? limits.deadline.interrupted()
                                       : "timeout after " + std::to_string(limits.call_ms) + " ms";
    } else {
      out.reason = gave_up(why, nonlinear);
    }
  } catch (const z3::exception& e) {
    out.result = z3::unknown;
    out.failed = true;
    out.reason = failure(e);
  }
  return out;
}

std::string gave_up(const std::string& z3_reason, bool nonlinear) {
  if (z3_reason.find("seq") != std::string::npos)
    return "incomplete (sequences): Z3's theory of sequences, which holds the lists, gave up (" +
           z3_reason + ")";
  if (nonlinear) return "nonlinear arithmetic (" + z3_reason + ")";
  return "the solver gave up (" + z3_reason + ")";
}

}  // namespace clampai::verifier::detail
