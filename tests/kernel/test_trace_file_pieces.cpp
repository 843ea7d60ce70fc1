// Trace files long enough to be read in several pieces on several threads: whatever is changed
// wherever (a piece's first line, its last, the middle), `verify_trace_file` gives exactly the
// verdict the chain checks give on the parsed entries, reports the first problem in line order,
// never accepts an entry kind it does not know, and calls from several threads at once each get
// their own verdict.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "support.hpp"

using namespace clampai::kernel;
using clampai::test::lines_of;
using clampai::test::write_lines;

namespace {

// A sealed trace of about 1.3 MB (several of the reader's pieces, at most 1 MiB each).
std::vector<std::string> long_trace(const std::string& path) {
  const auto model = load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "add", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "budget": {"total": 100000, "min_action_cost": 1}})J");
  {
    KernelOptions options = clampai::test::fixed_clock();
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::buffered);
    SafetyKernel kernel(model, options);
    for (int i = 0; i < 3500; ++i) (void)kernel.execute("add", {});
    kernel.seal();
  }
  return lines_of(path);
}

// The same entry with `edit` applied, its hash recomputed: a line that is canonical and
// hashes right, so only the chain can tell.
std::string rewritten(const std::string& line, const std::function<void(TraceEntry&)>& edit) {
  const std::string one = clampai::test::temp_file("one.jsonl");
  write_lines(one, {line});
  TraceEntry e = read_trace_file(one).at(0);
  std::remove(one.c_str());
  edit(e);
  e.hash = e.compute_hash();
  return e.to_json_line();
}

// `verify_trace_file` against the chain checks of the entries read back.
void same_verdict(const std::string& path) {
  const TraceCheck file = verify_trace_file(path);
  const TraceCheck chain = verify_chain(read_trace_file(path));
  INFO("file: " << file.message << "\nchain: " << chain.message);
  CHECK(file.ok == chain.ok);
  CHECK(file.entries == chain.entries);
  CHECK(file.first_bad == chain.first_bad);
  CHECK(file.sealed == chain.sealed);
  CHECK(file.message == chain.message);
}

}  // namespace

TEST_CASE("Trace file in pieces: intact, and every kind of change at many positions",
          "[kernel][trace]") {
  const std::string path = clampai::test::temp_file("pieces.jsonl");
  const std::vector<std::string> lines = long_trace(path);
  REQUIRE(lines.size() == 3502);
  const TraceCheck intact = verify_trace_file(path);
  REQUIRE(intact.ok);
  CHECK(intact.sealed);
  CHECK(intact.entries == 3502);
  CHECK(intact.message == "3502 entries, chain intact, sealed");

  // Positions all over the file (seeded): every kind of change.
  std::mt19937_64 rng(16);
  std::vector<std::size_t> at{1, 2, 3500, 3501};
  for (int k = 0; k < 12; ++k) at.push_back(1 + rng() % 3500);
  for (const std::size_t k : at) {
    INFO("line index " << k);
    std::vector<std::string> changed = lines;
    // A changed byte: the hash no longer matches.
    const std::size_t digit = changed[k].find("\"time\":") + 8;
    changed[k][digit] = changed[k][digit] == '1' ? '2' : '1';
    write_lines(path, changed);
    const TraceCheck flipped = verify_trace_file(path);
    CHECK(flipped.message ==
          "entry " + std::to_string(k) + ": hash mismatch: the entry was changed");
    same_verdict(path);
    // A link to the wrong entry, its own hash right.
    changed = lines;
    changed[k] = rewritten(lines[k], [&](TraceEntry& e) { e.prev = std::string(64, 'a'); });
    write_lines(path, changed);
    CHECK(verify_trace_file(path).message ==
          "entry " + std::to_string(k) + ": does not link to the previous entry's hash");
    same_verdict(path);
    // A deleted line.
    changed = lines;
    changed.erase(changed.begin() + static_cast<std::ptrdiff_t>(k));
    write_lines(path, changed);
    same_verdict(path);
  }
  // A wrong link at the lines around every k/m of the file's bytes for m up to 16: where the
  // reader cuts its pieces on a machine of up to two cores (the first line of a piece is
  // checked against the last line of the piece before).
  std::vector<std::size_t> starts;  // of each line, in bytes
  std::size_t bytes = 0;
  for (const auto& l : lines) {
    starts.push_back(bytes);
    bytes += l.size() + 1;
  }
  std::vector<std::size_t> cuts;
  for (std::size_t m = 2; m <= 16; ++m) {
    for (std::size_t k = 1; k < m; ++k) {
      const auto next = std::lower_bound(starts.begin(), starts.end(), k * (bytes / m));
      const auto line = static_cast<std::size_t>(next - starts.begin());
      for (const std::size_t near : {line - 1, line, line + 1})
        if (near > 0 && near < lines.size()) cuts.push_back(near);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (const std::size_t k : cuts) {
    std::vector<std::string> changed = lines;
    changed[k] = rewritten(lines[k], [&](TraceEntry& e) { e.prev = std::string(64, 'a'); });
    write_lines(path, changed);
    CHECK(verify_trace_file(path).message ==
          "entry " + std::to_string(k) + ": does not link to the previous entry's hash");
  }
  // A seal in the middle; a second genesis.
  std::vector<std::string> changed = lines;
  changed[1700] = rewritten(lines[1700], [](TraceEntry& e) { e.kind = EntryKind::sealed; });
  write_lines(path, changed);
  CHECK(verify_trace_file(path).message == "entry 1701: entries follow the seal");
  same_verdict(path);
  changed = lines;
  changed[2900] = rewritten(lines[2900], [](TraceEntry& e) { e.kind = EntryKind::genesis; });
  write_lines(path, changed);
  CHECK(verify_trace_file(path).message == "entry 2900: a genesis entry after the start");
  same_verdict(path);
  std::remove(path.c_str());
}

TEST_CASE(
    "Trace file in pieces: the first line that is no entry is reported, before any "
    "chain problem",
    "[kernel][trace]") {
  const std::string path = clampai::test::temp_file("pieces-bad.jsonl");
  const std::vector<std::string> lines = long_trace(path);
  std::vector<std::string> changed = lines;
  changed[40][changed[40].find("\"time\":") + 8] ^= 1;  // a hash mismatch, earlier
  changed[3000].insert(1, " ");                         // not canonical, later
  changed[3300] = "{\"not\": \"an entry\"}";
  write_lines(path, changed);
  TraceCheck check = verify_trace_file(path);
  CHECK_FALSE(check.ok);
  CHECK(check.entries == 3502);
  CHECK(check.first_bad == 3000);
  CHECK(check.message == "entry 3000 (line 3001): not in canonical form: the line was changed");

  // An entry kind the reader does not know is refused by the general path, never accepted
  // unchecked, wherever it is.
  changed = lines;
  const std::string kind = "\"kind\":\"executed\"";
  changed[2222].replace(changed[2222].find(kind), kind.size(), "\"kind\":\"unheard_of\"");
  write_lines(path, changed);
  check = verify_trace_file(path);
  CHECK_FALSE(check.ok);
  CHECK(check.first_bad == 2222);
  CHECK_THAT(check.message, Catch::Contains("unknown entry kind `unheard_of`"));
  std::remove(path.c_str());
}

TEST_CASE("Trace file in pieces: a torn last line after many entries", "[kernel][trace]") {
  const std::string path = clampai::test::temp_file("pieces-torn.jsonl");
  std::vector<std::string> lines = long_trace(path);
  lines.pop_back();  // unsealed, then a write cut short
  write_lines(path, lines, "{\"action\":\"add\",\"chan");
  const TraceCheck check = verify_trace_file(path);
  CHECK_FALSE(check.ok);
  CHECK(check.truncated_tail);
  CHECK(check.entries == 3501);
  CHECK(check.first_bad == 3501);
  std::size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size() + 1;
  CHECK(check.verified_bytes == bytes);
  CHECK_THAT(check.message, Catch::Contains("truncated tail after 3501 verified entries"));
  // The same with a bad entry before the tail: the chain's problem is reported.
  lines[1234][lines[1234].find("\"time\":") + 8] ^= 1;
  write_lines(path, lines, "{\"action\"");
  const TraceCheck bad = verify_trace_file(path);
  CHECK_FALSE(bad.truncated_tail);
  CHECK(bad.message == "entry 1234: hash mismatch: the entry was changed");
  std::remove(path.c_str());
}

TEST_CASE("Trace file: empty files and files of newlines", "[kernel][trace]") {
  const std::string path = clampai::test::temp_file("empty.jsonl");
  write_lines(path, {});
  TraceCheck check = verify_trace_file(path);
  CHECK_FALSE(check.ok);
  CHECK(check.message == "entry 0: the trace is empty (a trace starts with a genesis entry)");
  write_lines(path, {"", ""});
  check = verify_trace_file(path);
  CHECK_FALSE(check.ok);
  CHECK(check.first_bad == 0);
  CHECK(check.entries == 2);
  std::remove(path.c_str());
}

TEST_CASE("Trace files in pieces verified from several threads at once", "[kernel][trace]") {
  // The pieces of each file are shared out between its caller and the helper threads, which
  // help whichever call came last: every call gets its own file's verdict.
  const std::string good = clampai::test::temp_file("threads-good.jsonl");
  const std::string bad = clampai::test::temp_file("threads-bad.jsonl");
  std::vector<std::string> lines = long_trace(good);
  lines[2345][lines[2345].find("\"time\":") + 8] ^= 1;
  write_lines(bad, lines);
  const TraceCheck want_good = verify_trace_file(good);
  const TraceCheck want_bad = verify_trace_file(bad);
  REQUIRE(want_good.ok);
  REQUIRE(want_bad.message == "entry 2345: hash mismatch: the entry was changed");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        const bool is_good = (t + i) % 2 == 0;
        const TraceCheck got = verify_trace_file(is_good ? good : bad);
        const TraceCheck& want = is_good ? want_good : want_bad;
        if (got.ok != want.ok || got.message != want.message || got.first_bad != want.first_bad)
          ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("Trace file cut short and rewritten while it is verified: a verdict or an error",
          "[kernel][trace]") {
  // Another process truncates the file and writes it again while it is read (a run restarted
  // with --force over the trace being verified). A reader that mapped the file was stopped by
  // SIGBUS when a page it read was cut off; each verification must end with a verdict (on the
  // bytes it read) or a TraceError that says the file changed. However the two interleave,
  // nothing else may happen; the file, whole again, then verifies.
  const std::string path = clampai::test::temp_file("rewritten.jsonl");
  const std::vector<std::string> lines = long_trace(path);
  std::atomic<bool> stop{false};
  std::thread rewriter([&] {
    while (!stop.load()) {
      std::filesystem::resize_file(path, 4096);
      // Short for a while (how often a reader meets it is luck: the assertions hold anyway).
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      write_lines(path, lines);
    }
  });
  int verdicts = 0;
  int errors = 0;
  std::string unexpected;
  for (int i = 0; i < 40; ++i) {
    try {
      (void)verify_trace_file(path);
      ++verdicts;
    } catch (const clampai::TraceError& e) {
      const std::string what = e.what();
      if (what.find("changed while it was read") == std::string::npos) unexpected = what;
      ++errors;
    }
  }
  stop = true;
  rewriter.join();
  CHECK(unexpected.empty());
  CHECK(verdicts + errors == 40);
  CHECK(verify_trace_file(path).ok);
  std::remove(path.c_str());
}

TEST_CASE("Trace file still being written: the verdict says so, and never to cut the file",
          "[kernel][trace]") {
  // A run writing the trace holds its write lock (TraceWriter's flock): its last line may be
  // half written and its seal is still to come. Cutting the file then would destroy what the
  // run writes next, so the torn tail's advice (`truncate -s`) is replaced.
  const std::string path = clampai::test::temp_file("being-written.jsonl");
  std::vector<std::string> lines = long_trace(path);
  lines.pop_back();  // no seal yet
  write_lines(path, lines, "{\"action\":\"add\",\"chan");
  const TraceCheck idle = verify_trace_file(path);
  REQUIRE(idle.truncated_tail);
  CHECK_THAT(idle.message, Catch::Contains("truncate -s"));
  CHECK_THAT(idle.message, !Catch::Contains("still being written"));
  {
    // A run in another process: its writer holds the lock (this process's own would not count).
    const clampai::test::InChild run(
        [&] { (void)new TraceWriter(path, FlushPolicy::buffered, TraceOpen::append); });
    REQUIRE(run.ok());
    const TraceCheck live = verify_trace_file(path);
    CHECK_FALSE(live.ok);
    CHECK(live.truncated_tail);
    CHECK(live.entries == idle.entries);
    CHECK(live.verified_bytes == idle.verified_bytes);
    CHECK_THAT(live.message,
               Catch::Contains("truncated tail after 3501 verified entries") &&
                   Catch::Contains("it is still being written (a run in progress)") &&
                   Catch::Contains("(21 bytes)"));
    CHECK_THAT(live.message, !Catch::Contains("truncate -s"));
    // Whole lines, no seal yet: the missing seal is reported, and why.
    write_lines(path, lines);
    const TraceCheck unsealed = verify_trace_file(path, /*allow_unsealed=*/false);
    CHECK_FALSE(unsealed.ok);
    CHECK_THAT(unsealed.message, Catch::Contains("still being written"));
    CHECK(verify_trace_file(path, /*allow_unsealed=*/true).ok);
  }
  // The writer gone, the same file's verdict is the plain one again; and a writer of this
  // process's own (as `serve` holds while it checks the trace it continues) is not another's.
  const TraceCheck after = verify_trace_file(path, /*allow_unsealed=*/false);
  CHECK_FALSE(after.ok);
  CHECK_THAT(after.message, !Catch::Contains("still being written"));
  {
    TraceWriter mine(path, FlushPolicy::buffered, TraceOpen::append);
    CHECK(verify_trace_file(path, /*allow_unsealed=*/false).message == after.message);
  }
  std::remove(path.c_str());
}
