// The ticket book (approvals.hpp): every step of a ticket's life is a note of the kernel's
// trace, so a trace read again (TicketLog::note) rebuilds the pending tickets.
#include "clampai/driver/approvals.hpp"

#include <algorithm>
#include <chrono>
#include <variant>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"

namespace clampai::driver {

namespace ck = clampai::kernel;

namespace {

std::int64_t deadline(const ck::TaskModel& model, std::string_view action, std::int64_t from_us) {
  const auto index = model.find_action(action);
  if (!index || !model.actions[*index].approval) return from_us;  // due at once
  return from_us + model.actions[*index].approval->ttl_s * 1'000'000;
}

}  // namespace

ck::Decision approval_refusal(std::size_t action,
                              ck::ReasonCode code,
                              std::string subject,
                              std::string message) {
  ck::Decision d;
  d.action = action;
  d.reasons.push_back({code, std::move(subject), std::move(message)});
  return d;
}

void TicketLog::answer(const std::string& ticket, std::string what) {
  answered.emplace_back(ticket, std::move(what));
  if (answered.size() > kMaxPendingTickets) answered.pop_front();
}

void TicketLog::note(const ck::TaskModel& model, const ck::TraceEntry& e) {
  switch (e.kind) {
    case ck::EntryKind::approval_requested: {
      Ticket t;
      t.id = e.ticket;
      t.action = e.action;
      t.params = e.params;
      t.principal = e.principal;
      t.sequence = e.sequence;
      t.requested_us = e.time_us;
      t.expires_us = deadline(model, e.action, e.time_us);
      pending[e.ticket] = std::move(t);
      return;
    }
    case ck::EntryKind::approval_granted:
      pending.erase(e.ticket);
      answer(e.ticket,
             "approved by `" + e.principal + "` (trace entry " + std::to_string(e.sequence) + ")");
      return;
    case ck::EntryKind::approval_denied:
      pending.erase(e.ticket);
      answer(e.ticket,
             "denied by `" + e.principal + "` (trace entry " + std::to_string(e.sequence) + ")");
      return;
    case ck::EntryKind::approval_expired:
      pending.erase(e.ticket);
      answer(e.ticket, "expired");
      return;
    default:
      return;
  }
}

Approvals::Approvals(Committer& committer, Clock clock, TicketLog tickets)
    : committer_(committer), clock_(std::move(clock)), tickets_(std::move(tickets)) {}

Approvals::Approvals(ck::SafetyKernel& kernel, Clock clock, TicketLog tickets)
    : own_(std::make_unique<LocalCommitter>(kernel)),
      committer_(*own_),
      clock_(std::move(clock)),
      tickets_(std::move(tickets)) {}

std::int64_t Approvals::now() const {
  if (clock_) return clock_();
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Approvals::catch_up_locked() {
  (void)committer_.refresh();  // decisions on the latest head
  // Entries this book recorded itself may come again: noted in order, they leave the same book.
  for (const ck::TraceEntry& e : committer_.trace_since(seen_)) {
    tickets_.note(committer_.model(), e);
    seen_ = e.sequence + 1;
  }
}

ck::TraceEntry Approvals::record_locked(ck::TraceEntry e) {
  const ck::TraceEntry kept = committer_.record_note(std::move(e));
  tickets_.note(committer_.model(), kept);
  return kept;
}

void Approvals::expire_due_locked(std::int64_t now) {
  if (committer_.view().is_sealed()) return;  // nothing can be recorded, nor approved, any more
  std::vector<std::string> due;
  for (const auto& [id, t] : tickets_.pending)
    if (t.expires_us <= now) due.push_back(id);
  for (const std::string& id : due) {
    const Ticket t = tickets_.pending.at(id);
    ck::TraceEntry e;
    e.kind = ck::EntryKind::approval_expired;
    e.action = t.action;
    e.params = t.params;
    e.ticket = t.id;
    e.reasons.push_back(
        {ck::ReasonCode::approval_expired,
         t.action,
         "ticket " + t.id + " of `" + t.action + "` expired: nobody approved it within its ttl_s"});
    try {
      (void)record_locked(std::move(e));  // throws: stays pending
    } catch (const InvalidArgument&) {
      // On a shared ledger, another process answered it or recorded its expiry first: once.
      catch_up_locked();
      if (tickets_.pending.count(id) == 0) continue;
      throw;
    }
    if (on_expiry) on_expiry(t);
  }
}

Approvals::Asked Approvals::ask(const ck::Proposal& proposal) {
  const ck::TaskModel& model = committer_.model();
  const ck::Action& a = model.actions.at(proposal.action);
  if (!a.approval)
    throw InvalidArgument("action `" + a.id + "` of task `" + model.name +
                          "` asks for no approval (its spec has no `approval`): execute it");
  std::lock_guard lock(mutex_);
  catch_up_locked();
  expire_due_locked(now());
  ck::Decision d = committer_.view().evaluate(proposal);
  if (!d.approved) return {std::move(d), std::nullopt};
  if (tickets_.pending.size() >= kMaxPendingTickets)
    throw TicketRefused(TicketRefused::Why::too_many,
                        "task `" + model.name + "` has " + std::to_string(kMaxPendingTickets) +
                            " tickets waiting for approval already: answer some first");
  ck::TraceEntry e;
  e.kind = ck::EntryKind::approval_requested;
  e.action = a.id;
  for (std::size_t i = 0; i < a.parameters.size() && i < proposal.params.size(); ++i)
    e.params.emplace_back(a.parameters[i].name, proposal.params[i]);
  e.principal = proposal.principal;
  e.ticket = ck::random_hex(16, "a ticket id");
  const ck::TraceEntry kept = record_locked(std::move(e));
  return {std::move(d), tickets_.pending.at(kept.ticket)};
}

std::vector<Ticket> Approvals::pending() {
  std::lock_guard lock(mutex_);
  catch_up_locked();
  expire_due_locked(now());
  std::vector<Ticket> out;
  for (const auto& [id, t] : tickets_.pending) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const Ticket& x, const Ticket& y) {
    return x.sequence < y.sequence;
  });
  return out;
}

Approvals::Answered Approvals::answer(std::string_view id,
                                      bool approve,
                                      const std::string& principal,
                                      const std::function<void(const Ticket&)>& check,
                                      const Commit& commit) {
  const ck::TaskModel& model = committer_.model();
  const auto refused = [&]() {
    const auto was = std::find_if(tickets_.answered.rbegin(),
                                  tickets_.answered.rend(),
                                  [&](const auto& a) { return a.first == id; });
    const std::string none =
        "task `" + model.name + "` has no pending ticket `" + std::string(id) + "`";
    if (was == tickets_.answered.rend()) return TicketRefused(TicketRefused::Why::unknown, none);
    if (was->second == "expired")
      return TicketRefused(TicketRefused::Why::expired,
                           "ticket `" + std::string(id) + "` of task `" + model.name +
                               "` expired: nobody approved it within its ttl_s; ask again");
    return TicketRefused(TicketRefused::Why::unknown, none + ": it was " + was->second);
  };
  Ticket ticket;
  std::uint64_t sequence = 0;
  {
    // The ticket is taken and its answer recorded under the lock: of two answers, the second
    // finds it answered. On a shared ledger, the answer is committed only while the ticket is
    // open at the ledger's head: of two processes' answers, the second catches up and finds it
    // answered.
    std::lock_guard lock(mutex_);
    catch_up_locked();
    expire_due_locked(now());
    const auto it = tickets_.pending.find(id);
    if (it == tickets_.pending.end()) throw refused();
    if (check) check(it->second);
    ticket = it->second;
    ck::TraceEntry e;
    e.kind = approve ? ck::EntryKind::approval_granted : ck::EntryKind::approval_denied;
    e.action = ticket.action;
    e.params = ticket.params;
    e.principal = principal;
    e.ticket = ticket.id;
    if (!approve)
      e.reasons.push_back({ck::ReasonCode::approval_denied,
                           ticket.action,
                           "ticket " + ticket.id + " of `" + ticket.action + "` was denied by `" +
                               principal + "`"});
    ck::TraceEntry kept;
    try {
      kept = record_locked(std::move(e));
    } catch (const InvalidArgument&) {
      catch_up_locked();
      if (tickets_.pending.count(ticket.id) == 0) throw refused();  // another process won
      throw;
    }
    sequence = kept.sequence;
    if (!approve) {
      const std::size_t action = model.find_action(ticket.action).value_or(0);
      ck::Outcome out{
          approval_refusal(
              action, ck::ReasonCode::approval_denied, ticket.action, kept.reasons.at(0).message),
          std::nullopt,
          committer_.view().state()};
      return {
          std::move(ticket), false, sequence, StepResult{StepOutcome::rejected, std::move(out)}};
    }
  }
  // Decided afresh on the latest head, and committed atomically if approved (T5): the world
  // may have moved since the ticket was asked for (in any process). The commit names who asked.
  auto resolved = committer_.view().resolve(ticket.action, ticket.params);
  if (auto* r = std::get_if<ck::Reason>(&resolved)) {
    ck::Decision d;
    d.reasons.push_back(std::move(*r));
    ck::Outcome out{std::move(d), std::nullopt, committer_.view().state()};
    return {std::move(ticket), true, sequence, StepResult{StepOutcome::rejected, std::move(out)}};
  }
  ck::Proposal& p = std::get<ck::Proposal>(resolved);
  p.principal = ticket.principal;
  if (commit) return {std::move(ticket), true, sequence, commit(p)};
  return {std::move(ticket), true, sequence, step(committer_, p)};
}

}  // namespace clampai::driver
