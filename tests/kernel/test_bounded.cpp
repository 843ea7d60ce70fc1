// Bounded memory for long runs: the in-memory trace window and the undo depth; the canonical
// lines the kernel builds on its fast path are the canonical serialization of their entries.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "arena.hpp"
#include "support.hpp"
#include "test_hooks.hpp"

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

namespace {

// Values of every kind in executed entries: strings (one long enough that its line is past
// every buffer the kernel starts with), lists, decimals, booleans, a variable deleted, negative
// and large integers, parameters, monitoring warnings; and actions that can be rolled back.
std::string varied_spec() {
  std::string spec = R"J({
  "variables": {
    "n": {"type": "int", "initial": 0},
    "big": {"type": "int", "initial": 0},
    "cash": {"type": "decimal", "scale": 2, "initial": "10.00"},
    "log": {"type": "list", "element": "int", "initial": []},
    "note": {"type": "string", "initial": "x"},
    "flag": {"type": "bool", "initial": false},
    "ticket": {"type": "int", "optional": true, "initial": 7}
  },
  "actions": [
    {"id": "add", "cost": 1, "parameters": {"k": {"type": "int", "min": -9, "max": 9, "default": 1},
                                            "d": {"type": "decimal", "scale": 1, "min": -5, "max": 5, "default": "0.5"}},
     "effects": [{"variable": "n", "mode": "increment", "value": "k"},
                 {"variable": "log", "mode": "append", "value": "k"},
                 {"variable": "cash", "mode": "increment", "value": "d"},
                 {"variable": "flag", "mode": "set", "value": "k > 0"}]},
    {"id": "say", "cost": 2, "effects": [{"variable": "note", "mode": "set", "value": "'caf\u00e9 \"q\"'"},
                                         {"variable": "big", "mode": "set", "value": 9007199254740993}]},
    {"id": "long", "cost": 1, "effects": [{"variable": "note", "mode": "set", "value": "'LONG'"}]},
    {"id": "drop", "cost": 1, "effects": [{"variable": "ticket", "mode": "delete"}]},
    {"id": "back", "cost": 1, "effects": [{"variable": "ticket", "mode": "set", "value": -3},
                                          {"variable": "log", "mode": "remove", "value": 1}]}
  ],
  "invariants": [{"name": "watch", "check": "n <= 5", "enforcement": "monitoring"}],
  "budget": {"total": 100000, "min_action_cost": 1}
})J";
  spec.replace(spec.find("LONG"), 4, std::string(6000, 'L'));
  return spec;
}

// Runs the same steps on `k`: every action in turn, some of the first half rolled back at once
// (each rollback restores the exact state before, T7); in the second half nothing waits for
// the hasher, which then lags behind the commits (and the committer renders lines itself).
// Returns the number of rollbacks.
int run_varied(SafetyKernel& k, int steps) {
  int rollbacks = 0;
  static constexpr const char* kActions[] = {"add", "say", "add", "drop", "back", "add", "long"};
  for (int i = 0; i < steps; ++i) {
    const std::string action = kActions[i % 7];
    ParamMap params;
    if (action == "add")
      params = {{"k", Value::integer(i % 5 - 2)}, {"d", Value::number(Decimal{i % 7 - 3, 1})}};
    const State before = k.state();
    const Outcome o = k.execute(action, params);
    if (o.receipt && i % 3 == 0 && i < steps / 2) {
      k.rollback(*o.receipt);
      REQUIRE(k.state() == before);
      ++rollbacks;
    }
  }
  return rollbacks;
}

}  // namespace

TEST_CASE("Kept entries are the lines the writer gets, byte for byte, whatever their values",
          "[kernel][trace][bounded]") {
  // The kernel keeps an executed entry as a compact record and renders its line when it is
  // hashed (by the committer or by the hasher, whichever) and when it is read: the same bytes
  // as the line a writer gets, for every kind of value, with and without a window.
  const std::string path = clampai::test::temp_file("varied_kept.jsonl");
  std::int64_t now = 1700000000000000;
  auto clock = [&now] { return now += 977; };
  KernelOptions written;
  written.clock = clock;
  written.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
  const auto model = model_from(varied_spec());
  constexpr int kSteps = 1500;  // past several batches of the background hasher
  {
    SafetyKernel k(model, written);
    run_varied(k, kSteps);
  }
  written.writer->close();
  const std::vector<TraceEntry> file = read_trace_file(path);
  REQUIRE(verify_trace_file(path, /*allow_unsealed=*/true).ok);
  std::remove(path.c_str());
  REQUIRE(file.size() > kSteps);

  // The third kernel has no background hasher (a test hook): its lines wait until 1,024 do,
  // and the committer renders those it commits while 512 or more wait; so those paths run at
  // known steps, not when the scheduler lets the hasher fall behind.
  for (const std::size_t window : {std::size_t{0}, std::size_t{100}, std::size_t{1}}) {
    const bool no_hasher = window == 1;
    now = 1700000000000000;
    KernelOptions options;
    options.clock = clock;
    options.trace_window = no_hasher ? 0 : window;
    options.undo_depth = window == 100 ? 5 : 0;
    detail::test_no_background_hasher = no_hasher;
    const std::uint64_t ahead = detail::test_lines_rendered_ahead.load();
    SafetyKernel k(model, options);
    detail::test_no_background_hasher = false;
    run_varied(k, kSteps);
    if (no_hasher) REQUIRE(detail::test_lines_rendered_ahead.load() - ahead >= 50);
    const std::vector<TraceEntry> kept = k.trace();
    REQUIRE(kept.size() == (window == 100 ? window : file.size()));
    const std::size_t first = file.size() - kept.size();
    for (std::size_t i = 0; i < kept.size(); ++i) {
      INFO("entry " << first + i);
      REQUIRE(kept[i].hash == file[first + i].hash);  // the same SHA-256: the same bytes
      REQUIRE(kept[i].compute_hash() == kept[i].hash);
    }
    const TraceCheck check = k.verify_trace();
    INFO(check.message);
    REQUIRE(check.ok);
    REQUIRE(check.entries == kept.size());
  }
}

TEST_CASE("Undo records keep strings and lists whole, past the depth limit's drops",
          "[kernel][rollback][bounded]") {
  KernelOptions options;
  options.undo_depth = 4;
  SafetyKernel k(model_from(varied_spec()), options);
  std::vector<Receipt> receipts;
  std::vector<State> states{k.state()};
  for (int i = 0; i < 12; ++i) {
    const Outcome o = k.execute(i % 2 == 0 ? "say" : "add", {});
    REQUIRE(o.receipt.has_value());
    receipts.push_back(*o.receipt);
    states.push_back(k.state());
  }
  for (std::size_t i = receipts.size(); i > receipts.size() - 4; --i) {
    k.rollback(receipts[i - 1]);
    REQUIRE(k.state() == states[i - 1]);
  }
  REQUIRE_THROWS_AS(k.rollback(receipts[receipts.size() - 5]), clampai::InvalidArgument);
  // Committed again after the rollbacks: their records take the room the rolled back ones
  // had.
  for (int i = 0; i < 3; ++i) {
    const State before = k.state();
    const Outcome o = k.execute("add", {{"k", Value::integer(3)}});
    REQUIRE(o.receipt.has_value());
    k.rollback(*o.receipt);
    REQUIRE(k.state() == before);
  }
  REQUIRE(k.verify_trace().ok);
  REQUIRE_FALSE(replay_trace(k.model_ptr(), k.trace()).has_value());
}

TEST_CASE("Kept entries render every parameter and value as the canonical serialiser does (seeded)",
          "[kernel][trace][bounded][property]") {
  // Random integers across the whole int64 range (past 2^53 JSON keeps them as strings),
  // decimals of every scale a parameter allows, negative values, lists that grow and shrink:
  // each kept line hashes to what its entry, parsed back and serialised by the general
  // serialiser, hashes to, and to the writer's line for the same step.
  const char* spec = R"J({
  "variables": {
    "i": {"type": "int", "initial": 0},
    "d": {"type": "decimal", "scale": 4, "initial": 0},
    "log": {"type": "list", "element": "int", "initial": []},
    "s": {"type": "string", "initial": ""}
  },
  "actions": [
    {"id": "put", "cost": 1,
     "parameters": {"n": {"type": "int", "min": -9223372036854775807, "max": 9223372036854775807},
                    "x": {"type": "decimal", "scale": 4, "min": -900000000, "max": 900000000}},
     "effects": [{"variable": "i", "mode": "set", "value": "n"},
                 {"variable": "d", "mode": "set", "value": "x"},
                 {"variable": "log", "mode": "append", "value": 7}]},
    {"id": "pop", "cost": 1, "effects": [{"variable": "log", "mode": "remove", "value": 7},
                                         {"variable": "s", "mode": "set", "value": "'\u00e9\\\\\"\t'"}]}
  ],
  "budget": {"total": 1000000, "min_action_cost": 1}
})J";
  const auto model = model_from(spec);
  std::mt19937_64 rng(20261127);
  std::vector<ParamMap> steps;
  for (int i = 0; i < 700; ++i) {
    if (rng() % 4 == 0) {
      steps.emplace_back();  // `pop`
      continue;
    }
    const int shift = static_cast<int>(rng() % 63);
    const auto n = static_cast<std::int64_t>(rng() >> (shift + 1)) * (rng() % 2 == 0 ? 1 : -1);
    const auto scale = static_cast<std::uint8_t>(rng() % 5);
    const auto x = static_cast<std::int64_t>(rng() % 9000000) * (rng() % 2 == 0 ? 1 : -1);
    steps.push_back({{"n", Value::integer(n)}, {"x", Value::number(Decimal{x, scale})}});
  }
  auto run = [&](SafetyKernel& k) {
    for (const ParamMap& p : steps) REQUIRE(k.execute(p.empty() ? "pop" : "put", p).receipt);
  };
  const std::string path = clampai::test::temp_file("random_kept.jsonl");
  {
    KernelOptions options = clampai::test::fixed_clock();
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
    SafetyKernel k(model, options);
    run(k);
    k.seal();
  }
  // Every line exactly the canonical form of its entry (the file reader requires it).
  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  const std::vector<TraceEntry> file = read_trace_file(path);
  std::remove(path.c_str());
  SafetyKernel k(model, clampai::test::fixed_clock());
  run(k);
  k.seal();
  const std::vector<TraceEntry> kept = k.trace();
  REQUIRE(kept.size() == file.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    INFO("entry " << i);
    REQUIRE(kept[i].compute_hash() == kept[i].hash);
    REQUIRE(kept[i].hash == file[i].hash);
  }
  REQUIRE(k.verify_trace().ok);
  // And they say what happened: each entry has the parameters proposed, and replays to its
  // recorded changes and cost, and to the kernel's state.
  constexpr std::int64_t kExact = std::int64_t{1} << 53;  // JSON keeps these as numbers
  for (std::size_t t = 0; t < steps.size(); ++t) {
    INFO("step " << t);
    if (steps[t].empty()) continue;
    const std::int64_t n = steps[t][0].second.as_number().units;
    const Value& recorded = kept[t + 1].params.at(0).second;  // `n` sorts before `x`
    REQUIRE(kept[t + 1].params.at(0).first == "n");
    if (n > -kExact && n < kExact) {
      REQUIRE(recorded == Value::integer(n));
    } else {
      REQUIRE(recorded == Value::string(std::to_string(n)));
    }
  }
  State replayed = k.state();
  REQUIRE_FALSE(replay_trace(model, kept, &replayed).has_value());
  REQUIRE(replayed == k.state());
}

TEST_CASE("The arena keeps every record intact through appends and drops at both ends (seeded)",
          "[kernel][bounded][property]") {
  // What the kernel's trace and undo records live in, with chunks small enough that records
  // fill them, cross into new ones and outgrow them: every record kept reads back as written
  // (under ASan, a chunk freed under a record would be a use after free).
  detail::Arena arena(256);
  std::deque<std::pair<const char*, std::string>> kept;  // what the arena must hold
  std::mt19937_64 rng(20261127);
  for (int op = 0; op < 20000; ++op) {
    const std::uint64_t r = rng() % 10;
    if (r < 6 || kept.empty()) {
      const std::size_t n = 1 + rng() % (r == 0 ? 600 : 40);
      char* at = arena.reserve(n + 16);  // a bound, as the kernel reserves
      std::string bytes(n, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      std::memcpy(at, bytes.data(), n);
      arena.commit(at, n);
      kept.emplace_back(at, std::move(bytes));
    } else if (r < 8) {
      arena.pop_back(kept.back().first);
      kept.pop_back();
    } else {
      kept.pop_front();
      if (!kept.empty()) arena.drop_before(kept.front().first);
    }
    if (op % 50 == 0 || kept.size() < 3) {
      for (const auto& [at, bytes] : kept)
        REQUIRE(std::memcmp(at, bytes.data(), bytes.size()) == 0);
    }
  }
}

TEST_CASE("A long kept trace is verified and read a batch of lines at a time",
          "[kernel][trace][bounded]") {
  // Past the first batch of 65,536 rendered lines, the second batch's first line an executed
  // entry (rendered from its record, its `prev` from the line before) or a rolled back one
  // (kept as text): the chain verifies across the batches, and every entry reads back.
  for (const bool text_first : {false, true}) {
    INFO((text_first ? "a rollback" : "an execution") << " at entry 65,536");
    SafetyKernel k(model_from(kSpec), clampai::test::fixed_clock());
    std::optional<Receipt> last;
    while (k.trace_length() < (text_first ? 65536U : 65537U)) last = k.execute("step_s").receipt;
    REQUIRE(last.has_value());
    if (text_first) k.rollback(*last);  // entry 65,536
    for (int i = 0; i < 100; ++i) REQUIRE(k.execute("step_s").receipt.has_value());
    const std::uint64_t n = k.trace_length();
    const TraceCheck check = k.verify_trace();
    INFO(check.message);
    REQUIRE(check.ok);
    REQUIRE(check.entries == n);
    REQUIRE(check.message == std::to_string(n) + " entries, chain intact, not sealed");
    if (text_first) {  // read back once (parsing every entry is most of this test's time)
      const std::vector<TraceEntry> entries = k.trace();
      REQUIRE(entries.size() == n);
      REQUIRE(entries[65536].kind == EntryKind::rolled_back);
      for (std::size_t i = 65530; i < 65545; ++i) {
        INFO("entry " << i);
        REQUIRE(entries[i].sequence == i);
        REQUIRE(entries[i].compute_hash() == entries[i].hash);
        REQUIRE(entries[i].prev == entries[i - 1].hash);
      }
      REQUIRE(verify_chain(entries, /*allow_unsealed=*/true).ok);
    }
    k.seal();
    const TraceCheck sealed = k.verify_trace();
    REQUIRE(sealed.ok);
    REQUIRE(sealed.sealed);
  }
}
