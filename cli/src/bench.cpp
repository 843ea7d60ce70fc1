// `clampai bench SPEC`: decisions per second and latency percentiles on the user's own spec.
#include "bench.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"
#include "clampai/report/progress.hpp"
#include "clampai/report/wire.hpp"
#include "output.hpp"

namespace clampai::cli {
namespace {

namespace cd = clampai::driver;
namespace ck = clampai::kernel;
using Clock = std::chrono::steady_clock;

// At most this many states of the deterministic run are evaluated in (spread along the run).
constexpr std::size_t kMaxStates = 16;
// The deterministic run is cut here; longer runs only add states we would not sample.
constexpr std::size_t kMaxRunSteps = 1024;
// A kernel of phase 2 is replaced after this many commits, so its in-memory trace stays small
// however long the benchmark runs.
constexpr std::uint64_t kMaxStepsPerKernel = 10000;

struct BenchArgs {
  std::string spec;
  double seconds = 2.0;
  std::string* format = nullptr;
};

// The subcommand's arguments live from the parse to the run; main.cpp sees only two functions.
BenchArgs& bench_args() {
  static BenchArgs args;
  return args;
}

// Latencies in a log-linear histogram: exact below 64 ns, then 64 buckets per power of two, so
// a percentile is within 1/64 (1.6 %) of the true value in fixed memory, however long the run.
class LatencyHistogram {
 public:
  void record(std::uint64_t ns) {
    ++counts_[index(ns)];
    ++count_;
    total_ns_ += ns;
    max_ns_ = std::max(max_ns_, ns);
  }
  [[nodiscard]] std::uint64_t count() const { return count_; }
  [[nodiscard]] std::uint64_t total_ns() const { return total_ns_; }
  [[nodiscard]] std::uint64_t max_ns() const { return max_ns_; }
  // The smallest bucket bound that at least `q` of the calls do not exceed (capped at the max).
  [[nodiscard]] std::uint64_t percentile(double q) const {
    if (count_ == 0) return 0;
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(upper_bound(i), max_ns_);
    }
    return max_ns_;
  }

 private:
  static constexpr int kSubBits = 6;
  static constexpr std::uint64_t kSub = std::uint64_t{1} << kSubBits;

  static std::size_t index(std::uint64_t v) {
    if (v < kSub) return static_cast<std::size_t>(v);
    const int shift = static_cast<int>(std::bit_width(v)) - 1 - kSubBits;
    return static_cast<std::size_t>(kSub + static_cast<std::uint64_t>(shift) * kSub +
                                    ((v >> shift) - kSub));
  }
  static std::uint64_t upper_bound(std::size_t i) {
    if (i < kSub) return i;
    const auto shift = static_cast<int>((i - kSub) / kSub);
    const std::uint64_t sub = (i - kSub) % kSub;
    return ((kSub + sub + 1) << shift) - 1;
  }

  std::array<std::uint64_t, kSub + (64 - kSubBits) * kSub> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t total_ns_ = 0;
  std::uint64_t max_ns_ = 0;
};

struct PhaseStats {
  LatencyHistogram latency;
  std::uint64_t approved = 0;
  std::uint64_t rejected = 0;
  std::uint64_t restarts = 0;  // phase 2: fresh kernels started (not timed)
  double wall_seconds = 0;

  [[nodiscard]] double decisions_per_second() const {
    return latency.total_ns() == 0 ? 0.0
                                   : static_cast<double>(latency.count()) * 1e9 /
                                         static_cast<double>(latency.total_ns());
  }
};

std::uint64_t nanoseconds(Clock::duration d) {
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
}

// One proposal per action, with the parameters the deterministic driver uses.
std::vector<ck::Proposal> default_proposals(const ck::TaskModel& model) {
  std::vector<ck::Proposal> out;
  for (std::size_t i = 0; i < model.actions.size(); ++i)
    out.push_back(cd::default_proposal(model, i));
  return out;
}

// The proposals the deterministic driver commits from the initial state until nothing is
// approvable. It does not stop at the goal, so phase 1 sees the states phase 2 executes in.
std::vector<ck::Proposal> deterministic_run(const std::shared_ptr<const ck::TaskModel>& model) {
  ck::SafetyKernel kernel(model);
  cd::FirstApprovableDriver driver;
  std::vector<ck::Proposal> run;
  while (run.size() < kMaxRunSteps) {
    cd::Choice choice = driver.next(kernel);
    if (!choice.proposal || !kernel.execute(*choice.proposal).decision.approved) break;
    run.push_back(std::move(*choice.proposal));
  }
  return run;
}

// Kernels in up to kMaxStates states spread along the run (the initial and the last included),
// each reached by really executing the run's prefix, so budget, step counts and dependencies
// are those of the run and not only the variables.
std::vector<std::unique_ptr<ck::SafetyKernel>> kernels_along(
    const std::shared_ptr<const ck::TaskModel>& model, const std::vector<ck::Proposal>& run) {
  const std::size_t n_states = run.size() + 1;
  const std::size_t samples = std::min(n_states, kMaxStates);
  std::vector<std::unique_ptr<ck::SafetyKernel>> kernels;
  for (std::size_t s = 0; s < samples; ++s) {
    const std::size_t prefix = samples == 1 ? 0 : s * (n_states - 1) / (samples - 1);
    auto kernel = std::make_unique<ck::SafetyKernel>(model);
    for (std::size_t i = 0; i < prefix; ++i) (void)kernel->execute(run[i]);
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

// Phase 1: `evaluate` of every action in every sampled state, round robin, until `deadline`.
PhaseStats bench_evaluate(const std::vector<std::unique_ptr<ck::SafetyKernel>>& kernels,
                          const std::vector<ck::Proposal>& proposals,
                          Clock::time_point deadline) {
  PhaseStats stats;
  const auto start = Clock::now();
  if (proposals.empty()) return stats;
  for (bool done = false; !done;) {
    for (const auto& kernel : kernels) {
      for (const ck::Proposal& p : proposals) {
        const auto t0 = Clock::now();
        const bool approved = kernel->evaluate(p).approved;  // the decision is freed inside
        const auto t1 = Clock::now();
        stats.latency.record(nanoseconds(t1 - t0));
        ++(approved ? stats.approved : stats.rejected);
        done = t1 >= deadline;
        if (done) break;
      }
      if (done) break;
    }
  }
  stats.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

// Phase 2: atomic `execute` (check, commit, SHA-256 trace entry) of what the deterministic
// driver proposes, on a fresh kernel restarted (untimed) when nothing is approvable any more.
// If nothing is approvable even in the initial state, every action is executed (and rejected)
// instead, so the phase still measures something.
PhaseStats bench_execute(const std::shared_ptr<const ck::TaskModel>& model,
                         const std::vector<ck::Proposal>& proposals,
                         Clock::time_point deadline) {
  PhaseStats stats;
  const auto start = Clock::now();
  if (proposals.empty()) return stats;
  cd::FirstApprovableDriver driver;
  auto kernel = std::make_unique<ck::SafetyKernel>(model);
  std::uint64_t committed = 0;  // by this kernel
  auto timed_execute = [&](const ck::Proposal& p) {
    const auto t0 = Clock::now();
    const bool approved = kernel->execute(p).decision.approved;
    const auto t1 = Clock::now();
    stats.latency.record(nanoseconds(t1 - t0));
    ++(approved ? stats.approved : stats.rejected);
    committed += approved ? 1 : 0;
    return t1;
  };
  for (auto now = Clock::now(); now < deadline;) {
    cd::Choice choice = committed < kMaxStepsPerKernel ? driver.next(*kernel) : cd::Choice{};
    if (choice.proposal) {
      now = timed_execute(*choice.proposal);
    } else if (committed == 0) {
      for (const ck::Proposal& p : proposals) {
        now = timed_execute(p);
        if (now >= deadline) break;
      }
    } else {
      kernel = std::make_unique<ck::SafetyKernel>(model);
      committed = 0;
      ++stats.restarts;
      now = Clock::now();
    }
  }
  stats.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

// The median cost of one steady_clock read, which every latency below includes once.
std::uint64_t clock_overhead_ns() {
  std::vector<std::uint64_t> samples(1001);
  for (auto& s : samples) {
    const auto t0 = Clock::now();
    const auto t1 = Clock::now();
    s = nanoseconds(t1 - t0);
  }
  std::nth_element(samples.begin(), samples.begin() + 500, samples.end());
  return samples[500];
}

std::string with_commas(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string human_rate(double per_second) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  if (per_second >= 1e6) {
    os << per_second / 1e6 << " M";
  } else if (per_second >= 1e3) {
    os << per_second / 1e3 << " k";
  } else {
    os << per_second;
  }
  return os.str();
}

std::string human_ns(std::uint64_t ns) {
  std::ostringstream os;
  if (ns < 1000) {
    os << ns << " ns";
  } else if (ns < 1000000) {
    os << std::fixed << std::setprecision(ns < 10000 ? 2 : 1) << static_cast<double>(ns) / 1e3
       << " us";
  } else {
    os << std::fixed << std::setprecision(2) << static_cast<double>(ns) / 1e6 << " ms";
  }
  return os.str();
}

// `{"calls", "approved", "rejected", "seconds", "timed_seconds", "decisions_per_second",
// "latency_ns": {"p50", "p99", "max", "mean"}, "restarts"?}` (restarts: the execute phase).
void write_phase(report::JsonWriter& j, const PhaseStats& s, bool restarts) {
  const auto& h = s.latency;
  j.begin_object().key("calls").value(h.count()).key("approved").value(s.approved);
  j.key("rejected").value(s.rejected).key("seconds").value(s.wall_seconds);
  j.key("timed_seconds").value(static_cast<double>(h.total_ns()) / 1e9);
  j.key("decisions_per_second").value(s.decisions_per_second());
  j.key("latency_ns").begin_object().key("p50").value(h.percentile(0.50));
  j.key("p99").value(h.percentile(0.99)).key("max").value(h.max_ns()).key("mean");
  j.value(h.count() == 0 ? 0.0
                         : static_cast<double>(h.total_ns()) / static_cast<double>(h.count()));
  j.end_object();
  if (restarts) j.key("restarts").value(s.restarts);
  j.end_object();
}

void print_phase_row(const char* name, const PhaseStats& s) {
  const auto& h = s.latency;
  std::cout << "  " << std::left << std::setw(10) << name << std::right << std::setw(12)
            << with_commas(h.count()) << std::setw(13) << human_rate(s.decisions_per_second())
            << std::setw(10) << human_ns(h.percentile(0.50)) << std::setw(10)
            << human_ns(h.percentile(0.99)) << std::setw(10) << human_ns(h.max_ns())
            << std::setw(12) << with_commas(s.approved) << std::setw(12) << with_commas(s.rejected)
            << "\n";
}

int bench(const BenchArgs& args) {
  const auto model = ck::load_spec_file(args.spec);
  const std::vector<ck::Proposal> proposals = default_proposals(*model);
  const std::vector<ck::Proposal> run = deterministic_run(model);  // refuses a bad initial state
  const auto kernels = kernels_along(model, run);
  const std::uint64_t clock_ns = clock_overhead_ns();

  const auto start = Clock::now();
  const auto half =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args.seconds / 2));
  report::Progress progress(report::Progress::for_stderr("bench", quiet()));
  progress.phase("evaluate");
  const PhaseStats evaluate = bench_evaluate(kernels, proposals, start + half);
  progress.phase("execute");
  const PhaseStats execute = bench_execute(model, proposals, Clock::now() + half);
  progress.stop();

  if (*args.format == "json") {
    report::JsonWriter j(report::JsonWriter::Layout::indented);
    j.begin_object().key("spec").value(args.spec).key("name").value(model->name);
    j.key("seconds").value(args.seconds).key("actions").value(model->actions.size());
    j.key("states").value(kernels.size()).key("run_steps").value(run.size());
    j.key("clock_overhead_ns").value(clock_ns);
    write_phase(j.key("evaluate"), evaluate, false);
    write_phase(j.key("execute"), execute, true);
    std::cout << j.end_object().take() << "\n";
    return 0;
  }
  std::cout << "bench " << args.spec << (model->name.empty() ? "" : " (" + model->name + ")")
            << ": " << model->actions.size() << " action" << (model->actions.size() == 1 ? "" : "s")
            << ", " << kernels.size() << " state" << (kernels.size() == 1 ? "" : "s") << " along a "
            << run.size() << "-step deterministic run, " << std::fixed << std::setprecision(1)
            << args.seconds << " s\n";
  std::cout << "  " << std::left << std::setw(10) << "phase" << std::right << std::setw(12)
            << "calls" << std::setw(13) << "decisions/s" << std::setw(10) << "p50" << std::setw(10)
            << "p99" << std::setw(10) << "max" << std::setw(12) << "approved" << std::setw(12)
            << "rejected"
            << "\n";
  print_phase_row("evaluate", evaluate);
  print_phase_row("execute", execute);
  std::cout << "  decisions/s counts the time inside the calls; each latency includes one clock "
               "read ("
            << clock_ns << " ns)\n  execute restarted on a fresh kernel "
            << with_commas(execute.restarts) << " time" << (execute.restarts == 1 ? "" : "s")
            << " when nothing was approvable or after 10,000 steps (not timed)\n";
  return 0;
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, std::string& format_out) {
  BenchArgs& args = bench_args();
  args.format = &format_out;
  auto* cmd = app.add_subcommand(
      "bench",
      "Measure the kernel on a task spec: decisions per second and latency percentiles (p50, "
      "p99) for evaluate and atomic execute");
  set_help_footer(cmd,
                  "0 measured, 2 bad input",
                  "clampai bench examples/quickstart.json --seconds 1",
                  "README.md (The clampai command)");
  cmd->add_option("SPEC", args.spec, "Task spec (JSON)")->required();
  cmd->add_option("--seconds", args.seconds, "How long to measure, split between the two phases")
      ->check(CLI::Validator(
          [](std::string& text) {
            double v = 0;
            if (!CLI::detail::lexical_cast(text, v) || !(v > 0 && v <= 3600))
              return "must be a number in (0, 3600], not `" + text + "`";
            return std::string();
          },
          "in (0, 3600]"))
      ->capture_default_str();
  cmd->add_option("--format", format_out, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  add_quiet_flag(cmd);
  return cmd;
}

int run_bench_command() {
  const BenchArgs& args = bench_args();
  try {
    return bench(args);
  } catch (const clampai::Error& e) {  // the spec cannot be loaded, or its initial state is bad
    return fail(*args.format, "bench", args.spec, describe(args.spec, e));
  }
}

}  // namespace clampai::cli
