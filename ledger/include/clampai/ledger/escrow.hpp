// Escrow mode of the PostgreSQL ledger (docs/LEDGER.md, "Escrow mode"): a process leases a slice
// of a task's budget from a pool in the database and decides locally, on a kernel whose budget is
// the slice, without a round trip per decision. Only the budget is shared: each lease has its own
// hash-chained trace (a task of the ledger named `TASK/lease-ID`), and the lease row in the
// shared table records what is durably spent from it. T1 holds for the group exactly: the pool
// never hands out more than its total, and a lease's spend never exceeds its slice.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "clampai/kernel/ledger.hpp"
#include "clampai/ledger/ledger.hpp"

namespace clampai::ledger {

/// The lease was expired (its lifetime passed without a flush) or closed before the entries
/// waiting to be flushed could be made durable: they were never counted, and must not be acted
/// on. The kernel is unusable afterwards.
class LeaseExpired : public Error {
 public:
  using Error::Error;
};

/// How an `EscrowKernel` leases.
struct EscrowOptions {
  /// The slice of the budget each lease asks for (at least one action's cost is asked when an
  /// action costs more); must be > 0.
  kernel::Amount slice = 0;
  /// A lease not flushed (or opened) for this long expires: its unspent part returns to the
  /// pool at the next lease taken from it. Every flush renews it.
  std::chrono::milliseconds lifetime{30000};
  /// Decisions per transaction: 1 makes every `execute` durable before it returns; N > 1
  /// returns before durability, and an entry is counted only once flushed (`flush`, `close`,
  /// every N entries, and before a lease changes).
  std::size_t batch = 1;
  /// Who holds the lease, for the lease row (defaults to host:pid).
  std::string owner;
  /// Microseconds since the epoch, for trace entries; defaults to the system clock.
  std::function<std::int64_t()> clock;
  /// Called inside every flush's transaction before COMMIT (tests kill the process there).
  std::function<void()> hook;
};

/// `postgresql://...?escrow=SLICE[&escrow_lease=SECONDS][&escrow_batch=N][#TASK]` split: the
/// libpq URI without the escrow parameters, the task, and the options they set.
struct EscrowUrl {
  std::string conninfo;
  std::string task;
  std::string slice;  // decimal text, as written
  std::chrono::milliseconds lifetime{30000};
  std::size_t batch = 1;
};

/// True iff `url` is a PostgreSQL URL with an `escrow=` parameter.
bool is_escrow_url(const std::string& url);
/// @throws InvalidArgument naming the parameter that is malformed (or missing: `escrow`).
EscrowUrl split_escrow_url(const std::string& url);

/// Why escrow mode cannot run `model` (its decisions read state that only the shared mode
/// shares), or nullopt if it can. Escrow mode shares only the budget: a spec is refused if any
/// invariant exists, any `requires`, cost, effect or the goal reads a variable, any action
/// depends on another, or `budget.max_steps` is below floor(total / min_action_cost).
std::optional<std::string> escrow_refusal(const kernel::TaskModel& model);

/// The pool of a task in escrow mode, as the database holds it.
struct EscrowPool {
  kernel::Amount total = 0;
  kernel::Amount reserved = 0;  // active leases' slices + closed and expired leases' spend
  kernel::Amount spent = 0;     // durable net spend of all leases
  std::uint64_t active = 0;     // leases active (not closed, not expired yet)
};

/// Counters of an `EscrowKernel`.
struct EscrowStats {
  std::uint64_t leases = 0;   // leases taken
  std::uint64_t flushes = 0;  // transactions that made entries durable
  std::uint64_t commits = 0;  // entries made durable (executed and rolled back)
  std::uint64_t expired = 0;  // stale leases of other processes this one expired
};

/// A kernel in escrow mode: decides on a local `SafetyKernel` whose budget is its lease's slice.
/// When the lease cannot pay for an action it flushes, closes the lease (returning what is
/// unspent) and leases a new slice; an action is refused for the budget only when the pool has
/// no slice left for it. Not thread-safe.
class EscrowKernel {
 public:
  /// Connects (creating or upgrading the schema) and takes the first lease. The pool of `task`
  /// is created with the model's budget if it does not exist.
  /// @throws InvalidArgument if the spec cannot run in escrow mode (`escrow_refusal`), the
  /// slice is not > 0, or the task is in use in the shared mode (or its pool is for another
  /// spec); LedgerUnavailable if the database cannot be reached.
  EscrowKernel(std::shared_ptr<const kernel::TaskModel> model,
               const std::string& conninfo,
               std::string task,
               EscrowOptions options);
  /// Closes the lease (best effort: a failure leaves it to expire).
  ~EscrowKernel();
  EscrowKernel(const EscrowKernel&) = delete;
  EscrowKernel& operator=(const EscrowKernel&) = delete;

  /// Decides on the lease; leases anew when it cannot pay (see the class). Durable before it
  /// returns iff `batch` is 1. @throws LeaseExpired (see there).
  kernel::Outcome execute(const kernel::Proposal& proposal);
  kernel::Outcome execute(std::string_view action_id, const kernel::ParamMap& params = {});
  /// Rolls back an action of the current lease (a receipt is valid until the lease changes:
  /// `lease_id`); its refund returns to the lease, and from it to the pool once, at its close
  /// or expiry. @throws InvalidArgument as `SafetyKernel::rollback` does.
  kernel::Outcome rollback(const kernel::Receipt& receipt);
  /// Makes the decisions not yet durable durable, in one transaction (renewing the lease).
  /// @throws LeaseExpired if the lease expired first; LedgerUnavailable.
  void flush();
  /// Flushes and closes the lease: its unspent part returns to the pool. Idempotent.
  void close();

  /// The current lease's kernel (budget: its slice).
  [[nodiscard]] const kernel::SafetyKernel& local() const noexcept { return *local_; }
  [[nodiscard]] const kernel::TaskModel& model() const noexcept { return *model_; }
  [[nodiscard]] std::int64_t lease_id() const noexcept { return lease_; }
  /// The task of the current lease's chain in the ledger (`TASK/lease-ID`).
  [[nodiscard]] std::string chain() const;
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] EscrowStats stats() const noexcept { return stats_; }
  /// Entries decided but not durable yet.
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

  /// The pool of `task` (run with `model`) in the database at `conninfo`, or nullopt if there
  /// is none. Expires stale leases first when `sweep`.
  static std::optional<EscrowPool> pool(const std::string& conninfo,
                                        const kernel::TaskModel& model,
                                        const std::string& task,
                                        bool sweep = false);

 private:
  struct Db;
  void open_lease(kernel::Amount at_least);
  void close_lease();
  void note_entry();
  void check_usable() const;

  std::shared_ptr<const kernel::TaskModel> model_;
  std::string task_;
  EscrowOptions options_;
  std::unique_ptr<Db> db_;
  std::unique_ptr<kernel::SafetyKernel> local_;
  std::shared_ptr<kernel::TaskModel> lease_model_;
  std::int64_t lease_ = 0;  // 0: none open
  kernel::Amount granted_ = 0;
  std::uint64_t durable_length_ = 0;  // entries of the chain durable in the database
  std::string durable_head_;
  std::vector<std::string> pending_;  // canonical lines decided, not yet durable
  std::string pending_head_;
  bool broken_ = false;
  EscrowStats stats_;
};

}  // namespace clampai::ledger
