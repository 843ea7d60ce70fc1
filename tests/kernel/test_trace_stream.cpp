// Traces at any size (issue 35, item 6): every trace reader streams through `TraceReader`, in
// memory bounded by its block, not by the trace; the input limit is for specs, manifests and
// requests, never for traces; a problem deep in a long trace is still pinpointed; a replay
// keeps only its state and its undo records.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "support.hpp"

using namespace clampai::kernel;
using Catch::Matchers::Contains;
using clampai::test::lines_of;
using clampai::test::write_lines;

namespace {

const char* const kCounter = R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "add", "cost": 1, "reversible": true,
                 "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 1000000, "min_action_cost": 1}})J";

// Writes a trace of `steps` executions (with a rollback after every 97th), sealed unless
// `seal` is false, through a kernel that keeps only a window of it: the file is the whole.
void write_trace(const std::string& path, int steps, bool seal = true) {
  KernelOptions options = clampai::test::fixed_clock();
  options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
  options.trace_window = 64;
  options.undo_depth = 64;
  SafetyKernel kernel(load_spec(kCounter), options);
  for (int i = 0; i < steps; ++i) {
    const Outcome o = kernel.execute("add", {});
    if (i % 97 == 96 && o.receipt) (void)kernel.rollback(*o.receipt);
  }
  if (seal) {
    kernel.seal();
  } else {
    options.writer->close();
  }
}

// Restores the process's input limit when the test ends.
struct InputLimit {
  explicit InputLimit(std::size_t bytes) : before(max_input_bytes()) { set_max_input_bytes(bytes); }
  ~InputLimit() { set_max_input_bytes(before); }
  InputLimit(const InputLimit&) = delete;
  InputLimit& operator=(const InputLimit&) = delete;
  std::size_t before;
};

TraceReadOptions small_blocks(std::size_t bytes, bool allow_unsealed = false) {
  TraceReadOptions options;
  options.block_bytes = bytes;
  options.allow_unsealed = allow_unsealed;
  return options;
}

}  // namespace

TEST_CASE("Trace stream: a trace larger than the input limit is read and verified without a flag",
          "[kernel][trace][stream]") {
  const std::string path = clampai::test::temp_file("over_limit.jsonl");
  write_trace(path, 3000);
  const auto size = std::filesystem::file_size(path);
  const InputLimit limit(64 << 10);
  REQUIRE(size > 10 * max_input_bytes());

  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  REQUIRE(check.sealed);
  const std::size_t lines = lines_of(path).size();
  REQUIRE(check.entries == lines);
  REQUIRE(read_trace_file(path).size() == lines);
  // The input limit still holds for what is not a trace.
  REQUIRE_THROWS_WITH((void)read_file(path), Contains("is larger than the input limit"));
  std::remove(path.c_str());
}

TEST_CASE("Trace stream: memory is bounded by the block, not by the trace",
          "[kernel][trace][stream]") {
  const std::string path = clampai::test::temp_file("blocks.jsonl");
  write_trace(path, 6000);
  const std::vector<std::string> lines = lines_of(path);
  std::size_t longest = 0;
  for (const auto& l : lines) longest = std::max(longest, l.size() + 1);
  const auto size = std::filesystem::file_size(path);
  constexpr std::size_t kBlock = 16 << 10;
  REQUIRE(size > 100 * kBlock);

  SECTION("verifying") {
    TraceReader reader(path, small_blocks(kBlock));
    const TraceCheck check = reader.finish();
    INFO(check.message);
    REQUIRE(check.ok);
    REQUIRE(check.entries == lines.size());
    REQUIRE(reader.peak_buffer_bytes() <= kBlock + longest);
    REQUIRE(reader.peak_buffer_bytes() > 0);
  }
  SECTION("handing out every entry, each the line it was read from") {
    TraceReader reader(path, small_blocks(kBlock));
    TraceEntry e;
    std::size_t i = 0;
    while (reader.next(e)) {
      REQUIRE(i < lines.size());
      REQUIRE(e.to_json_line() == lines[i]);
      ++i;
    }
    REQUIRE(i == lines.size());
    REQUIRE(reader.finish().ok);
    REQUIRE(reader.peak_buffer_bytes() <= kBlock + longest);
  }
  SECTION("a line longer than the block is read whole") {
    TraceReader reader(path, small_blocks(64));
    const TraceCheck check = reader.finish();
    REQUIRE(check.ok);
    REQUIRE(reader.peak_buffer_bytes() <= longest);
  }
  SECTION("where the last line starts") {
    TraceReader reader(path, small_blocks(kBlock));
    REQUIRE(reader.last_line_start() == size - lines.back().size() - 1);
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace stream: a broken entry deep in a long trace is pinpointed, whatever the blocks",
          "[kernel][trace][stream]") {
  const std::string path = clampai::test::temp_file("deep.jsonl");
  write_trace(path, 5000);
  const std::vector<std::string> lines = lines_of(path);
  const std::size_t k = lines.size() - 37;  // deep: many blocks before it
  const std::size_t n = lines.size();
  for (const std::size_t block : {std::size_t{4} << 10, std::size_t{0}}) {
    INFO("block " << block);
    std::vector<std::string> changed = lines;
    const std::size_t digit = changed[k].find("\"time\":") + 8;
    changed[k][digit] = changed[k][digit] == '1' ? '2' : '1';
    write_lines(path, changed);
    TraceReader reader(path, small_blocks(block));
    TraceEntry e;
    std::size_t handed = 0;
    while (reader.next(e)) ++handed;
    REQUIRE(handed == k);  // nothing from the bad entry on
    TraceCheck check = reader.finish();
    REQUIRE_FALSE(check.ok);
    REQUIRE(check.first_bad == k);
    REQUIRE(check.entries == n);
    REQUIRE(check.message ==
            "entry " + std::to_string(k) + ": hash mismatch: the entry was changed");

    // A line that is no entry is named with its line, and comes first wherever it is.
    changed[n - 3] = "{\"not\": \"an entry\"}";
    write_lines(path, changed);
    check = TraceReader(path, small_blocks(block)).finish();
    REQUIRE(check.first_bad == n - 3);
    REQUIRE_THAT(
        check.message,
        Contains("entry " + std::to_string(n - 3) + " (line " + std::to_string(n - 2) + "): "));
    REQUIRE(check.entries == n);
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace stream: small blocks give the verdict of the chain checks on the entries",
          "[kernel][trace][stream]") {
  // Changes at random places (seeded), read in blocks of a few lines: the chain carried from
  // block to block gives what verify_chain gives on the whole.
  const std::string path = clampai::test::temp_file("random_blocks.jsonl");
  write_trace(path, 700);
  const std::vector<std::string> lines = lines_of(path);
  std::mt19937_64 rng(35);
  for (int round = 0; round < 24; ++round) {
    std::vector<std::string> changed = lines;
    const std::size_t at = 1 + rng() % (lines.size() - 1);
    switch (round % 4) {
      case 0:
        changed.erase(changed.begin() + static_cast<std::ptrdiff_t>(at));
        break;
      case 1:
        std::swap(changed[at], changed[at - 1]);
        break;
      case 2:
        changed.insert(changed.begin() + static_cast<std::ptrdiff_t>(at), changed[at]);
        break;
      default:
        changed.resize(at);  // no seal
        break;
    }
    write_lines(path, changed);
    const std::size_t block = 256 + rng() % 4096;
    INFO("round " << round << ", line " << at << ", block " << block);
    const TraceCheck got = TraceReader(path, small_blocks(block)).finish();
    const TraceCheck want = verify_chain(read_trace_file(path));
    INFO(got.message << "\n" << want.message);
    REQUIRE(got.ok == want.ok);
    REQUIRE(got.first_bad == want.first_bad);
    REQUIRE(got.entries == want.entries);
    REQUIRE(got.message == want.message);
  }
  std::remove(path.c_str());
}

TEST_CASE("Trace stream: a replay keeps its state and its undo depth, not the trace",
          "[kernel][trace][stream]") {
  const auto model = load_spec(kCounter);
  const std::string path = clampai::test::temp_file("replay.jsonl");
  write_trace(path, 2000);
  {
    TraceReader reader(path, small_blocks(8 << 10));
    TraceReplay replay(model, /*undo_depth=*/8);
    TraceEntry e;
    while (reader.next(e)) REQUIRE_FALSE(replay.add(e).has_value());
    REQUIRE(reader.finish().ok);
    REQUIRE(replay.entries() == lines_of(path).size());
    REQUIRE(replay.state().get(*model->schema->find("n")).to_string() ==
            std::to_string(2000 - 2000 / 97));
  }
  // Three executions, then three rollbacks: the third undoes the oldest, which a depth of 2
  // let go.
  {
    KernelOptions options = clampai::test::fixed_clock();
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
    SafetyKernel kernel(model, options);
    std::vector<Receipt> receipts;
    for (int i = 0; i < 3; ++i) receipts.push_back(*kernel.execute("add", {}).receipt);
    for (int i = 2; i >= 0; --i) (void)kernel.rollback(receipts[static_cast<std::size_t>(i)]);
    kernel.seal();
  }
  const std::vector<TraceEntry> entries = read_trace_file(path);
  auto replay_with = [&](std::size_t depth) -> std::optional<std::string> {
    TraceReplay replay(model, depth);
    for (const TraceEntry& e : entries)
      if (auto why = replay.add(e))
        return "entry " + std::to_string(replay.entries() - 1) + ": " + *why;
    return std::nullopt;
  };
  REQUIRE_FALSE(replay_with(0).has_value());
  REQUIRE_FALSE(replay_with(3).has_value());
  const auto shallow = replay_with(2);
  REQUIRE(shallow.has_value());
  REQUIRE_THAT(*shallow, Contains("entry 6: ") && Contains("older than the last 2 committed"));
  REQUIRE_FALSE(replay_trace(model, entries).has_value());  // keeps every undo record
  std::remove(path.c_str());
}

TEST_CASE("Trace stream: replay_stream visits each replayed entry and names the first mismatch",
          "[kernel][trace][stream]") {
  const auto model = load_spec(kCounter);
  const std::string path = clampai::test::temp_file("replay_stream.jsonl");
  write_trace(path, 300);
  {
    TraceReader reader(path, small_blocks(8 << 10));
    TraceReplay replay(model, /*undo_depth=*/8);
    std::uint64_t visited = 0;
    std::string last_n;
    bool mismatched = false;
    const TraceCheck check = replay_stream(
        reader,
        replay,
        [&](const TraceEntry& e, const TraceReplay& r) {
          REQUIRE(e.sequence == visited++);
          REQUIRE(r.entries() == visited);  // the state after the entry
          last_n = r.state().get(*model->schema->find("n")).to_string();
        },
        &mismatched);
    REQUIRE(check.ok);
    REQUIRE_FALSE(mismatched);
    REQUIRE(visited == lines_of(path).size());
    REQUIRE(last_n == std::to_string(300 - 300 / 97));
  }
  // Another spec (its actions cost more): the genesis entry already names another digest.
  {
    const auto other = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
        "actions": [{"id": "add", "cost": 2, "reversible": true,
                     "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
        "budget": {"total": 1000000, "min_action_cost": 1}})J");
    TraceReader reader(path);
    TraceReplay replay(other);
    std::uint64_t visited = 0;
    bool mismatched = false;
    const TraceCheck check = replay_stream(
        reader, replay, [&](const TraceEntry&, const TraceReplay&) { ++visited; }, &mismatched);
    REQUIRE_FALSE(check.ok);
    REQUIRE(mismatched);
    REQUIRE(check.first_bad == std::optional<std::size_t>(0));
    REQUIRE_THAT(check.message, Contains("entry 0: replay: "));
    REQUIRE(visited == 0);
  }
  std::remove(path.c_str());
}

TEST_CASE(
    "Trace stream: a kernel continues a trace larger than the input limit, read as it streams",
    "[kernel][trace][stream]") {
  const auto model = load_spec(kCounter);
  const std::string path = clampai::test::temp_file("resume_stream.jsonl");
  write_trace(path, 3000, /*seal=*/false);
  const InputLimit limit(32 << 10);
  REQUIRE(std::filesystem::file_size(path) > 10 * max_input_bytes());
  const TraceCheck before = verify_trace_file(path, /*allow_unsealed=*/true);
  REQUIRE(before.ok);
  auto writer = std::make_shared<TraceWriter>(path, FlushPolicy::flush, TraceOpen::append);
  writer->continue_from(before.entries);
  auto reader = std::make_shared<TraceReader>(path, small_blocks(8 << 10, true));
  KernelOptions options;
  options.writer = writer;
  options.trace_window = 16;
  options.undo_depth = 16;
  options.resume_from = [reader](TraceEntry& e) { return reader->next(e); };
  SafetyKernel kernel(model, options);
  REQUIRE(kernel.trace_length() == before.entries);
  REQUIRE(kernel.trace().size() <= 16);  // its window, not the trace
  REQUIRE(kernel.state().get(*model->schema->find("n")).to_string() ==
          std::to_string(3000 - 3000 / 97));
  const Outcome o = kernel.execute("add", {});
  REQUIRE(o.decision.approved);
  kernel.seal();
  const TraceCheck after = verify_trace_file(path);
  INFO(after.message);
  REQUIRE(after.ok);
  REQUIRE(after.entries == before.entries + 2);
  std::remove(path.c_str());
}

TEST_CASE("Trace stream: a ledger is read page by page, as a file is",
          "[kernel][trace][stream][ledger]") {
  const auto model = load_spec(kCounter);
  auto ledger = std::make_shared<MemoryLedger>();
  {
    SharedKernel shared(model, ledger->share());
    for (int i = 0; i < 50; ++i) (void)shared.execute("add", {});
  }
  const std::vector<std::string> lines = ledger->read(0);
  REQUIRE(lines.size() == 51);
  TraceReadOptions options;
  options.allow_unsealed = true;
  options.block_bytes = 1024;
  {
    const auto reader = read_ledger(*ledger, options, /*page=*/7);
    TraceEntry e;
    std::size_t i = 0;
    while (reader->next(e)) REQUIRE(e.to_json_line() == lines[i++]);
    REQUIRE(i == lines.size());
    const TraceCheck check = reader->finish();
    INFO(check.message);
    REQUIRE(check.ok);
    REQUIRE(check.entries == 51);
  }
  // verify_trace_lines is the same reader: a line that is no entry names its entry.
  std::vector<std::string> changed = lines;
  changed[40] = "{}";
  const TraceCheck bad = verify_trace_lines(changed, "the ledger memory:", true);
  REQUIRE_FALSE(bad.ok);
  REQUIRE(bad.first_bad == 40);
  REQUIRE_THAT(bad.message, Catch::StartsWith("entry 40: "));
}

TEST_CASE("Trace stream: a file ledger reads its pages from the file, not from memory",
          "[kernel][trace][stream][ledger]") {
  const auto model = load_spec(kCounter);
  const std::string path = clampai::test::temp_file("ledger.jsonl");
  {
    SharedKernel shared(model, std::make_shared<FileLedger>(path));
    for (int i = 0; i < 4200; ++i) (void)shared.execute("add", {});  // past the first mark
  }
  const std::vector<std::string> lines = lines_of(path);
  REQUIRE(lines.size() == 4201);
  FileLedger ledger(path);  // a fresh handle: it finds the lines in the file
  for (const std::uint64_t from : {0UL, 1UL, 4095UL, 4096UL, 4097UL, 4190UL, 4200UL}) {
    const std::vector<std::string> page = ledger.read_page(from, 7);
    INFO("from " << from);
    REQUIRE(page.size() == std::min<std::size_t>(7, 4201 - from));
    for (std::size_t k = 0; k < page.size(); ++k) REQUIRE(page[k] == lines[from + k]);
  }
  REQUIRE(ledger.read_page(4201, 7).empty());
  REQUIRE(ledger.read(0) == lines);
  TraceReadOptions options;
  options.allow_unsealed = true;
  const TraceCheck check = read_ledger(ledger, options, 1000)->finish();
  INFO(check.message);
  REQUIRE(check.ok);
  REQUIRE(check.entries == 4201);
  // A second process continues from the file, and a torn last line is not an entry.
  std::ofstream(path, std::ios::app) << "{\"action\":";
  {
    SharedKernel again(model, std::make_shared<FileLedger>(path));
    REQUIRE(again.execute("add", {}).decision.approved);
  }
  REQUIRE(verify_trace_file(path, /*allow_unsealed=*/true).ok);
  REQUIRE(lines_of(path).size() == 4202);
  std::remove(path.c_str());
}
