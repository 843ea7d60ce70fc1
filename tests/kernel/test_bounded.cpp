// Bounded memory for long runs: the in-memory trace window and the undo depth; the canonical
// lines the kernel builds on its fast path are the canonical serialization of their entries.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace clampai::kernel;
using clampai::test::model_from;

namespace {

// Names out of order (upper case sorts first), a decimal and an enum variable, a parameter,
// a monitoring invariant that warns: what the executed entry's line lists, in canonical order.
const char* kSpec = R"J({
  "variables": {
    "b": {"type": "int", "initial": 0},
    "B": {"type": "decimal", "scale": 2, "initial": "1.50"},
    "a": {"type": "int", "initial": 0, "min": -1000000, "max": 1000000},
    "mode": {"type": "enum", "values": ["x", "y \"q\""], "initial": "x"}
  },
  "actions": [
    {"id": "step_s", "cost": "0.25 * k",
     "parameters": {"k": {"type": "int", "min": 1, "max": 4, "default": 1},
                    "j": {"type": "decimal", "scale": 1, "min": 0, "max": 9, "default": "0.5"}},
     "effects": [{"variable": "b", "mode": "increment", "value": "k"},
                 {"variable": "B", "mode": "increment", "value": "j"},
                 {"variable": "a", "mode": "decrement", "value": 1},
                 {"variable": "mode", "mode": "set", "value": "'y \"q\"'"}]}
  ],
  "invariants": [{"name": "warn", "check": "b < 3", "enforcement": "monitoring"}],
  "budget": {"total": 1000000, "min_action_cost": 0.25}
})J";

}  // namespace

TEST_CASE("Executed entries are the canonical serialization of their fields", "[kernel][trace]") {
  SafetyKernel k(model_from(kSpec));
  for (int i = 0; i < 6; ++i) {
    const Outcome o = k.execute("step_s", {{"k", Value::integer(1 + i % 4)}});
    REQUIRE(o.receipt.has_value());
  }
  const auto entries = k.trace();
  REQUIRE(entries.size() == 7);
  REQUIRE(entries.back().warnings.size() == 1);  // b >= 3 by then
  for (const TraceEntry& e : entries) {
    // The hash recomputed from the parsed fields is the one the fast path stored.
    REQUIRE(e.compute_hash() == e.hash);
  }
  REQUIRE(verify_chain(entries, true).ok);
  REQUIRE(k.verify_trace().ok);
  REQUIRE_FALSE(replay_trace(k.model_ptr(), entries).has_value());
}

TEST_CASE("The trace window keeps the last entries; the writer still gets all of them",
          "[kernel][trace][bounded]") {
  const std::string path = clampai::test::temp_file("window.jsonl");
  KernelOptions options;
  options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
  options.trace_window = 4;
  SafetyKernel k(model_from(kSpec), options);
  for (int i = 0; i < 20; ++i) REQUIRE(k.execute("step_s").receipt.has_value());
  REQUIRE(k.trace_length() == 21);
  const auto kept = k.trace();
  REQUIRE(kept.size() == 4);
  REQUIRE(kept.front().sequence == 17);
  REQUIRE(kept.back().sequence == 20);
  const TraceCheck in_memory = k.verify_trace();
  INFO(in_memory.message);
  REQUIRE(in_memory.ok);
  REQUIRE(in_memory.entries == 4);
  k.seal();
  REQUIRE(k.trace().back().kind == EntryKind::sealed);
  const TraceCheck file = verify_trace_file(path);
  INFO(file.message);
  REQUIRE(file.ok);
  REQUIRE(file.entries == 22);
  std::remove(path.c_str());
}

TEST_CASE("Rollback reaches back as far as the undo depth, and no further",
          "[kernel][rollback][bounded]") {
  KernelOptions options;
  options.undo_depth = 3;
  SafetyKernel k(model_from(kSpec), options);
  const State initial = k.state();
  std::vector<Receipt> receipts;
  std::vector<State> states{initial};
  for (int i = 0; i < 5; ++i) {
    receipts.push_back(*k.execute("step_s", {{"k", Value::integer(2)}}).receipt);
    states.push_back(k.state());
  }
  // The oldest receipt is beyond the depth: a clear error naming the limit, nothing changes.
  try {
    k.rollback(receipts[0]);
    FAIL("rolled back past the undo depth");
  } catch (const clampai::InvalidArgument& e) {
    REQUIRE(std::string(e.what()).find("undo_depth") != std::string::npos);
  }
  REQUIRE(k.state() == states[5]);
  for (int i = 4; i >= 2; --i) {
    k.rollback(receipts[static_cast<std::size_t>(i)]);
    REQUIRE(k.state() == states[static_cast<std::size_t>(i)]);  // T7: exactly the pre-state
  }
  try {
    k.rollback(receipts[1]);
    FAIL("rolled back past the undo depth");
  } catch (const clampai::InvalidArgument& e) {
    REQUIRE(std::string(e.what()).find("only the last 3 committed actions") != std::string::npos);
  }
  REQUIRE(k.state() == states[2]);
  REQUIRE(k.verify_trace().ok);
  REQUIRE_FALSE(replay_trace(k.model_ptr(), k.trace()).has_value());
}

TEST_CASE("Readers of the kept lines and a trimming writer run concurrently",
          "[kernel][trace][bounded][concurrency]") {
  KernelOptions options;
  options.trace_window = 8;
  options.undo_depth = 8;
  SafetyKernel k(model_from(kSpec), options);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!done) {
      const TraceCheck c = k.verify_trace();
      if (!c.ok || c.entries > 8) ++bad;
      for (const TraceEntry& e : k.trace())
        if (e.compute_hash() != e.hash) ++bad;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 3000; ++i) (void)k.execute("step_s");
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  REQUIRE(bad == 0);
  REQUIRE(k.trace_length() == 6001);
  REQUIRE(k.verify_trace().ok);
}
