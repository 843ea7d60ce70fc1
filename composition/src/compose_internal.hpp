// The parts of `compose` (docs/COMPOSE.md), one responsibility each:
//   tasks.cpp       every task verified, or its certificate reused (certificate.cpp);
//   invariants.cpp  the tasks' blocking state invariants, which hold throughout;
//   start.cpp       the composite's start state against invariants and first assumes;
//   generate.cpp    the composition obligations, from walking the tree with its facts;
//   budgets.cpp     budgets and forbidden variables;
//   solve.cpp       the solver obligations decided by worker threads, in bounded batches;
//   compose.cpp     the run: counting, the limits, the phases, the report.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clampai/composition/compose.hpp"
#include "clampai/verifier/contract.hpp"

namespace clampai::composition::detail {

using Facts = std::vector<verifier::Formula>;
using Clock = std::chrono::steady_clock;

/// Where every obligation goes as it is found: settled already, or a check for the solver.
/// `site` names the part of the composition that gives rise to a check (for the limit's
/// message).
class ObligationSink {
 public:
  virtual ~ObligationSink() = default;
  virtual void decided(Obligation o) = 0;
  virtual void check(Obligation o, verifier::ContractCheck c, const std::string& site) = 0;

 protected:
  ObligationSink() = default;
  ObligationSink(const ObligationSink&) = default;
  ObligationSink& operator=(const ObligationSink&) = default;
};

/// The blocking state invariants of every task, which hold throughout (docs/COMPOSE.md), with
/// those of the same text over the same (shared) variables kept once: many tasks of a wide
/// composition repeat one invariant, and each copy would only lengthen every check.
struct Invariants {
  struct Entry {
    std::size_t task = 0;
    verifier::Formula formula;
    std::set<std::string> variables;
  };
  std::vector<Facts> per_task;                             // all, by task
  std::vector<Entry> distinct;                             // one per text
  std::map<std::string, std::vector<std::size_t>> by_var;  // variable -> indices into distinct

  explicit Invariants(const Manifest& m);
};

/// A state of `model` with the composite's values: `base` (a state of the manifest's universe),
/// overridden by `values`.
kernel::State project(const Manifest& m,
                      const kernel::State& base,
                      const kernel::TaskModel& model,
                      const std::vector<std::pair<std::string, kernel::Value>>& values);

/// Verifies every distinct task model (reusing certificates), on `options.jobs` threads, and
/// reports one `task:` obligation per model. Tasks not started by `deadline` are unknown.
/// `tick` is called after each task.
std::vector<TaskResult> verify_tasks(const Manifest& m,
                                     const ComposeOptions& options,
                                     const verifier::Deadline& deadline,
                                     const std::function<void()>& tick,
                                     ObligationSink& sink);

/// The composite's start state: every task's blocking invariants hold in it, and (a closed
/// composite) what the nodes that run first assume. Reported only when refuted.
void check_start_state(const Manifest& m, ObligationSink& sink);

/// Budgets of the composites, and their forbidden variables.
void check_budgets(const Manifest& m, ObligationSink& sink);
void check_forbidden(const Manifest& m, ObligationSink& sink);

/// Walks the composition and emits its obligations (sequential, parallel, conditional,
/// repeat, contract, interference) to `sink`, in a stable order with unique ids.
void generate_obligations(const Manifest& m, const Invariants& inv, ObligationSink& sink);

/// Decides checks on worker threads, `batch` at a time, so that memory stays bounded however
/// many there are: each worker keeps one solver context for the whole run. Results are kept
/// in submission order.
class Solver {
 public:
  Solver(const Manifest& m,
         const Invariants& inv,
         const ComposeOptions& options,
         const verifier::Deadline& deadline,
         std::function<void()> tick);
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  void submit(Obligation o, verifier::ContractCheck c);
  /// Decides what is still pending and returns every decided obligation, in submission order.
  std::vector<Obligation> finish();

 private:
  struct Pending {
    Obligation obligation;
    verifier::ContractCheck check;
  };
  struct Worker;
  void flush();
  void decide(Worker& w, Pending& p) const;

  const Manifest& m_;
  const Invariants& inv_;
  const ComposeOptions& options_;
  verifier::Deadline deadline_;
  std::function<void()> tick_;
  std::size_t batch_;
  std::vector<Pending> pending_;
  std::vector<Obligation> done_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace clampai::composition::detail
