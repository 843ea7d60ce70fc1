// Signed traces on a shared ledger (issue 40): `SharedKernel::checkpoint` commits a signed
// `checkpoint` entry by compare-and-set, due every N entries of the shared trace whichever
// kernel committed them, and one at a process's shutdown; every checkpoint verifies with the
// group's public key, and a chain rewritten after the fact does not.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "../kernel/support.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/sign.hpp"
#include "clampai/kernel/spec_loader.hpp"

using namespace clampai::kernel;

namespace {

const char* kSpec = R"J({"name": "signed",
  "variables": {"n": {"type": "int", "initial": 0, "min": 0, "max": 100000}},
  "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
              {"id": "dec", "cost": 1, "effects": [{"variable": "n", "mode": "decrement", "value": 1}]}],
  "budget": {"total": 100000, "min_action_cost": 1}})J";

TraceReadOptions unsealed() {
  TraceReadOptions read;
  read.allow_unsealed = true;  // a shared ledger is live: never sealed
  return read;
}

std::int64_t fixed_clock() { return 1700000000000000; }

std::function<std::string(std::string_view)> signer_of(const std::shared_ptr<SigningKey>& key) {
  return [key](std::string_view bytes) { return key->sign_hex(bytes); };
}

VerifyingKey public_of(const SigningKey& key) {
  return VerifyingKey::from_pem(key.public_pem(), "public key");
}

// What is guaranteed of the checkpoints of a shared trace with `every`: each periodic one
// follows at least `every` entries after the last checkpoint (or the genesis); none follows a
// checkpoint directly. Returns how many there are.
std::size_t check_spacing(const std::vector<TraceEntry>& entries, std::uint64_t every) {
  std::size_t checkpoints = 0;
  std::uint64_t mark = 0;
  for (const TraceEntry& e : entries) {
    if (e.kind != EntryKind::checkpoint) continue;
    INFO("checkpoint at " << e.sequence << ", the last one at " << mark);
    REQUIRE(e.sequence - mark - 1 >= every);
    mark = e.sequence;
    ++checkpoints;
  }
  return checkpoints;
}

}  // namespace

TEST_CASE("SharedKernel: its checkpoints are those of a SafetyKernel with Checkpoints, signed",
          "[ledger][sign]") {
  const auto model = load_spec(kSpec);
  const auto key = std::make_shared<SigningKey>(SigningKey::generate());
  KernelOptions ko;
  ko.clock = fixed_clock;
  ko.signer = signer_of(key);
  SafetyKernel plain(model, ko);
  Checkpoints points(3, plain.trace_length());
  SharedOptions so;
  so.clock = fixed_clock;
  so.signer = signer_of(key);
  so.checkpoint_every = 3;
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel shared(model, ledger, so);
  for (int i = 0; i < 20; ++i) {
    const char* id = i % 3 == 2 ? "dec" : "inc";
    REQUIRE(plain.execute(id).receipt);
    REQUIRE(shared.execute(id).receipt);
    const bool appended = points.after(plain);
    REQUIRE(shared.checkpoint().has_value() == appended);
  }
  const std::vector<TraceEntry> expected = plain.trace();
  const std::vector<std::string> lines = ledger->read(0);
  REQUIRE(lines.size() == expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) REQUIRE(lines[i] == expected[i].to_json_line());
  REQUIRE(check_spacing(parse_trace_lines(lines, "memory"), 3) == 6);
  // At shutdown: one more, covering the last entries; then none, the trace ending in one.
  REQUIRE(shared.execute("inc").receipt);
  const std::optional<TraceEntry> last = shared.checkpoint(/*final=*/true);
  REQUIRE(last);
  REQUIRE(last->sequence == shared.length() - 1);
  REQUIRE_FALSE(shared.checkpoint(true));
  REQUIRE_FALSE(shared.checkpoint());
  const auto reader = read_ledger(*ledger, unsealed());
  const SignatureCheck c = check_signatures(*reader, public_of(*key));
  INFO(c.message);
  REQUIRE(c.ok);
  REQUIRE(c.signed_entries == 7);
  REQUIRE(c.uncovered == 0);
  // Another kernel opens the ledger: it replays the signed checkpoints byte for byte.
  SharedKernel other(model, ledger->share(), so);
  REQUIRE(other.length() == shared.length());
  REQUIRE(other.head() == shared.head());
}

TEST_CASE("SharedKernel: a checkpoint another kernel committed first is not committed again",
          "[ledger][sign]") {
  const auto model = load_spec(kSpec);
  const auto key = std::make_shared<SigningKey>(SigningKey::generate());
  auto ledger = std::make_shared<MemoryLedger>();
  SharedKernel* rival = nullptr;
  std::function<void()> interleave;  // run once, as `a` is about to commit
  SharedOptions so;
  so.signer = signer_of(key);
  so.checkpoint_every = 2;
  SharedOptions with_hook = so;
  with_hook.hook = [&](SharedPhase phase) {
    if (phase != SharedPhase::committing || !interleave) return;
    auto once = std::move(interleave);
    interleave = nullptr;
    once();
  };
  SharedKernel a(model, ledger, with_hook);
  SharedKernel b(model, ledger->share(), so);
  rival = &b;
  REQUIRE(a.execute("inc").receipt);
  REQUIRE(a.execute("inc").receipt);
  REQUIRE_FALSE(b.checkpoint());  // b has not seen them yet: due only on the head it knows

  SECTION("the rival's checkpoint: after the lost compare-and-set none is due any longer") {
    interleave = [&] {
      REQUIRE(rival->refresh() == 2);  // b sees a's steps, and the checkpoint due: b is first
      REQUIRE(rival->checkpoint());
    };
    REQUIRE_FALSE(a.checkpoint());
    REQUIRE(a.stats().conflicts == 1);
    const std::vector<TraceEntry> entries = parse_trace_lines(ledger->read(0), "memory");
    REQUIRE(entries.size() == 4);
    REQUIRE(check_spacing(entries, 2) == 1);
    REQUIRE(a.length() == 4);
  }
  SECTION("the rival's step: still due, signed afresh on the new head") {
    interleave = [&] { REQUIRE(rival->execute("inc").receipt); };
    const std::optional<TraceEntry> point = a.checkpoint();
    REQUIRE(point);
    REQUIRE(a.stats().conflicts == 1);
    REQUIRE(point->sequence == 4);
    REQUIRE(point->prev == parse_trace_lines(ledger->read(3), "memory").front().hash);
    REQUIRE(public_of(*key).verify_hex(point->signed_bytes(), point->signature));
  }
  SECTION("the rival's shutdown checkpoint: none due at a's shutdown either") {
    interleave = [&] { REQUIRE(rival->checkpoint(true)); };
    REQUIRE_FALSE(a.checkpoint(true));
  }
  b.refresh();
  const auto reader = read_ledger(*ledger, unsealed());
  const SignatureCheck c = check_signatures(*reader, public_of(*key));
  INFO(c.message);
  REQUIRE(c.ok);
}

TEST_CASE("SharedKernel: kernels racing on a file ledger commit one checkpoint per due point",
          "[ledger][sign]") {
  const auto model = load_spec(kSpec);
  const auto key = std::make_shared<SigningKey>(SigningKey::generate());
  const std::string path = clampai::test::temp_file("signed_ledger.jsonl");
  std::filesystem::remove(path);
  constexpr std::uint64_t kEvery = 3;
  constexpr int kKernels = 3;
  SharedOptions so;
  so.signer = signer_of(key);
  so.checkpoint_every = kEvery;
  std::vector<std::unique_ptr<SharedKernel>> kernels;
  for (int t = 0; t < kKernels; ++t)
    kernels.push_back(
        std::make_unique<SharedKernel>(model, std::make_shared<FileLedger>(path), so));
  std::vector<std::thread> threads;
  for (int t = 0; t < kKernels; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 60; ++i) {
        (void)kernels[t]->execute(rng() % 3 == 0 ? "dec" : "inc");
        (void)kernels[t]->checkpoint();
      }
      (void)kernels[t]->checkpoint(/*final=*/true);
    });
  }
  for (auto& th : threads) th.join();
  std::uint64_t conflicts = 0;
  for (auto& k : kernels) conflicts += k->stats().conflicts;
  INFO(conflicts << " conflicts");
  const TraceReadOptions read = unsealed();
  const std::vector<TraceEntry> entries = read_trace_file(path);
  REQUIRE(verify_trace_file(path, true).ok);
  // The shutdown checkpoints may come sooner than every kEvery entries; the periodic ones not.
  // A periodic checkpoint is committed only on a head where it is due: never two for one due
  // point. After the due point each kernel commits at most one more step (then it is in
  // `checkpoint` until one is committed): at most kEvery + kKernels - 1 steps between two.
  std::uint64_t mark = 0;
  std::size_t checkpoints = 0;
  std::size_t early = 0;  // sooner than kEvery: shutdown checkpoints, one per kernel at most
  for (const TraceEntry& e : entries) {
    if (e.kind != EntryKind::checkpoint) continue;
    INFO("checkpoint at " << e.sequence << ", the last one at " << mark);
    REQUIRE(e.sequence > mark + 1);  // never two in a row
    if (e.sequence - mark - 1 < kEvery) ++early;
    mark = e.sequence;
    ++checkpoints;
  }
  REQUIRE(early <= kKernels);
  REQUIRE(checkpoints >= (entries.size() - checkpoints) / (kEvery + kKernels));
  REQUIRE(entries.back().kind == EntryKind::checkpoint);
  TraceReader reader(path, read);
  const SignatureCheck c = check_signatures(reader, public_of(*key));
  INFO(c.message);
  REQUIRE(c.ok);
  REQUIRE(c.signed_entries == checkpoints);
  REQUIRE(c.uncovered == 0);
  std::filesystem::remove(path);
}

TEST_CASE("SharedKernel: a file ledger rewritten after the fact fails with the public key",
          "[ledger][sign]") {
  const auto model = load_spec(kSpec);
  const auto key = std::make_shared<SigningKey>(SigningKey::generate());
  const std::string path = clampai::test::temp_file("signed_rewritten.jsonl");
  std::filesystem::remove(path);
  SharedOptions so;
  so.signer = signer_of(key);
  so.checkpoint_every = 2;
  {
    SharedKernel x(model, std::make_shared<FileLedger>(path), so);
    SharedKernel y(model, open_local_ledger("file:" + path), so);
    for (int i = 0; i < 9; ++i) {
      SharedKernel& k = i % 2 == 0 ? x : y;
      REQUIRE(k.execute("inc").receipt);
      (void)k.checkpoint();
    }
    REQUIRE(y.checkpoint(true));
  }
  const TraceReadOptions read = unsealed();
  {
    TraceReader reader(path, read);
    const SignatureCheck c = check_signatures(reader, public_of(*key));
    INFO(c.message);
    REQUIRE(c.ok);
  }
  // An executed entry changed (its time), every hash after it recomputed: the chain verifies,
  // the signatures do not, from the first checkpoint after the change.
  std::vector<TraceEntry> entries = read_trace_file(path);
  std::size_t changed = 0;
  while (entries[changed].kind != EntryKind::executed) ++changed;
  entries[changed].time_us += 1;
  for (std::size_t i = changed; i < entries.size(); ++i) {
    if (i > 0) entries[i].prev = entries[i - 1].hash;
    entries[i].hash = entries[i].compute_hash();
  }
  {
    std::ofstream out(path, std::ios::trunc);
    for (const TraceEntry& e : entries) out << e.to_json_line() << "\n";
  }
  REQUIRE(verify_trace_file(path, true).ok);
  std::size_t first_point = changed;
  while (entries[first_point].kind != EntryKind::checkpoint) ++first_point;
  TraceReader reader(path, read);
  const SignatureCheck c = check_signatures(reader, public_of(*key));
  INFO(c.message);
  REQUIRE_FALSE(c.ok);
  REQUIRE(c.first_bad == first_point);
  REQUIRE_THAT(c.message, Catch::Matchers::Contains("does not verify with the public key"));
  std::filesystem::remove(path);
}
