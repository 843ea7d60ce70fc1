// The reference monitor: the spec's attestors built, the gates consulted through the kernel's
// guard, the probes compared with the model, readiness polled on an injected clock.
#include "clampai/hardening/monitor.hpp"

#include <algorithm>
#include <cctype>
#include <thread>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/spec_loader.hpp"

namespace clampai::hardening {

namespace ck = clampai::kernel;
using clampai::InvalidArgument;
using std::chrono::milliseconds;

// The execution in progress on this thread: where its attestations go, and a veto decided
// before the kernel was asked (readiness).
struct ReferenceMonitor::Armed {
  const ReferenceMonitor* monitor = nullptr;
  std::vector<Attestation>* attestations = nullptr;
  std::optional<ck::Reason> veto{};
};

namespace {

thread_local ReferenceMonitor::Armed* t_armed = nullptr;

std::string trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && space(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// A probe's text as a value of `variable`'s type.
ProbeReading read_text(const AttestationContext& ctx,
                       const std::string& variable,
                       std::string text) {
  ProbeReading r;
  const auto id = ctx.model->schema->find(variable);
  const ck::Type& type = ctx.model->variables[*id].type;
  text = trim(std::move(text));
  if (type.kind() == ck::Type::Kind::string || type.kind() == ck::Type::Kind::enumeration) {
    r.value = ck::Value::string(text);
    return r;
  }
  try {
    const ck::State s = ck::parse_state(*ctx.model, "{\"" + variable + "\": " + text + "}");
    r.value = s.get(*id);
  } catch (const clampai::Error& e) {
    r.error = "cannot read `" + text.substr(0, 80) + "` as a " + type.to_string() + ": " + e.what();
  }
  return r;
}

bool within(const ck::Value& model,
            const ck::Value& world,
            const ck::Decimal& tolerance,
            std::string& detail) {
  if (model.kind() == ck::Value::Kind::number && world.kind() == ck::Value::Kind::number) {
    auto diff = ck::checked_sub(world.as_number(), model.as_number());
    if (diff && diff->units < 0) diff = ck::checked_neg(*diff);
    if (diff && *diff <= tolerance) return true;
    detail = "differs by " + (diff ? diff->to_string() : std::string("more than int64")) +
             ", tolerance " + tolerance.to_string();
    return false;
  }
  if (model == world) return true;
  detail = "differs";
  return false;
}

// The runner of a spec's command check: the monitor's allowlist and limits, the check's own
// timeout and output cap. @throws InvalidArgument (`what`: ...) if the program is refused.
SubprocessRunner runner_for(const ck::AttestorDecl& d,
                            const MonitorOptions& options,
                            const std::string& what) {
  SubprocessLimits limits = options.limits;
  if (d.timeout_ms) limits.timeout = milliseconds(*d.timeout_ms);
  if (d.max_output_bytes) limits.max_output_bytes = static_cast<std::size_t>(*d.max_output_bytes);
  ProgramAllowlist allow(options.allowed_programs);
  if (auto why = allow.refusal(d.argv.front())) throw InvalidArgument(what + ": " + *why);
  return SubprocessRunner(std::move(allow), limits);
}

// The request of a spec's http check.
HttpCheck http_check_for(const ck::AttestorDecl& d) {
  HttpCheck check;
  check.url = d.url;
  check.method = d.method;
  check.body = d.body;
  check.expect_status = static_cast<long>(d.expect_status);
  check.expect_body_contains = d.expect_body_contains;
  if (d.timeout_ms) check.timeout = milliseconds(*d.timeout_ms);
  if (d.max_output_bytes) check.max_response_bytes = static_cast<std::size_t>(*d.max_output_bytes);
  return check;
}

// The state a readiness check of the spec reads `{name}` from: the one the gated action starts
// from, on this thread.
thread_local const ck::State* t_readiness_state = nullptr;

std::shared_ptr<const Attestor> build_attestor(
    const ck::TaskModel& m,
    std::size_t i,
    const MonitorOptions& options,
    std::vector<std::shared_ptr<const Attestor>>& built) {
  if (built[i]) return built[i];
  const ck::AttestorDecl& d = m.attestors[i];
  std::shared_ptr<const Attestor> out;
  switch (d.kind) {
    case ck::AttestorKind::command:
      out = std::make_shared<SubprocessAttestor>(
          d.name, d.argv, runner_for(d, options, "attestor `" + d.name + "`"));
      break;
    case ck::AttestorKind::http:
      out = std::make_shared<HttpAttestor>(d.name, http_check_for(d));
      break;
    case ck::AttestorKind::all:
    case ck::AttestorKind::quorum: {
      std::vector<std::shared_ptr<const Attestor>> members;
      for (const std::string& name : d.members) {
        const auto it = std::find_if(m.attestors.begin(),
                                     m.attestors.end(),
                                     [&](const ck::AttestorDecl& a) { return a.name == name; });
        members.push_back(
            build_attestor(m, static_cast<std::size_t>(it - m.attestors.begin()), options, built));
      }
      out = std::make_shared<MultiDimensionalAttestor>(
          d.name,
          std::move(members),
          d.kind == ck::AttestorKind::all ? 0 : static_cast<std::size_t>(d.quorum));
      break;
    }
    case ck::AttestorKind::external: {
      const auto it = options.attestors.find(d.name);
      if (it == options.attestors.end() || !it->second)
        throw InvalidArgument("attestor `" + d.name +
                              "` is external: supply it in MonitorOptions::attestors");
      out = it->second;
      break;
    }
  }
  built[i] = out;
  return out;
}

}  // namespace

Probe command_probe(std::string variable,
                    std::vector<std::string> argv,
                    SubprocessRunner runner,
                    ck::Decimal tolerance) {
  Probe p;
  p.variable = variable;
  p.tolerance = tolerance;
  auto attestor =
      std::make_shared<SubprocessAttestor>("probe:" + variable, std::move(argv), std::move(runner));
  p.read = [attestor, variable](const AttestationContext& ctx) {
    const Attestation a = run_attestor(*attestor, ctx);
    if (!a.passed) {
      ProbeReading r;
      r.error = a.error.empty() ? a.evidence : a.error;
      return r;
    }
    return read_text(ctx, variable, a.evidence);
  };
  return p;
}

Probe http_probe(std::string variable, HttpCheck check, ck::Decimal tolerance) {
  Probe p;
  p.variable = variable;
  p.tolerance = tolerance;
  p.read = [check = std::move(check), variable](const AttestationContext& ctx) {
    HttpAnswer a = perform_http(check, ctx);
    ProbeReading r;
    if (!a.error.empty()) {
      r.error = a.error;
    } else if (a.status != check.expect_status) {
      r.error = "HTTP " + std::to_string(a.status) + " (expected " +
                std::to_string(check.expect_status) + ")";
    } else {
      r = read_text(ctx, variable, a.body);
    }
    return r;
  };
  return p;
}

Probe callback_probe(std::string variable,
                     std::function<ck::Value(const AttestationContext&)> read,
                     ck::Decimal tolerance) {
  Probe p;
  p.variable = std::move(variable);
  p.tolerance = tolerance;
  p.read = [read = std::move(read)](const AttestationContext& ctx) {
    ProbeReading r;
    try {
      r.value = read(ctx);
    } catch (const std::exception& e) {
      r.error = std::string("threw: ") + e.what();
    }
    return r;
  };
  return p;
}

ReferenceMonitor::ReferenceMonitor(std::shared_ptr<const ck::TaskModel> model,
                                   MonitorOptions options)
    : model_(std::move(model)), options_(std::move(options)) {
  if (!model_) throw InvalidArgument("reference monitor: no model");
  const ck::TaskModel& m = *model_;
  for (const auto& [name, impl] : options_.attestors) {
    const bool external = std::any_of(m.attestors.begin(), m.attestors.end(), [&](const auto& a) {
      return a.name == name && a.kind == ck::AttestorKind::external;
    });
    if (!external)
      throw InvalidArgument("attestor `" + name + "` is not an external attestor of the spec");
  }
  attestors_.resize(m.attestors.size());
  for (std::size_t i = 0; i < m.attestors.size(); ++i) build_attestor(m, i, options_, attestors_);

  // The spec's probes and readiness probes, after the host's.
  for (const ck::ProbeDecl& d : m.probes) {
    const std::string what = "probe `" + d.check.name + "`";
    options_.probes.push_back(
        d.check.kind == ck::AttestorKind::command
            ? command_probe(
                  d.variable, d.check.argv, runner_for(d.check, options_, what), d.tolerance)
            : http_probe(d.variable, http_check_for(d.check), d.tolerance));
  }
  for (const ck::ReadinessDecl& d : m.readiness) {
    const std::string what = "readiness probe `" + d.check.name + "`";
    std::shared_ptr<const Attestor> check;
    if (d.check.kind == ck::AttestorKind::command) {
      check = std::make_shared<SubprocessAttestor>(
          d.check.name, d.check.argv, runner_for(d.check, options_, what));
    } else {
      check = std::make_shared<HttpAttestor>(d.check.name, http_check_for(d.check));
    }
    ReadinessProbe r;
    r.dependency = d.dependency;
    r.ready = [check, model = model_](std::string& detail) {
      const ck::State state =
          t_readiness_state != nullptr ? *t_readiness_state : model->initial_state();
      const Attestation a = run_attestor(*check, AttestationContext{model.get(), &state, ""});
      detail = a.error.empty() ? a.evidence : a.error;
      if (detail.size() > 200) detail = detail.substr(0, 200) + "...";
      return a.passed;
    };
    r.initial_delay = milliseconds(d.initial_delay_ms);
    r.multiplier = static_cast<double>(d.multiplier.units);
    for (int i = 0; i < d.multiplier.scale; ++i) r.multiplier /= 10.0;
    r.max_delay = milliseconds(d.max_delay_ms);
    r.deadline = milliseconds(d.deadline_ms);
    options_.readiness.push_back(std::move(r));
  }

  flows_ = ck::information_flows(m, /*downward_only=*/true);
  first_flow_.resize(m.actions.size());
  for (std::size_t i = 0; i < flows_.size(); ++i)
    if (!first_flow_[flows_[i].action]) first_flow_[flows_[i].action] = i;

  for (const Probe& p : options_.probes) {
    const auto id = m.schema->find(p.variable);
    if (!id) throw InvalidArgument("probe: unknown variable `" + p.variable + "`");
    if (!p.read) throw InvalidArgument("probe of `" + p.variable + "`: no reader");
    if (p.tolerance.units < 0)
      throw InvalidArgument("probe of `" + p.variable + "`: negative tolerance");
    probe_vars_.push_back(*id);
  }
  for (const ReadinessProbe& r : options_.readiness) {
    if (!m.find_action(r.dependency))
      throw InvalidArgument("readiness probe: unknown action `" + r.dependency + "`");
    if (!r.ready) throw InvalidArgument("readiness probe of `" + r.dependency + "`: no check");
    if (!(r.multiplier >= 1.0) || r.initial_delay.count() <= 0 || r.max_delay < r.initial_delay ||
        r.deadline.count() < 0)
      throw InvalidArgument("readiness probe of `" + r.dependency +
                            "`: needs initial_delay > 0, max_delay >= initial_delay, "
                            "multiplier >= 1 and deadline >= 0");
  }
  ready_.assign(options_.readiness.size(), false);
  if (!options_.clock.now)
    options_.clock.now = [] {
      return std::chrono::duration_cast<milliseconds>(
          std::chrono::steady_clock::now().time_since_epoch());
    };
  if (!options_.clock.sleep)
    options_.clock.sleep = [](milliseconds d) { std::this_thread::sleep_for(d); };

  ck::KernelOptions kopts = options_.kernel;
  kopts.guard = [this](const ck::Situation& s, const ck::Proposal& p, const ck::Decision& d) {
    return gate(s, p, d);
  };
  kopts.commit_gate = [this](const ck::Situation& s,
                             const ck::Proposal& p,
                             const ck::Decision& d,
                             std::vector<ck::AttestationRecord>& records) {
    return commit_gate(s, p, d, records);
  };
  kernel_ = std::make_unique<ck::SafetyKernel>(model_, std::move(kopts));
}

ReferenceMonitor::~ReferenceMonitor() = default;

std::optional<ck::Reason> ReferenceMonitor::gate(const ck::Situation& s,
                                                 const ck::Proposal& p,
                                                 const ck::Decision& d) {
  const ck::TaskModel& m = *model_;
  if (options_.kernel.guard) {
    if (auto r = options_.kernel.guard(s, p, d)) return r;
  }
  Armed* armed = t_armed != nullptr && t_armed->monitor == this ? t_armed : nullptr;
  if (armed && armed->veto) return armed->veto;
  if (halted_.load()) return drift_reason();
  if (options_.enforce_information_flow && first_flow_[p.action]) {
    const ck::InformationFlow& f = flows_[*first_flow_[p.action]];
    return ck::Reason{ck::ReasonCode::information_flow,
                      f.source + " -> " + f.target,
                      "`" + m.actions[p.action].id + "` moves `" + f.source + "` (" +
                          std::string(to_string(f.source_label)) + ") to `" + f.target + "` (" +
                          std::string(to_string(f.target_label)) + ") at " + f.path +
                          (f.expression.empty() ? "" : ": " + f.expression)};
  }
  return std::nullopt;
}

ck::Reason ReferenceMonitor::drift_reason() const {
  std::string vars;
  for (const Drift& dr : drift()) vars += (vars.empty() ? "" : ", ") + dr.variable;
  std::string details;
  for (const Drift& dr : drift())
    details += (details.empty() ? "" : "; ") + dr.variable + ": model " + dr.model.to_string() +
               ", world " + (dr.world ? dr.world->to_string() : std::string("unread")) +
               (dr.detail.empty() ? "" : " (" + dr.detail.substr(0, 200) + ")");
  return ck::Reason{ck::ReasonCode::environment_drift,
                    vars,
                    "halted: the environment drifted from the model (" + vars + "): " + details};
}

std::optional<ck::Reason> ReferenceMonitor::commit_gate(
    const ck::Situation& s,
    const ck::Proposal& p,
    const ck::Decision& /*d*/,
    std::vector<ck::AttestationRecord>& records) {
  const ck::TaskModel& m = *model_;
  Armed* armed = t_armed != nullptr && t_armed->monitor == this ? t_armed : nullptr;
  if (armed == nullptr) {
    // A driver committing through kernel() directly: the readiness wait and the
    // reconciliation that `execute` does around the kernel happen here, before the commit.
    if (auto r = await_readiness(p.action, s.completions, s.state)) return r;
    if (!options_.probes.empty() && !reconcile_on(s.state).empty()) return drift_reason();
  }
  const AttestationContext ctx{&m, &s.state, m.actions[p.action].id};
  for (std::size_t i : m.actions[p.action].attestations) {
    Attestation a = run_attestor(*attestors_[i], ctx);
    const bool passed = a.passed;
    std::string why = a.error.empty() ? a.evidence : a.error;
    records.push_back(ck::AttestationRecord{
        m.attestors[i].name, m.actions[p.action].id, a.passed, a.evidence, a.error});
    if (armed != nullptr) armed->attestations->push_back(std::move(a));
    if (!passed)
      return ck::Reason{ck::ReasonCode::attestation_failed,
                        m.attestors[i].name,
                        "attestation `" + m.attestors[i].name + "` of `" + m.actions[p.action].id +
                            "` failed" + (why.empty() ? "" : ": " + why.substr(0, 500))};
  }
  return std::nullopt;
}

std::optional<ck::Reason> ReferenceMonitor::await_readiness(
    std::size_t action, const std::vector<std::uint64_t>& completions, const ck::State& state) {
  struct Scope {
    explicit Scope(const ck::State* s) { t_readiness_state = s; }
    ~Scope() { t_readiness_state = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  } scope(&state);
  const ck::TaskModel& m = *model_;
  for (std::size_t j = 0; j < options_.readiness.size(); ++j) {
    const ReadinessProbe& r = options_.readiness[j];
    if (ready_[j]) continue;
    const std::size_t dep = *m.find_action(r.dependency);
    const auto& deps = m.actions[action].dependencies;
    if (std::find(deps.begin(), deps.end(), dep) == deps.end()) continue;
    if (completions[dep] == 0) continue;  // the kernel rejects it: dependency_unmet
    const milliseconds start = options_.clock.now();
    milliseconds delay = r.initial_delay;
    std::size_t checks = 0;
    std::string detail;
    for (;;) {
      bool ok = false;
      ++checks;
      detail.clear();
      try {
        ok = r.ready(detail);
      } catch (const std::exception& e) {
        detail = std::string("threw: ") + e.what();
      }
      if (ok) {
        ready_[j] = true;
        break;
      }
      const milliseconds elapsed = options_.clock.now() - start;
      if (elapsed >= r.deadline)
        return ck::Reason{ck::ReasonCode::dependency_not_ready,
                          r.dependency,
                          "`" + r.dependency + "` is not ready after " +
                              std::to_string(elapsed.count()) + " ms (" + std::to_string(checks) +
                              " checks)" + (detail.empty() ? "" : ": " + detail)};
      options_.clock.sleep(std::min({delay, r.deadline - elapsed, r.max_delay}));
      const double next = static_cast<double>(delay.count()) * r.multiplier;
      delay = next >= static_cast<double>(r.max_delay.count())
                  ? r.max_delay
                  : milliseconds(static_cast<long long>(next));
    }
  }
  return std::nullopt;
}

ck::Decision ReferenceMonitor::evaluate(std::string_view action_id,
                                        const ck::ParamMap& params) const {
  return kernel_->evaluate(action_id, params);
}

MonitorOutcome ReferenceMonitor::execute(std::string_view action_id, const ck::ParamMap& params) {
  std::lock_guard lock(execute_mutex_);
  std::vector<Attestation> attestations;
  Armed armed{this, &attestations, std::nullopt};
  const auto resolved = kernel_->resolve(action_id, params);
  if (const auto* p = std::get_if<ck::Proposal>(&resolved)) {
    const ck::Situation now = kernel_->situation();
    armed.veto = await_readiness(p->action, now.completions, now.state);
  }
  struct Arm {
    explicit Arm(Armed* a) { t_armed = a; }
    ~Arm() { t_armed = nullptr; }
    Arm(const Arm&) = delete;
    Arm& operator=(const Arm&) = delete;
  };
  ck::Outcome outcome = [&] {
    const Arm arm(&armed);
    return kernel_->execute(action_id, params);
  }();
  MonitorOutcome out{std::move(outcome), std::move(attestations), {}};
  if (out.outcome.receipt && !options_.probes.empty()) out.drift = reconcile();
  return out;
}

std::vector<Drift> ReferenceMonitor::reconcile() { return reconcile_on(kernel_->state()); }

std::vector<Drift> ReferenceMonitor::reconcile_on(const ck::State& state) {
  const AttestationContext ctx{model_.get(), &state, ""};
  std::vector<Drift> found;
  for (std::size_t i = 0; i < options_.probes.size(); ++i) {
    const Probe& p = options_.probes[i];
    const ck::Value& model_value = state.get(static_cast<ck::VarId>(*probe_vars_[i]));
    ProbeReading r;
    try {
      r = p.read(ctx);
    } catch (const std::exception& e) {
      r.error = std::string("threw: ") + e.what();
    }
    std::string detail = r.error;
    if (r.value && within(model_value, *r.value, p.tolerance, detail)) continue;
    if (!r.value && detail.empty()) detail = "the probe read nothing";
    found.push_back(Drift{p.variable, model_value, r.value, detail});
  }
  if (!found.empty()) {
    std::lock_guard lock(drift_mutex_);
    drift_.insert(drift_.end(), found.begin(), found.end());
    halted_ = true;
  }
  return found;
}

std::vector<Drift> ReferenceMonitor::drift() const {
  std::lock_guard lock(drift_mutex_);
  return drift_;
}

GoalCheck ReferenceMonitor::check_goal() {
  GoalCheck g;
  const ck::State state = kernel_->state();
  g.reached = model_->goal_holds(state);
  g.attested = true;
  if (!g.reached) return g;
  const AttestationContext ctx{model_.get(), &state, ""};
  for (std::size_t i : model_->goal_attestations) {
    const Attestation& a = g.attestations.emplace_back(run_attestor(*attestors_[i], ctx));
    if (!kernel_->is_sealed())
      (void)kernel_->record_attested(ck::attestation_entry(
          ck::AttestationRecord{model_->attestors[i].name, "", a.passed, a.evidence, a.error}));
    if (!a.passed && g.attested) {
      g.attested = false;
      const std::string why = a.error.empty() ? a.evidence : a.error;
      g.reason = ck::Reason{ck::ReasonCode::attestation_failed,
                            model_->attestors[i].name,
                            "the goal holds but its attestation `" + model_->attestors[i].name +
                                "` failed" + (why.empty() ? "" : ": " + why.substr(0, 500))};
    }
  }
  return g;
}

}  // namespace clampai::hardening
