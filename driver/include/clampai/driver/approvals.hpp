// Approvals (docs/SERVE.md, docs/CLI.md): an action whose spec has an `approval` waits as a
// ticket until a principal other than the one who asked approves it (decided afresh then, on
// the state of that moment, and committed atomically or rejected) or denies it, or its time runs
// out. Every step of a ticket's life is a trace entry (a note: it changes nothing), so a trace
// rebuilds the pending tickets. One ticket book, `Approvals`, used by `clampai serve` (HTTP,
// MCP), the run loop (`clampai run` and `agent`: RunOptions::approve) and the Python bindings,
// over a committer: the local kernel, or a shared ledger, where the tickets live in the shared
// chain (each step of one a compare-and-set) and every process's book sees every process's.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clampai/driver/committer.hpp"
#include "clampai/kernel/safety_kernel.hpp"

namespace clampai::driver {

/// An action waiting for a principal's approval.
struct Ticket {
  std::string id{};               // 32 hex digits, random
  std::string action{};           // the action's id
  kernel::ParamMap params{};      // named, defaults filled in (as its trace entry records them)
  std::string principal{};        // who asked (empty when nobody is named)
  std::uint64_t sequence = 0;     // its `approval_requested` entry
  std::int64_t requested_us = 0;  // microseconds since the epoch (the entry's `time_us`)
  std::int64_t expires_us = 0;    // `requested_us` + the action's `approval.ttl_s`
};

/// At most this many tickets wait on one kernel; more are refused until some are answered.
inline constexpr std::size_t kMaxPendingTickets = 1024;

/// Why a ticket cannot be answered: it is not pending (never was, or answered already), or its
/// time ran out (its `approval_expired` entry is in the trace); or too many wait already.
struct TicketRefused : std::runtime_error {
  enum class Why : std::uint8_t { unknown, expired, too_many };
  TicketRefused(Why w, const std::string& message) : std::runtime_error(message), why(w) {}
  Why why;
};

/// The pending tickets a trace leaves: fed the entries of a trace in order (`note`), it keeps
/// those requested and neither granted, denied nor expired, and what became of the others.
struct TicketLog {
  std::map<std::string, Ticket, std::less<>> pending{};
  // The last answered tickets (at most kMaxPendingTickets): ticket -> what became of it.
  std::deque<std::pair<std::string, std::string>> answered{};
  void note(const kernel::TaskModel& model, const kernel::TraceEntry& e);
  void answer(const std::string& ticket, std::string what);
};

/// The ticket book of one committer's trace (`Committer::record_note`): this process's kernel,
/// or a shared ledger, whose tickets any process on it may list and answer (before each
/// operation the book reads what the others recorded: `Committer::trace_since`).
/// Thread-safe: one answer wins a ticket, in any process; the others find it answered.
class Approvals {
 public:
  /// Microseconds since the epoch.
  using Clock = std::function<std::int64_t()>;
  /// `tickets`: what the trace so far left (a TicketLog fed its entries; on a shared ledger the
  /// book reads them itself); `clock`: the deadlines' clock (tests inject one), the system
  /// clock when empty. Requires `committer` to outlive the book.
  explicit Approvals(Committer& committer, Clock clock = {}, TicketLog tickets = {});
  /// The book of `kernel`, a local kernel (on its `LocalCommitter`). Requires `kernel` to
  /// outlive the book.
  explicit Approvals(kernel::SafetyKernel& kernel, Clock clock = {}, TicketLog tickets = {});

  /// The book's clock (microseconds since the epoch).
  [[nodiscard]] std::int64_t now() const;

  /// What `ask` did: a ticket, or none when the kernel rejects the action now (`decision`
  /// says why; nothing was recorded: there is nothing a person could approve).
  struct Asked {
    kernel::Decision decision;
    std::optional<Ticket> ticket;
  };
  /// Asks for the approval of `proposal`: decided on the state of now, and if approved, an
  /// `approval_requested` entry (naming the proposal's principal) and a pending ticket;
  /// nothing is committed.
  /// @throws TicketRefused (too_many) past kMaxPendingTickets; InvalidArgument if the action
  /// has no `approval` or the trace is sealed.
  Asked ask(const kernel::Proposal& proposal);

  /// The pending tickets, oldest first; those whose time ran out expire first (an
  /// `approval_expired` entry each).
  std::vector<Ticket> pending();

  /// What became of an answered ticket: `granted` and the step (decided afresh on the state of
  /// now: committed, or rejected with reasons), or denied (`step` a rejection whose reason is
  /// `approval_denied`, nothing committed).
  struct Answered {
    Ticket ticket;
    bool granted = false;
    std::uint64_t sequence = 0;  // the `approval_granted` or `approval_denied` entry
    StepResult step;
  };
  /// Commits a granted ticket's proposal (decided afresh): the caller's step.
  using Commit = std::function<StepResult(const kernel::Proposal&)>;
  /// Answers ticket `id` for `principal`. `check` (may be empty) is called with the ticket
  /// before anything is recorded (the caller's rights, self-approval: it throws to refuse).
  /// On approval the ticket's action is resolved afresh and committed by `commit` (empty: a
  /// step on the committer), naming who asked. Exactly one answer wins a ticket.
  /// @throws TicketRefused (unknown, naming what became of it; expired: its `approval_expired`
  /// entry recorded then); what `check` throws; InvalidArgument if the trace is sealed.
  Answered answer(std::string_view id,
                  bool approve,
                  const std::string& principal,
                  const std::function<void(const Ticket&)>& check = {},
                  const Commit& commit = {});

  /// Called (under the book's lock) with each ticket that expires, once this book recorded its
  /// entry (on a shared ledger, the one book that did); set before the book is shared between
  /// threads. May be empty.
  std::function<void(const Ticket&)> on_expiry{};

 private:
  std::unique_ptr<Committer> own_;  // the local kernel's committer, when made on a kernel
  Committer& committer_;
  Clock clock_;  // empty: the system clock
  // Held across an approval's notes (ticket taken, then its entry), never inside the kernel's.
  std::mutex mutex_;
  TicketLog tickets_;       // GUARDED_BY mutex_
  std::uint64_t seen_ = 0;  // GUARDED_BY mutex_: the trace is read from here (trace_since)
  // Brings the committer to its latest head and `tickets_` up to the trace's end (what other
  // processes recorded). Requires mutex_.
  void catch_up_locked();
  // Records the expiry of every pending ticket due at `now`. Requires mutex_.
  void expire_due_locked(std::int64_t now);
  // Records note `e` (a ticket's step) and keeps it in `tickets_`; on a shared ledger, throws
  // InvalidArgument if its ticket was answered meanwhile (then `tickets_` says by whom).
  kernel::TraceEntry record_locked(kernel::TraceEntry e);
};

/// A rejection of action `action` whose one reason is `code` (what a denied or expired ticket
/// answers).
kernel::Decision approval_refusal(std::size_t action,
                                  kernel::ReasonCode code,
                                  std::string subject,
                                  std::string message);

}  // namespace clampai::driver
