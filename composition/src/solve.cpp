// The solver obligations, decided by worker threads in batches: however many a composition
// has, only one batch of checks is held at a time, and each worker keeps one solver context
// (with its encodings of every model) for the whole run.
#include <algorithm>

#include "clampai/kernel/parallel.hpp"
#include "compose_internal.hpp"

namespace clampai::composition::detail {

using verifier::VerdictKind;

namespace {

// Checks held at once, per worker: large enough that workers seldom wait for each other at the
// end of a batch, small enough that a batch's premises stay a few megabytes.
constexpr std::size_t kBatchPerWorker = 512;

}  // namespace

struct Solver::Worker {
  verifier::ContractChecker checker;
  Worker(unsigned ms, const verifier::Deadline& deadline) : checker(ms, deadline) {}
};

Solver::Solver(const Manifest& m,
               const Invariants& inv,
               const ComposeOptions& options,
               const verifier::Deadline& deadline,
               std::function<void()> tick)
    : m_(m),
      inv_(inv),
      options_(options),
      deadline_(deadline),
      tick_(std::move(tick)),
      batch_(kBatchPerWorker * std::max(1U, options.jobs)) {}

Solver::~Solver() = default;

void Solver::submit(Obligation o, verifier::ContractCheck c) {
  pending_.push_back(Pending{std::move(o), std::move(c)});
  if (pending_.size() >= batch_) flush();
}

std::vector<Obligation> Solver::finish() {
  flush();
  return std::move(done_);
}

void Solver::flush() {
  workers_.resize(std::max<std::size_t>(workers_.size(),
                                        kernel::parallel_workers(pending_.size(), options_.jobs)));
  kernel::parallel_for(pending_.size(), options_.jobs, [&](std::size_t i, unsigned w) {
    Pending& p = pending_[i];
    if (deadline_.passed()) {
      p.obligation.verdict = VerdictKind::unknown;
      p.obligation.reason = deadline_.not_reached();
    } else {
      // A check never runs past the deadline: the checker cuts its limit to the time left.
      auto& worker = workers_[w];
      if (!worker) worker = std::make_unique<Worker>(options_.timeout_ms, deadline_);
      decide(*worker, p);
    }
    tick_();
  });
  for (auto& p : pending_) done_.push_back(std::move(p.obligation));
  pending_.clear();
}

// Adds, until the counterexample satisfies every task's invariants, the invariants it violates
// as premises: they hold throughout, so such a state is not a real one.
void Solver::decide(Worker& w, Pending& p) const {
  std::vector<char> added(inv_.distinct.size(), 0);
  auto add = [&](std::size_t k) {
    if (added[k] != 0) return false;
    added[k] = 1;
    p.check.premises.push_back(inv_.distinct[k].formula);
    return true;
  };
  std::set<std::string> names = verifier::variables_of(p.check.conclusion);
  for (const auto& f : p.check.premises) {
    auto v = verifier::variables_of(f);
    names.insert(v.begin(), v.end());
  }
  if (p.check.actor) {
    for (const auto& eff : p.check.actor->actions[p.check.action].effects)
      names.insert(p.check.actor->variables[eff.variable].name);
  }
  for (const auto& name : names) {
    if (auto it = inv_.by_var.find(name); it != inv_.by_var.end()) {
      for (std::size_t k : it->second) add(k);
    }
  }
  for (;;) {
    const verifier::ContractOutcome r = w.checker.check(p.check);
    p.obligation.verdict = r.verdict;
    p.obligation.reason = r.reason;
    if (r.verdict != VerdictKind::refuted) return;
    // Which invariants does the counterexample's pre-state violate?
    bool violated = false;
    const kernel::State& start = m_.universe->initial_state();
    std::map<std::size_t, kernel::State> states;  // by task
    for (std::size_t k = 0; k < inv_.distinct.size(); ++k) {
      if (added[k] != 0) continue;
      const auto& e = inv_.distinct[k];
      auto it = states.find(e.task);
      if (it == states.end())
        it =
            states.emplace(e.task, project(m_, start, *m_.tasks[e.task].model, r.assignment)).first;
      const kernel::State& s = it->second;
      const kernel::EvalResult v =
          kernel::evaluate(*e.formula.expr, kernel::EvalEnv{&s, {}, &s, nullptr});
      if (v.ok() && v.value.as_bool()) continue;
      violated = add(k) || violated;
    }
    if (!violated) {
      p.obligation.counterexample = r.counterexample;
      return;
    }
  }
}

}  // namespace clampai::composition::detail
