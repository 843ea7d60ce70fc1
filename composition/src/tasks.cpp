// Every task verified once per distinct model, or its certificate reused.
#include <algorithm>
#include <map>

#include "certificate.hpp"
#include "clampai/kernel/parallel.hpp"
#include "compose_internal.hpp"

namespace clampai::composition::detail {

using verifier::VerdictKind;

std::vector<TaskResult> verify_tasks(const Manifest& m,
                                     const ComposeOptions& options,
                                     const verifier::Deadline& deadline,
                                     const std::function<void()>& tick,
                                     ObligationSink& sink) {
  std::map<const kernel::TaskModel*, std::size_t> first;  // one verification per distinct model
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < m.tasks.size(); ++i) {
    if (first.emplace(m.tasks[i].model.get(), i).second) todo.push_back(i);
  }
  std::vector<TaskResult> results(m.tasks.size());
  std::vector<char> skipped(m.tasks.size(), 0);
  kernel::parallel_for(todo.size(), options.jobs, [&](std::size_t item, unsigned) {
    const std::size_t k = todo[item];
    const unsigned left = deadline.cut(options.timeout_ms);
    if (left == 0) {
      TaskResult& r = results[k];
      r.name = m.tasks[k].name;
      r.file = m.tasks[k].file;
      r.digest = m.tasks[k].model->digest;
      r.unknown = 1;
      skipped[k] = 1;
    } else if (deadline.set()) {
      // Its solver time cut to the time left (a certificate records the limit it was made
      // under, so unknowns from a cut run are not reused by a run with a longer one).
      ComposeOptions cut = options;
      cut.timeout_ms = left;
      results[k] = certify(m.tasks[k], cut);
    } else {
      results[k] = certify(m.tasks[k], options);
    }
    tick();
  });
  std::vector<TaskResult> out;
  for (std::size_t i = 0; i < m.tasks.size(); ++i) {
    if (first.at(m.tasks[i].model.get()) != i) continue;  // reported once, under its first name
    TaskResult& r = results[i];
    Obligation o;
    o.kind = ObligationKind::task;
    o.id = "task:" + r.name;
    o.tasks = {r.name};
    o.file = r.file;
    o.verdict = r.refuted > 0   ? VerdictKind::refuted
                : r.unknown > 0 ? VerdictKind::unknown
                                : VerdictKind::proved;
    o.reason = skipped[i] != 0
                   ? deadline.not_reached()
                   : std::to_string(r.proved) + " proved, " + std::to_string(r.refuted) +
                         " refuted, " + std::to_string(r.unknown) + " unknown" +
                         (r.reused ? " (certificate reused)" : "");
    if (!r.findings.empty() && o.verdict != VerdictKind::proved) {
      const auto& f = r.findings.front();
      o.reason += "; first: " + f.id + ": " + f.reason;
      o.loc = f.loc;
    }
    sink.decided(std::move(o));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace clampai::composition::detail
