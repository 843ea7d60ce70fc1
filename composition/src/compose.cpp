// A composition run (docs/COMPOSE.md): the obligations are counted first (a run beyond
// `max_obligations` is refused before any work), then the tasks are verified, and the
// obligations generated and decided as a stream (compose_internal.hpp names the parts).
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "clampai/kernel/error.hpp"
#include "compose_internal.hpp"
#include "source_digest.hpp"

namespace clampai::composition {

using verifier::VerdictKind;

std::string_view to_string(ObligationKind k) {
  static constexpr std::string_view kNames[] = {"task",
                                                "sequential",
                                                "parallel",
                                                "conditional",
                                                "repeat",
                                                "interference",
                                                "contract",
                                                "budget",
                                                "forbidden"};
  return kNames[static_cast<int>(k)];
}

std::string_view toolkit_version() {
  // The release and the digest of the sources that decide verdicts: a certificate made by any
  // other build (another release, or a development build with other sources) is not reused.
  static const std::string version = std::string("clampai ") + CLAMPAI_VERSION + " (sources " +
                                     std::string(CLAMPAI_SOURCE_DIGEST).substr(0, 16) + ")";
  return version;
}

int ComposeReport::exit_code(bool fail_on_unknown) const {
  if (refuted > 0) return 1;
  if (unknown > 0) return fail_on_unknown ? 1 : 3;
  return 0;
}

namespace {

// Counts the solver obligations, by the part of the composition that gives rise to them.
class Counter final : public detail::ObligationSink {
 public:
  std::size_t total = 0;
  std::map<std::string, std::size_t> by_site;
  void decided(Obligation) override {}
  void check(Obligation, verifier::ContractCheck, const std::string& site) override {
    ++total;
    ++by_site[site];
  }
};

std::string thousands(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// Ids made unique in the order obligations arrive (a repeated id gets `#2`, `#3`...); settled
// obligations go to the report, checks to the solver.
class Collector final : public detail::ObligationSink {
 public:
  Collector(ComposeReport& report, detail::Solver& solver) : report_(report), solver_(solver) {}
  void decided(Obligation o) override {
    unique(o);
    report_.obligations.push_back(std::move(o));
  }
  void check(Obligation o, verifier::ContractCheck c, const std::string&) override {
    unique(o);
    c.id = o.id;
    solver_.submit(std::move(o), std::move(c));
  }

 private:
  ComposeReport& report_;
  detail::Solver& solver_;
  std::map<std::string, int> ids_;
  void unique(Obligation& o) {
    const int k = ++ids_[o.id];
    if (k > 1) o.id += "#" + std::to_string(k);
  }
};

}  // namespace

ComposeReport compose(const Manifest& manifest, const ComposeOptions& options) {
  const auto start = detail::Clock::now();
  const verifier::Deadline deadline = verifier::Deadline::after(options.run_timeout_ms);
  const detail::Invariants invariants(manifest);

  // Counted before anything is verified: a composition too big for the limit is refused at
  // once, and progress knows its total.
  Counter counter;
  detail::generate_obligations(manifest, invariants, counter);
  if (options.max_obligations > 0 && counter.total > options.max_obligations) {
    const auto biggest = std::max_element(
        counter.by_site.begin(), counter.by_site.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;
        });
    throw Error("`" + manifest.file + "`: the composition has " + thousands(counter.total) +
                " solver obligations, more than the limit of " +
                thousands(options.max_obligations) + " (--max-obligations); most (" +
                thousands(biggest->second) + ") come from " + biggest->first +
                ". Split wide parallel groups, make their branches independent (no branch "
                "writing what another reads or writes), or raise the limit");
  }
  std::size_t distinct = 0;
  {
    std::set<const kernel::TaskModel*> models;
    for (const auto& t : manifest.tasks) distinct += models.insert(t.model.get()).second;
  }
  const std::size_t total = distinct + counter.total;
  std::mutex progress_mutex;
  std::size_t done = 0;
  const auto tick = [&] {
    if (!options.progress) return;
    const std::lock_guard lock(progress_mutex);
    options.progress(++done, total);
  };
  if (options.progress) options.progress(0, total);

  ComposeReport report;
  detail::Solver solver(manifest, invariants, options, deadline, tick);
  Collector collector(report, solver);
  report.tasks = detail::verify_tasks(manifest, options, deadline, tick, collector);
  for (const auto& t : report.tasks) report.reused += t.reused;
  detail::check_start_state(manifest, collector);
  detail::generate_obligations(manifest, invariants, collector);
  detail::check_budgets(manifest, collector);
  detail::check_forbidden(manifest, collector);
  for (auto& o : solver.finish()) report.obligations.push_back(std::move(o));
  for (const auto& o : report.obligations) {
    switch (o.verdict) {
      case VerdictKind::proved:
        ++report.proved;
        break;
      case VerdictKind::refuted:
        ++report.refuted;
        break;
      case VerdictKind::unknown:
        ++report.unknown;
        break;
    }
  }
  report.seconds = std::chrono::duration<double>(detail::Clock::now() - start).count();
  return report;
}

}  // namespace clampai::composition
