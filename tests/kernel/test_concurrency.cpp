// Many threads against one kernel: T1 holds, the trace verifies and replays to the final state.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/mutex.hpp"
#include "support.hpp"

using namespace clampai::kernel;

TEST_CASE("Concurrency: many threads never break T1, and the trace replays",
          "[kernel][concurrency]") {
  const char* spec = R"J({"variables": {"n": {"type": "int", "initial": 0, "min": 0, "max": 400},
                                        "m": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1.5, "effects": [{"variable": "n", "mode": "increment", "value": 3}]},
                {"id": "dec", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 2}]},
                {"id": "both", "cost": 2, "effects": [{"variable": "n", "mode": "increment", "value": 1}, {"variable": "m", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "cap", "check": "n + m <= 300"}],
    "budget": {"total": 2000, "min_action_cost": 1}})J";
  const std::string path = clampai::test::temp_file("concurrency.jsonl");
  const auto model = load_spec(spec);
  KernelOptions options;
  options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
  options.record_rejections = true;
  SafetyKernel kernel(model, options);
  std::atomic<bool> violated{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      const char* ids[] = {"inc", "dec", "both"};
      for (int i = 0; i < 1500; ++i) {
        kernel.execute(ids[rng() % 3]);
        const auto b = kernel.budget();
        if (b.net() > b.total() || b.net() < 0) violated = true;
        if (rng() % 50 == 0) (void)kernel.evaluate("inc");
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE_FALSE(violated);
  REQUIRE(kernel.budget().net() <= kernel.budget().total());
  REQUIRE(kernel.steps() > 500);  // the threads did commit, concurrently
  kernel.seal();
  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  State final_state = model->initial_state();
  REQUIRE_FALSE(replay_trace(model, read_trace_file(path), &final_state).has_value());
  REQUIRE(final_state == kernel.state());
  std::remove(path.c_str());
}

// Optimistic commits: threads decide on a snapshot of the head and commit only if it is still
// the head. When they race for the last unit of budget, exactly one wins, the others are
// rejected for the budget, and nothing is charged twice (T1, T5).
TEST_CASE("Concurrency: threads racing for the last unit of budget: exactly one wins",
          "[kernel][concurrency]") {
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "take", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
                {"id": "free", "cost": 0, "effects": [{"variable": "n", "mode": "increment", "value": 0}]}],
    "emergency_actions": ["free"],
    "budget": {"total": 3, "min_action_cost": 1}})J");
  constexpr int kThreads = 4;
  for (int round = 0; round < 60; ++round) {
    KernelOptions options;
    options.record_rejections = round % 2 == 0;  // both commit paths: traced and untraced
    SafetyKernel kernel(model, options);
    REQUIRE(kernel.execute("take").receipt);
    REQUIRE(kernel.execute("take").receipt);  // one unit left
    std::atomic<int> ready{0};
    std::atomic<int> won{0};
    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        const Outcome o = kernel.execute("take");
        if (o.receipt) {
          won.fetch_add(1);
        } else if (o.decision.has(ReasonCode::budget_exceeded)) {
          refused.fetch_add(1);
        }
        (void)kernel.execute("free");  // emergency steps interleave with the race
      });
    }
    for (auto& th : threads) th.join();
    REQUIRE(won.load() == 1);
    REQUIRE(refused.load() == kThreads - 1);
    REQUIRE(kernel.budget().net() == kernel.budget().total());
    REQUIRE(kernel.steps() == 3);
    REQUIRE(kernel.emergency_steps() == kThreads);
    REQUIRE(kernel.state().get("n") == Value::integer(3));
    const TraceCheck check = kernel.verify_trace();
    INFO(check.message);
    REQUIRE(check.ok);
    REQUIRE(kernel.trace_length() ==
            1 + 3 + kThreads + (options.record_rejections ? kThreads - 1 : 0));
  }
}

// `execute(Decided)` commits a decision without deciding again only on the head it was made
// on: threads that all decided on the head with one unit of budget left race to commit; one
// commits its decision as made, the others find the head moved, are decided afresh and refused.
TEST_CASE("Concurrency: decisions made on one head, committed by racing threads: one wins",
          "[kernel][concurrency]") {
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "take", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 3, "min_action_cost": 1}})J");
  constexpr int kThreads = 4;
  for (int round = 0; round < 40; ++round) {
    KernelOptions options;
    options.record_rejections = round % 2 == 0;
    SafetyKernel kernel(model, options);
    REQUIRE(kernel.execute("take").receipt);
    REQUIRE(kernel.execute("take").receipt);  // one unit left
    const auto take = std::get<Proposal>(kernel.resolve("take"));
    std::atomic<int> decided{0};
    std::atomic<int> won{0};
    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        Decided d = kernel.decide(take);
        const bool approved = d.decision().approved;
        decided.fetch_add(1);
        while (decided.load() < kThreads) std::this_thread::yield();  // all on one head
        const Outcome o = kernel.execute(std::move(d));
        if (approved && o.receipt) {
          won.fetch_add(1);
        } else if (approved && o.decision.has(ReasonCode::budget_exceeded)) {
          refused.fetch_add(1);
        }
      });
    }
    for (auto& th : threads) th.join();
    REQUIRE(won.load() == 1);
    REQUIRE(refused.load() == kThreads - 1);
    REQUIRE(kernel.budget().net() == kernel.budget().total());
    REQUIRE(kernel.steps() == 3);
    REQUIRE(kernel.verify_trace().ok);
    REQUIRE_FALSE(replay_trace(model, kernel.trace()).has_value());
  }
}

// The same on a shared ledger: each thread's kernel decides on its replica and commits that
// decision; a compare-and-set lost to another kernel is decided afresh, so the budget is spent
// exactly and the shared trace replays.
TEST_CASE("Concurrency: shared kernels commit their replicas' decisions, never a stale one",
          "[kernel][concurrency][ledger]") {
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "take", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 40, "min_action_cost": 1}})J");
  const auto ledger = std::make_shared<MemoryLedger>();
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<SharedKernel>> kernels;
  for (int t = 0; t < kThreads; ++t)
    kernels.push_back(std::make_unique<SharedKernel>(model, ledger->share()));
  const auto take = std::get<Proposal>(kernels[0]->local().resolve("take"));
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      SharedKernel& k = *kernels[static_cast<std::size_t>(t)];
      for (int i = 0; i < 30; ++i) {
        Decided d = k.local().decide(take);
        if (!d.decision().approved && k.refresh() == 0) break;  // the budget is spent
        if (k.execute(std::move(d)).receipt) won.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(won.load() == 40);  // T1: every unit once, none twice
  SharedKernel reader(model, ledger->share());
  REQUIRE(reader.local().state().get("n") == Value::integer(40));
  REQUIRE(reader.local().budget().net() == reader.local().budget().total());
  const auto entries = parse_trace_lines(reader.read(0), "memory:");
  REQUIRE_FALSE(replay_trace(model, entries).has_value());
}

// Without a writer, entries are hashed after `execute` returns, in order, by a background
// thread; readers of the trace wait for it. With readers running alongside, the chain verifies
// at every moment, and the kernel's trace replays to its final state.
TEST_CASE("Concurrency: deferred hashing with concurrent readers keeps the chain intact",
          "[kernel][concurrency]") {
  const auto model =
      load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0, "min": 0, "max": 100000}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 3}]},
                {"id": "dec", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 2}]}],
    "budget": {"total": 100000, "min_action_cost": 1}})J");
  SafetyKernel kernel(model);
  std::atomic<bool> done{false};
  std::atomic<bool> broken{false};
  std::atomic<int> committed{0};
  std::thread reader([&] {
    while (!done.load()) {
      if (!kernel.verify_trace().ok) broken = true;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t + 100));
      for (int i = 0; i < 1500; ++i) {
        if (kernel.execute(rng() % 3 == 0 ? "dec" : "inc").receipt) committed.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  reader.join();
  REQUIRE_FALSE(broken);
  REQUIRE(kernel.steps() == static_cast<std::uint64_t>(committed.load()));
  REQUIRE(kernel.trace_length() == 1 + kernel.steps());  // more entries than the hasher's ring
  REQUIRE(kernel.verify_trace().ok);
  State final_state = model->initial_state();
  REQUIRE_FALSE(replay_trace(model, kernel.trace(), &final_state).has_value());
  REQUIRE(final_state == kernel.state());
  const TraceEntry sealed = kernel.seal();
  REQUIRE(sealed.sequence == kernel.trace_length() - 1);
  REQUIRE(verify_chain(kernel.trace(), false).ok);
}

// Deferred hashing changes when the hashes are computed, never what they are (T6).
TEST_CASE("Concurrency: a deferred chain is byte for byte the chain hashed at once",
          "[kernel][concurrency]") {
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "reversible": true, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "invariants": [{"name": "cap", "check": "n <= 2000"}],
    "budget": {"total": 5000, "min_action_cost": 1}})J");
  auto run = [&](bool defer) {
    KernelOptions options = clampai::test::fixed_clock();
    options.defer_hash = defer;
    options.record_rejections = true;
    SafetyKernel kernel(model, options);
    for (int i = 0; i < 2100; ++i) {
      const Outcome o = kernel.execute("inc");
      if (i % 97 == 0 && o.receipt) (void)kernel.rollback(*o.receipt);
    }
    kernel.seal();
    return kernel.trace();
  };
  const auto deferred = run(true);
  const auto at_once = run(false);
  REQUIRE(deferred.size() == at_once.size());
  REQUIRE(deferred.size() > 2100);
  for (std::size_t i = 0; i < deferred.size(); ++i) {
    INFO(i);
    REQUIRE(deferred[i].hash == at_once[i].hash);
    REQUIRE(deferred[i].prev == at_once[i].prev);
  }
  REQUIRE(verify_chain(deferred, false).ok);
}

// The hasher renders an executed entry's line from the fields its commit fixed, into room
// reserved by a bound of its size: every kind of value (long strings that need escaping,
// decimals of several scales, negative amounts, lists, parameters, warnings, emergency steps)
// renders as the canonical serialisation does, with and without deferral, in a window too.
TEST_CASE("Concurrency: rendered lines are the canonical serialisation of every kind of value",
          "[kernel][concurrency]") {
  const std::string long_text(300, 'x');
  const auto model = load_spec(R"J({"variables": {
      "n": {"type": "int", "initial": 0},
      "d": {"type": "decimal", "scale": 4, "initial": "-2.5000"},
      "note": {"type": "string", "initial": ""},
      "tags": {"type": "list", "element": "string", "initial": [], "max_length": 100000},
      "mode": {"type": "enum", "values": ["a", "b"], "initial": "a"}},
    "actions": [
      {"id": "quote", "cost": "0.0001", "effects": [{"variable": "note", "mode": "set", "value": "'say \"hi\" </> )J" +
                               long_text + R"J('"}]},
      {"id": "tag", "cost": 1, "effects": [{"variable": "tags", "mode": "append", "value": "'t\"'"}, {"variable": "mode", "mode": "set", "value": "'b'"}]},
      {"id": "move", "cost": "0.5 * k", "parameters": {"k": {"type": "decimal", "scale": 3, "min": -1000, "max": 1000}},
       "effects": [{"variable": "d", "mode": "decrement", "value": "k"}, {"variable": "n", "mode": "decrement", "value": 3}]},
      {"id": "hover", "cost": 0, "effects": [{"variable": "mode", "mode": "set", "value": "'a'"}]}],
    "invariants": [{"name": "n_warn", "check": "n > -5", "enforcement": "monitoring"}],
    "budget": {"total": 1000000, "min_action_cost": "0.0001", "scale": 5},
    "emergency_actions": ["hover"]})J");
  for (const bool defer : {true, false}) {
    for (const std::size_t window : {std::size_t{0}, std::size_t{7}}) {
      INFO("defer " << defer << ", window " << window);
      KernelOptions options = clampai::test::fixed_clock();
      options.defer_hash = defer;
      options.trace_window = window;
      SafetyKernel kernel(model, options);
      for (int i = 0; i < 1500; ++i) {
        ParamMap k{{"k", Value::number(Decimal{1234 + i, 3})}};
        const Outcome o = kernel.execute(i % 4 == 0   ? "quote"
                                         : i % 4 == 1 ? "tag"
                                         : i % 4 == 2 ? "move"
                                                      : "hover",
                                         i % 4 == 2 ? k : ParamMap{});
        REQUIRE(o.decision.approved);
      }
      REQUIRE(kernel.verify_trace().ok);  // the kept bytes, hashed as they are
      const std::vector<TraceEntry> entries = kernel.trace();
      REQUIRE(entries.size() == (window == 0 ? 1501 : window));
      bool warned = false;
      for (const TraceEntry& e : entries) {
        // The hash of the bytes kept is the hash of the entry serialised again.
        REQUIRE(e.compute_hash() == e.hash);
        warned = warned || !e.warnings.empty();
      }
      REQUIRE(warned);
      if (window == 0) REQUIRE(verify_chain(entries, true).ok);
    }
  }
}

TEST_CASE("Mutex: mutual exclusion, spinning and sleeping waiters alike", "[kernel][concurrency]") {
  Mutex mutex;
  long counter = 0;  // not atomic: only the lock orders the increments
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        std::lock_guard lock(mutex);
        ++counter;
        // Now and then a long hold, so that waiters exhaust their spins and sleep.
        if (i % 5000 == t) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(counter == 4 * 20000);

  REQUIRE(mutex.try_lock());
  std::atomic<bool> other_got_it{true};
  std::thread([&] { other_got_it = mutex.try_lock(); }).join();
  CHECK_FALSE(other_got_it);
  mutex.unlock();
  std::thread([&] {
    other_got_it = mutex.try_lock();
    if (other_got_it) mutex.unlock();
  }).join();
  CHECK(other_got_it);
}

// With defer_hash off, the callers hash: no thread is started however many entries a single
// caller appends (with it on, the background hasher is one more thread of the process).
TEST_CASE("Concurrency: defer_hash off starts no hasher thread", "[kernel][concurrency]") {
  const auto threads_now = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/task"))
      ++n;
    return n;
  };
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 100000, "min_action_cost": 1}})J");
  for (const bool defer : {false, true}) {
    INFO("defer " << defer);
    KernelOptions options;
    options.defer_hash = defer;
    const std::size_t before = threads_now();
    SafetyKernel kernel(model, options);
    for (int i = 0; i < 3000; ++i) REQUIRE(kernel.execute("inc").decision.approved);
    CHECK(threads_now() == before + (defer ? 1 : 0));
    REQUIRE(kernel.verify_trace().ok);
  }
}
