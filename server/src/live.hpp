// The live page of `clampai serve` (docs/SERVE.md, "The live page"): the page itself (`GET /`,
// compiled in, with its Content Security Policy), and what it polls (`GET /v1/live`): each
// task's status, its recent decisions and the charts of the HTML report drawn as they happen.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/server/service.hpp"
#include "task.hpp"

namespace clampai::server {

/// The page (`GET /`): HTML whose one style and one script are inline and named by their
/// SHA-256 in the response's Content-Security-Policy (docs/SERVE.md lists its headers). It holds
/// no secret: it asks for the token and sends it in the `Authorization` header of its requests.
Response live_page();

/// The Content-Security-Policy of the page: nothing but its own hashed style and script, and
/// requests to its own origin (`connect-src 'self'`).
const std::string& live_page_policy();

/// One thing a task's live page lists: a decision (`evaluate`, `execute`), an approval asked
/// (`pending`) or answered, a rollback.
struct LiveEvent {
  std::string endpoint{};   // evaluate, execute, approval, rollback
  std::string action{};     // the action's id
  std::string principal{};  // who asked (empty without authentication)
  std::string outcome{};    // approved, rejected, executed, pending, granted, denied, rolled_back
  std::vector<kernel::Reason> reasons{};
  std::string cost{};                       // decimal text at the budget's scale
  std::optional<std::uint64_t> sequence{};  // the trace entry it made, if any
};

/// At most this many recent events are kept for each task (the newest).
inline constexpr std::size_t kLiveRecent = 50;

/// What the live page shows of each task since the server started serving it: the recent
/// events, and the report's charts of what `execute`, the answers of approvals and rollbacks did
/// (RunCharts, bounded in memory). Thread-safe.
class LiveFeed {
 public:
  LiveFeed();
  ~LiveFeed();
  LiveFeed(const LiveFeed&) = delete;
  LiveFeed& operator=(const LiveFeed&) = delete;
  /// Records `event` of `task`. `charted`: what changed or could have changed the task (an
  /// execute's decision, an approval's answer, a rollback), drawn with the budget after it.
  /// Never throws: an event that cannot be recorded (the budget of a shared ledger that cannot
  /// be read) is left out, and the answer to the request stands.
  void note(Task& task, LiveEvent event, bool charted) noexcept;
  /// The answer of `GET /v1/live` for `tasks` (those the caller may read), with `pools` (null:
  /// an empty list).
  std::string json(const std::vector<Task*>& tasks, const kernel::PoolTree* pools);

 private:
  struct Feed;
  Feed& feed_of(Task& task);
  std::shared_mutex mutex_;  // guards feeds_ (a feed is never removed)
  std::map<std::string, std::unique_ptr<Feed>, std::less<>> feeds_;  // by task name
};

}  // namespace clampai::server
