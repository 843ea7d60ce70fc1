// The deterministic driver and the run loop.
#include "clampai/driver/driver.hpp"

#include "stop.hpp"

#include <algorithm>
#include <exception>
#include <variant>

#include "clampai/kernel/error.hpp"

namespace clampai::driver {

using kernel::Action;
using kernel::Decimal;
using kernel::Outcome;
using kernel::Parameter;
using kernel::ReasonCode;
using kernel::Receipt;
using kernel::Value;

std::string_view to_string(Termination t) noexcept {
  static constexpr std::string_view kNames[] = {"goal_reached",
                                                "no_approvable_action",
                                                "budget_exhausted",
                                                "step_limit",
                                                "max_steps",
                                                "emergency_stop",
                                                "goal_not_attested",
                                                "environment_drift",
                                                "llm_stop",
                                                "stuck",
                                                "max_failures",
                                                "error"};
  return kNames[static_cast<int>(t)];
}

Proposal default_proposal(const TaskModel& model, std::size_t index) {
  Proposal p{index, {}};
  for (const Parameter& param : model.actions.at(index).parameters) {
    p.params.push_back(Value::number(param.default_value ? *param.default_value
                                     : param.min         ? *param.min
                                                         : Decimal{}));
  }
  return p;
}

void Driver::rolled_back(const State& /*state*/, const Proposal& /*undone*/) {}
void Driver::committed(const Proposal& /*proposal*/, const Outcome& /*outcome*/) {}
void Driver::waiting(const Proposal& /*proposal*/, const Ticket& /*ticket*/) {}
void Driver::shadowed(const Proposal& /*proposal*/, const Decision& /*would_be*/) {}

void FirstApprovableDriver::rolled_back(const State& state, const Proposal& undone) {
  avoid_.emplace_back(state, undone.action);
}

void FirstApprovableDriver::committed(const Proposal& proposal, const Outcome& outcome) {
  if (outcome.decision.has(ReasonCode::approval_denied) ||
      outcome.decision.has(ReasonCode::approval_expired))
    avoid_.emplace_back(outcome.state, proposal.action);
}

void FirstApprovableDriver::waiting(const Proposal& proposal, const Ticket& /*ticket*/) {
  waiting_.push_back(proposal.action);
}

Choice FirstApprovableDriver::next(const SafetyKernel& kernel) {
  Choice choice;
  const TaskModel& m = kernel.model();
  const std::optional<State> now =
      avoid_.empty() ? std::nullopt : std::optional<State>(kernel.state());
  for (std::size_t i = 0; i < m.actions.size(); ++i) {
    const Action& a = m.actions[i];
    if (a.emergency) continue;
    if (std::find(waiting_.begin(), waiting_.end(), i) != waiting_.end()) continue;
    if (std::any_of(avoid_.begin(), avoid_.end(), [&](const auto& entry) {
          return entry.second == i && entry.first == *now;
        }))
      continue;
    bool ready = true;
    for (auto dep : a.dependencies) ready = ready && kernel.completions(dep) > 0;
    if (!ready) continue;
    Proposal p = default_proposal(m, i);
    kernel::Decided d = kernel.decide(p);  // committed as decided if the head does not move
    if (d.decision().approved) {
      choice.proposal = std::move(p);
      choice.decided = std::move(d);
      return choice;
    }
    choice.rejected.push_back(d.decision());
    choice.rejected_proposals.push_back(std::move(p));
  }
  return choice;
}

namespace {

// The loop's own bookkeeping over one run.
class Loop {
 public:
  Loop(Committer& committer, Driver& driver, const RunOptions& options)
      : c_(committer), driver_(driver), options_(options) {}
  RunResult run();

 private:
  RunResult steps();
  void tally(const Decision& d) {
    ++result_.rejected;
    for (const auto& r : d.reasons) ++result_.rejections_by_reason[std::string(to_string(r.code))];
  }
  // Nothing approvable on the latest head: roll back this run's last commit if it is still the
  // most recent action in effect (and reversible), else take the first approvable emergency
  // action. True iff the run goes on (a rollback); sets the termination when it stops.
  bool recover();
  // One step of the chooser's `proposal` (`decided`: its decision on the view, if the chooser
  // made one). False iff the run stops.
  bool commit(Proposal proposal, std::optional<kernel::Decided> decided = std::nullopt);
  // Shadow mode: tells the chooser the step's would-be decision, and lists the step if the
  // enforcing kernel would have rejected it.
  void note(const Proposal& proposal, const StepResult& s);
  // What follows a step of `proposal` whose outcome is `o` (committed or refused). False iff
  // the run stops.
  bool settle(Proposal proposal, const Outcome& o);
  // A refusal of the step (or of an approval): counted; false iff the run stops.
  bool refused(const Decision& d);
  // `proposal` needs a person's approval: asked (a ticket), answered by RunOptions::approve,
  // then committed (decided afresh) or not. False iff the run stops.
  bool ask(Proposal proposal);

  Committer& c_;
  Driver& driver_;
  const RunOptions& options_;
  RunResult result_;
  // This run's commits still in effect, newest last: what recovery may undo (an emergency
  // commit on top stops it: recovery rolls back only reversible non-emergency actions).
  std::vector<std::pair<Receipt, Proposal>> undoable_;
  // Proposals refused at commit in a row on one head: a chooser whose choice the kernel keeps
  // refusing (another thread or process, or a guard the chooser does not consult) must not
  // make the run spin. A refusal on a newer head starts the count again.
  unsigned refused_in_a_row_ = 0;
  std::uint64_t refused_at_ = 0;
  // The approvals' ticket book on the committer's trace, made at the first approval.
  std::optional<Approvals> approvals_;
};

bool Loop::recover() {
  const TaskModel& m = c_.model();
  if (steps_left(c_.view()) && !undoable_.empty() &&
      !m.actions[undoable_.back().first.action].emergency &&
      m.actions[undoable_.back().first.action].reversible) {
    auto [receipt, proposal] = std::move(undoable_.back());
    undoable_.pop_back();
    if (std::optional<Outcome> o = c_.rollback(receipt)) {
      ++result_.rollbacks;
      result_.recovery.push_back("rolled back `" + m.actions[receipt.action].id + "`");
      driver_.rolled_back(o->state, proposal);
      return true;
    }
    undoable_.clear();  // another process committed on top: none of this run's is undoable
  }
  for (std::size_t i = 0; i < m.actions.size(); ++i) {
    if (!m.actions[i].emergency) continue;
    ++result_.attempted;
    // Decided once: the step commits the decision as made unless the head moved since (and
    // records a rejection, when the committer records them); a rejection that would not be
    // recorded goes no further.
    kernel::Decided d = c_.view().decide(default_proposal(m, i));
    if (!d.decision().approved && !c_.records_rejections()) {
      tally(d.decision());
      continue;
    }
    const Proposal emergency = d.proposal();
    const StepResult s = step(c_, std::move(d));
    note(emergency, s);
    const Outcome& o = s.outcome;
    if (!o.decision.approved) {
      tally(o.decision);
      continue;
    }
    ++result_.executed;
    ++result_.emergencies;
    result_.actions.push_back(m.actions[i].id);
    result_.recovery.push_back("emergency action `" + m.actions[i].id + "`");
    result_.termination = Termination::emergency_stop;
    return false;
  }
  return false;
}

bool Loop::commit(Proposal proposal, std::optional<kernel::Decided> decided) {
  // In shadow mode an action that asks for an approval is followed without one, as any other.
  if (c_.model().actions[proposal.action].approval && c_.enforces())
    return ask(std::move(proposal));
  const bool mine = decided && decided->proposal().action == proposal.action &&
                    decided->proposal().params == proposal.params;
  const StepResult s = mine ? step(c_, std::move(*decided)) : step(c_, proposal);
  note(proposal, s);
  return settle(std::move(proposal), s.outcome);
}

void Loop::note(const Proposal& proposal, const StepResult& s) {
  if (!s.would_be) return;
  driver_.shadowed(proposal, *s.would_be);
  if (s.would_be->approved) return;
  result_.shadow_rejections.push_back(
      ShadowRejection{c_.model().actions[proposal.action].id,
                      s.outcome.receipt ? std::optional(s.outcome.receipt->sequence) : std::nullopt,
                      s.would_be->reasons});
}

bool Loop::settle(Proposal proposal, const Outcome& o) {
  driver_.committed(proposal, o);
  if (!o.decision.approved) {  // refused on the latest head: another thread or process, a guard
    ++result_.attempted;
    tally(o.decision);
    return refused(o.decision);
  }
  refused_in_a_row_ = 0;
  ++result_.executed;
  result_.actions.push_back(c_.model().actions[proposal.action].id);
  if (o.receipt) undoable_.emplace_back(*o.receipt, std::move(proposal));
  return true;
}

bool Loop::refused(const Decision& d) {
  if (const std::optional<Termination> stop = c_.on_refusal(d)) {
    result_.termination = *stop;
    result_.last_reasons = d.reasons;
    return false;
  }
  if (c_.head() != refused_at_) {
    refused_at_ = c_.head();
    refused_in_a_row_ = 0;
  }
  if (options_.refusals_before_stop == 0 || ++refused_in_a_row_ < options_.refusals_before_stop)
    return true;
  result_.termination = Termination::no_approvable_action;
  result_.last_reasons = d.reasons;
  return false;
}

bool Loop::ask(Proposal proposal) {
  const TaskModel& m = c_.model();
  const std::string& id = m.actions[proposal.action].id;
  if (!approvals_) approvals_.emplace(c_, options_.clock);
  // Asked already and still waiting (the run moved on): nothing is asked anew.
  for (const Ticket& t : result_.waiting) {
    std::variant<Proposal, Reason> same = c_.view().resolve(t.action, t.params);
    const auto* p = std::get_if<Proposal>(&same);
    if (p != nullptr && p->action == proposal.action && p->params == proposal.params) {
      driver_.waiting(proposal, t);
      ++result_.attempted;
      return refused(Decision{});
    }
  }
  proposal.principal = options_.principal;
  Approvals::Asked asked = approvals_->ask(proposal);
  if (!asked.ticket)  // rejected now: nothing a person could approve
    return settle(std::move(proposal),
                  Outcome{std::move(asked.decision), std::nullopt, c_.view().state()});
  const Ticket ticket = *asked.ticket;
  const ApprovalAnswer answer =
      options_.approve ? options_.approve(ticket, asked.decision) : ApprovalAnswer{};
  if (answer.kind == ApprovalAnswer::Kind::wait) {
    result_.waiting.push_back(ticket);
    driver_.waiting(proposal, ticket);
    ++result_.attempted;
    return refused(Decision{});
  }
  const bool grant = answer.kind == ApprovalAnswer::Kind::grant;
  std::optional<Outcome> o;
  try {
    Approvals::Answered a = approvals_->answer(
        ticket.id, grant, answer.principal, {}, [this](const Proposal& p) { return step(c_, p); });
    o.emplace(std::move(a.step.outcome));
    ++(grant ? result_.approvals_granted : result_.approvals_denied);
  } catch (const TicketRefused& e) {
    if (e.why != TicketRefused::Why::expired) throw;
    ++result_.approvals_expired;  // answered too late: its `approval_expired` entry is recorded
    o.emplace(Outcome{approval_refusal(proposal.action,
                                       ReasonCode::approval_expired,
                                       id,
                                       "ticket " + ticket.id + " of `" + id +
                                           "` expired: nobody approved it within its ttl_s"),
                      std::nullopt,
                      c_.view().state()});
  }
  return settle(std::move(proposal), *o);
}

RunResult Loop::run() {
  if (!options_.errors_end_run) return steps();
  try {
    return steps();
  } catch (const std::exception& e) {
    result_.termination = Termination::error;
    result_.message = e.what();
    result_.goal_reached = false;
    return result_;
  }
}

RunResult Loop::steps() {
  refused_at_ = c_.head();
  result_.shadow = !c_.enforces();
  while (true) {
    if (options_.between_steps) options_.between_steps();
    if (options_.refresh_each_step) (void)c_.refresh();
    const SafetyKernel& view = c_.view();
    if (view.goal_reached()) {
      result_.termination = Termination::goal_reached;
      break;
    }
    if (options_.max_steps && result_.executed >= *options_.max_steps) {
      result_.termination = Termination::max_steps;
      break;
    }
    // Shadow mode: the kernel does not stop a step past its bound (T2), so the run does.
    if (!c_.enforces() && !steps_left(view)) {
      result_.termination = Termination::step_limit;
      result_.message = "the kernel's step bound (T2) of " + std::to_string(view.step_limit());
      break;
    }
    Choice choice = driver_.next(view);
    if (choice.stop) {
      result_.termination = *choice.stop;
      result_.message = std::move(choice.stop_message);
      break;
    }
    // The chooser screened these with evaluate; a committer that records rejections traces them.
    if (c_.records_rejections()) {
      for (const Proposal& p : choice.rejected_proposals) (void)c_.record_rejection(p);
    }
    result_.attempted += choice.rejected.size() + (choice.proposal ? 1 : 0);
    for (const auto& d : choice.rejected) tally(d);
    if (!choice.proposal) {
      // Nothing approvable on the head this process knows: on a newer one there may be.
      if (c_.refresh() > 0) continue;
      if (std::optional<Proposal> p = c_.when_stuck(choice)) {
        ++result_.attempted;
        if (commit(std::move(*p))) continue;
        break;
      }
      if (options_.recover) {
        if (recover()) continue;
        if (result_.termination == Termination::emergency_stop) break;
      }
      detail::record_stop(c_.view(), choice, result_);
      break;
    }
    if (!commit(std::move(*choice.proposal), std::move(choice.decided))) break;
  }
  result_.goal_reached = c_.view().goal_reached();
  return result_;
}

}  // namespace

std::string_view to_string(StepOutcome o) noexcept {
  switch (o) {
    case StepOutcome::committed:
      return "committed";
    case StepOutcome::shadowed:
      return "shadowed";
    case StepOutcome::rejected:
      break;
  }
  return "rejected";
}

namespace {
StepResult result_of(Outcome&& o) {
  const StepOutcome kind = o.receipt ? StepOutcome::committed : StepOutcome::rejected;
  return StepResult{kind, std::move(o)};
}
StepResult result_of(kernel::ShadowStep&& s) {
  return StepResult{StepOutcome::shadowed, std::move(s.outcome), std::move(s.would_be)};
}
}  // namespace

StepResult step(Committer& committer, const Proposal& proposal) {
  if (!committer.enforces()) return result_of(committer.follow(proposal));
  return result_of(committer.commit(proposal));
}
StepResult step(Committer& committer, kernel::Decided&& decided) {
  if (!committer.enforces()) return result_of(committer.follow(decided.proposal()));
  return result_of(committer.commit_decided(std::move(decided)));
}
StepResult step(Committer& committer, std::string_view action_id, const kernel::ParamMap& params) {
  if (!committer.enforces()) return result_of(committer.follow(action_id, params));
  return result_of(committer.commit_named(action_id, params));
}

Outcome Committer::commit_decided(kernel::Decided&& decided) { return commit(decided.proposal()); }
Outcome Committer::commit_named(std::string_view action_id, const kernel::ParamMap& params) {
  std::variant<Proposal, Reason> resolved = view().resolve(action_id, params);
  if (auto* p = std::get_if<Proposal>(&resolved)) return commit(*p);
  Decision d;
  d.reasons.push_back(std::move(std::get<Reason>(resolved)));
  return Outcome{std::move(d), std::nullopt, view().state()};
}

std::optional<Proposal> Committer::when_stuck(const Choice& /*choice*/) { return std::nullopt; }
std::optional<Termination> Committer::on_refusal(const Decision& /*decision*/) {
  return std::nullopt;
}

Outcome LocalCommitter::commit(const Proposal& proposal) { return kernel_.execute(proposal); }
Outcome LocalCommitter::commit_decided(kernel::Decided&& decided) {
  return kernel_.execute(std::move(decided));
}
Outcome LocalCommitter::commit_named(std::string_view action_id, const kernel::ParamMap& params) {
  return kernel_.execute(action_id, params);
}
Decision LocalCommitter::record_rejection(const Proposal& proposal) {
  return kernel_.record_rejection(proposal);
}
bool LocalCommitter::records_rejections() const { return kernel_.records_rejections(); }
std::optional<Outcome> LocalCommitter::rollback(const Receipt& receipt) {
  return kernel_.rollback(receipt);  // throws if another thread committed since: not ours to undo
}

Outcome SharedCommitter::commit(const Proposal& proposal) { return kernel_.execute(proposal); }
Outcome SharedCommitter::commit_decided(kernel::Decided&& decided) {
  return kernel_.execute(std::move(decided));
}
Outcome SharedCommitter::commit_named(std::string_view action_id, const kernel::ParamMap& params) {
  return kernel_.execute(action_id, params);
}
Decision SharedCommitter::record_rejection(const Proposal& proposal) {
  return kernel_.record_rejection(proposal);
}
bool SharedCommitter::records_rejections() const { return kernel_.records_rejections(); }
std::optional<Outcome> SharedCommitter::rollback(const Receipt& receipt) {
  try {
    return kernel_.rollback(receipt);
  } catch (const InvalidArgument&) {
    return std::nullopt;  // another process committed on top of it
  }
}
Outcome LocalCommitter::compensate(const Receipt& receipt) { return kernel_.compensate(receipt); }
Outcome SharedCommitter::compensate(const Receipt& receipt) {
  return kernel_.compensate(receipt.sequence);
}
Outcome Committer::compensate(const Receipt& receipt) {
  throw InvalidArgument("cannot compensate trace entry " + std::to_string(receipt.sequence) +
                        ": this committer does not compensate");
}
std::uint64_t SharedCommitter::refresh() { return kernel_.refresh(); }
std::uint64_t SharedCommitter::head() const { return kernel_.length(); }
std::uint64_t Committer::head() const { return 0; }
kernel::TraceEntry Committer::record_note(kernel::TraceEntry entry) {
  throw InvalidArgument("action `" + entry.action + "` of task `" + model().name +
                        "` asks for an approval, and this committer keeps no approval tickets");
}
std::vector<kernel::TraceEntry> Committer::trace_since(std::uint64_t /*from*/) { return {}; }
kernel::TraceEntry LocalCommitter::record_note(kernel::TraceEntry entry) {
  return kernel_.record_note(std::move(entry));
}
kernel::TraceEntry SharedCommitter::record_note(kernel::TraceEntry entry) {
  return kernel_.record_note(std::move(entry));
}
std::vector<kernel::TraceEntry> SharedCommitter::trace_since(std::uint64_t from) {
  return kernel::parse_trace_lines(kernel_.read(from), "the ledger " + kernel_.ledger().describe());
}

bool steps_left(const SafetyKernel& view) {
  return view.steps() < static_cast<std::uint64_t>(view.step_limit());
}

RunResult run(Committer& committer, Driver& driver, const RunOptions& options) {
  return Loop(committer, driver, options).run();
}

RunResult run(SafetyKernel& kernel, Driver& driver, const RunOptions& options) {
  LocalCommitter committer(kernel);
  return run(committer, driver, options);
}

}  // namespace clampai::driver
