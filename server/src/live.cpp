// What the live page polls (`GET /v1/live`, docs/SERVE.md): each task's status, its recent
// decisions, and the HTML report's charts of what happened to it, fed as it happens.
#include "live.hpp"

#include <deque>
#include <shared_mutex>
#include <utility>

#include "clampai/report/live_charts.hpp"
#include "json_out.hpp"
#include "ops.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

struct LiveFeed::Feed {
  explicit Feed(std::shared_ptr<const ck::TaskModel> model)
      : charts(std::move(model), "decision") {}
  std::mutex mutex;
  std::uint64_t next = 0;  // the id of the next event
  struct Stored {
    std::uint64_t id = 0;
    std::int64_t time_us = 0;
    LiveEvent event;
  };
  std::deque<Stored> recent;  // oldest first, at most kLiveRecent
  report::RunCharts charts;
};

namespace {

// The chart's entry of an event with the budget after it: its outcome as a trace names it.
ck::TraceEntry chart_entry(const ck::TaskModel& m,
                           const LiveEvent& e,
                           const ck::BudgetController& b) {
  ck::TraceEntry entry;
  entry.kind = e.outcome == "executed"      ? ck::EntryKind::executed
               : e.outcome == "rolled_back" ? ck::EntryKind::rolled_back
                                            : ck::EntryKind::rejected;
  entry.action = e.action;
  entry.reasons = e.reasons;
  entry.net = m.format_amount(b.net());
  entry.gross = m.format_amount(b.gross());
  return entry;
}

}  // namespace

LiveFeed::LiveFeed() = default;
LiveFeed::~LiveFeed() = default;

LiveFeed::Feed& LiveFeed::feed_of(Task& task) {
  const std::string& name = task.model().name;
  {
    std::shared_lock lock(mutex_);  // every decision comes here: readers do not wait for each other
    if (const auto it = feeds_.find(name); it != feeds_.end()) return *it->second;
  }
  // The charts start from the budget of now (read outside the lock: a shared ledger's read).
  const ck::BudgetController b = task.kernel().budget();
  std::unique_lock lock(mutex_);
  auto& slot = feeds_[name];
  if (!slot) {
    slot = std::make_unique<Feed>(task.model_ptr());
    ck::TraceEntry start;
    start.kind = ck::EntryKind::genesis;
    start.net = task.model().format_amount(b.net());
    start.gross = task.model().format_amount(b.gross());
    slot->charts.add(std::move(start));
  }
  return *slot;
}

void LiveFeed::note(Task& task, LiveEvent event, bool charted) noexcept {
  // What the page shows never changes an answer: an event that cannot be recorded (a shared
  // ledger unreachable for the budget after it, memory) is left out of the page.
  try {
    Feed& feed = feed_of(task);
    std::optional<ck::BudgetController> after;
    if (charted) after = task.kernel().budget();
    const std::int64_t now = task.now();
    std::lock_guard lock(feed.mutex);
    if (after) feed.charts.add(chart_entry(task.model(), event, *after));
    feed.recent.push_back({feed.next++, now, std::move(event)});
    if (feed.recent.size() > kLiveRecent) feed.recent.pop_front();
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): see above
  }
}

std::string LiveFeed::json(const std::vector<Task*>& tasks, const ck::PoolTree* pools) {
  JsonOut j;
  j.begin_object().key("tasks").begin_array();
  for (Task* task : tasks) {
    Feed& feed = feed_of(*task);
    j.begin_object().key("task").value(task->model().name);
    j.key("status").raw(status_json(*task));
    const auto& d = task->counters.decisions;
    const auto total = [&](std::size_t outcome) {
      return d[0][outcome].load(std::memory_order_relaxed) +
             d[1][outcome].load(std::memory_order_relaxed);
    };
    j.key("decisions").begin_object().key("approved").value(total(0));
    j.key("rejected").value(total(1)).key("rollbacks");
    j.value(task->counters.rollbacks.load(std::memory_order_relaxed)).end_object();
    std::lock_guard lock(feed.mutex);
    j.key("events").value(feed.next).key("recent").begin_array();
    for (auto it = feed.recent.rbegin(); it != feed.recent.rend(); ++it) {
      const LiveEvent& e = it->event;
      j.begin_object().key("id").value(it->id).key("time_us").value(it->time_us);
      j.key("endpoint").value(e.endpoint).key("action").value(e.action).key("principal");
      if (e.principal.empty()) {
        j.null();
      } else {
        j.value(e.principal);
      }
      j.key("outcome").value(e.outcome).key("cost").value(e.cost).key("reasons");
      write_reasons(j, e.reasons);
      j.key("sequence");
      if (e.sequence) {
        j.value(*e.sequence);
      } else {
        j.null();
      }
      j.end_object();
    }
    j.end_array().key("charts").begin_object();
    j.key("spend").value(feed.charts.spend()).key("timeline").value(feed.charts.timeline());
    j.key("reasons").value(feed.charts.reasons()).end_object();
    j.end_object();
  }
  j.end_array().key("pools");
  report::write_pools(j, pools != nullptr ? pools->status() : std::vector<ck::PoolStatus>{});
  j.end_object();
  return j.take();
}

}  // namespace clampai::server
