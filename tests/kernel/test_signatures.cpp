// Signed traces (issue 40): Ed25519 keys, the signed seal and checkpoints, and
// `check_signatures`, which a chain rewritten without the key fails.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "clampai/kernel/sign.hpp"
#include "support.hpp"

using namespace clampai::kernel;

namespace {

const char* kSpec =
    R"J({"variables": {"n": {"type": "int", "initial": 0}},
  "actions": [{"id": "inc", "cost": 1, "reversible": true,
               "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
  "invariants": [{"name": "small", "check": "n <= 10"}],
  "budget": {"total": 100, "min_action_cost": 1}})J";

// An EC P-256 key pair (another algorithm than Ed25519).
const char* kEcPrivate = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgplzZ6sMsXQACQeqT
++1JCQfZakx56YdwZt3MeMpB9suhRANCAAQWyZVSvJOUH3DwXPAV+ikp8Iq3bzJM
28b4eyEQgVCad7Y7d97zaAL3o1rIVwXhv2AXJ/Y6sHyv2J1rOGWXW2Gq
-----END PRIVATE KEY-----
)";
const char* kEcPublic = R"(-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFsmVUryTlB9w8FzwFfopKfCKt28y
TNvG+HshEIFQmne2O3fe82gC96NayFcF4b9gFyf2OrB8r9idazhll1thqg==
-----END PUBLIC KEY-----
)";

// A run of five steps with a checkpoint every 2 entries, signed by `key`, sealed.
std::vector<TraceEntry> signed_run(const SigningKey* key, std::uint64_t every = 2) {
  KernelOptions options;
  if (key != nullptr)
    options.signer = [key](std::string_view bytes) { return key->sign_hex(bytes); };
  SafetyKernel k(load_spec(kSpec), options);
  Checkpoints checkpoints(every, k.trace_length());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(k.execute("inc").receipt);
    checkpoints.after(k);
  }
  k.seal();
  return k.trace();
}

SignatureCheck check(const std::vector<TraceEntry>& entries, const VerifyingKey& key) {
  const std::string path = clampai::test::temp_file("signatures.jsonl");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (const TraceEntry& e : entries) out << e.to_json_line() << "\n";
  }
  TraceReader reader(path);
  SignatureCheck c = check_signatures(reader, key);
  std::remove(path.c_str());
  return c;
}

// Every hash recomputed and relinked from entry 1 on: a valid chain, as anyone can make one.
void rechain(std::vector<TraceEntry>& entries) {
  for (std::size_t i = 1; i < entries.size(); ++i) {
    entries[i].prev = entries[i - 1].hash;
    entries[i].hash = entries[i].compute_hash();
  }
}

VerifyingKey public_of(const SigningKey& key) {
  return VerifyingKey::from_pem(key.public_pem(), "public key");
}

}  // namespace

TEST_CASE("Signatures: keys round-trip through PEM and sign what they verify", "[kernel][sign]") {
  const SigningKey key = SigningKey::generate();
  CHECK(key.private_pem().rfind("-----BEGIN PRIVATE KEY-----", 0) == 0);
  CHECK(key.public_pem().rfind("-----BEGIN PUBLIC KEY-----", 0) == 0);
  const SigningKey again = SigningKey::from_pem(key.private_pem(), "k");
  const std::string sig = again.sign_hex("hello");
  CHECK(sig.size() == 128);
  CHECK(sig == key.sign_hex("hello"));  // Ed25519 is deterministic
  const VerifyingKey pub = public_of(key);
  CHECK(pub.verify_hex("hello", sig));
  CHECK_FALSE(pub.verify_hex("hellp", sig));
  CHECK_FALSE(pub.verify_hex("hello", sig.substr(0, 126)));
  CHECK_FALSE(pub.verify_hex("hello", "zz" + sig.substr(2)));
  CHECK_FALSE(public_of(SigningKey::generate()).verify_hex("hello", sig));
}

TEST_CASE("Signatures: bad key files are named with what is wrong", "[kernel][sign]") {
  const SigningKey key = SigningKey::generate();
  REQUIRE_THROWS_WITH(SigningKey::from_pem(key.public_pem(), "k.pub"),
                      Catch::Matchers::Contains("k.pub: a public key, where the private key"));
  REQUIRE_THROWS_WITH(VerifyingKey::from_pem(key.private_pem(), "k"),
                      Catch::Matchers::Contains("k: a private key, where the public key"));
  REQUIRE_THROWS_WITH(SigningKey::from_pem(kEcPrivate, "ec"),
                      Catch::Matchers::Contains("ec: the key is EC, not Ed25519"));
  REQUIRE_THROWS_WITH(VerifyingKey::from_pem(kEcPublic, "ec.pub"),
                      Catch::Matchers::Contains("not Ed25519"));
  REQUIRE_THROWS_WITH(SigningKey::from_pem("not a key", "x"),
                      Catch::Matchers::Contains("x: not a PEM private key: found no PEM block"));
  REQUIRE_THROWS_WITH(
      SigningKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "y"),
      Catch::Matchers::Contains("y: not a PEM private key"));
  REQUIRE_THROWS_WITH(VerifyingKey::from_pem("", "z"),
                      Catch::Matchers::Contains("z: not a PEM public key"));
}

TEST_CASE("Signatures: a signed run verifies, every checkpoint and the seal", "[kernel][sign]") {
  const SigningKey key = SigningKey::generate();
  const std::vector<TraceEntry> entries = signed_run(&key);
  std::size_t signed_points = 0;
  for (const TraceEntry& e : entries) {
    if (e.kind == EntryKind::checkpoint || e.kind == EntryKind::sealed) {
      CHECK_FALSE(e.signature.empty());
      ++signed_points;
    } else {
      CHECK(e.signature.empty());
    }
  }
  CHECK(signed_points == 3);  // checkpoints after entries 0-2 and 3-5, the seal
  REQUIRE(verify_chain(entries).ok);
  const SignatureCheck c = check(entries, public_of(key));
  INFO(c.message);
  REQUIRE(c.ok);
  CHECK(c.signed_entries == 3);
  CHECK(c.uncovered == 0);
  CHECK(c.covered_through == entries.size() - 1);

  // Read back, an entry without a signature has none (a reader reuses its entry: a member of
  // the checkpoint before must not stay).
  {
    const std::string path = clampai::test::temp_file("signatures-read.jsonl");
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      for (const TraceEntry& e : entries) out << e.to_json_line() << "\n";
    }
    const std::vector<TraceEntry> back = read_trace_file(path);
    std::remove(path.c_str());
    REQUIRE(back.size() == entries.size());
    for (std::size_t i = 0; i < back.size(); ++i) {
      INFO(i);
      CHECK(back[i].signature == entries[i].signature);
      CHECK(back[i].to_json_line() == entries[i].to_json_line());
    }
  }

  // Unsealed: the entries after the last checkpoint are counted as not covered.
  std::vector<TraceEntry> open(entries.begin(), entries.end() - 1);
  TraceReadOptions read;
  read.allow_unsealed = true;
  const std::string path = clampai::test::temp_file("signatures-open.jsonl");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (const TraceEntry& e : open) out << e.to_json_line() << "\n";
  }
  TraceReader reader(path, read);
  const SignatureCheck u = check_signatures(reader, public_of(key));
  std::remove(path.c_str());
  INFO(u.message);
  REQUIRE(u.ok);
  CHECK(u.signed_entries == 2);
  std::size_t last_checkpoint = 0;
  for (std::size_t i = 0; i < open.size(); ++i)
    if (open[i].kind == EntryKind::checkpoint) last_checkpoint = i;
  CHECK(u.uncovered == open.size() - 1 - last_checkpoint);
  CHECK(u.uncovered > 0);
}

TEST_CASE("Signatures: a chain rewritten without the key fails, with a valid structure",
          "[kernel][sign]") {
  const SigningKey key = SigningKey::generate();
  const VerifyingKey pub = public_of(key);
  const std::vector<TraceEntry> entries = signed_run(&key);

  // An executed entry changed and every hash after it recomputed: the chain verifies, the
  // signatures do not.
  std::vector<TraceEntry> rewritten = entries;
  rewritten[1].time_us += 1;
  rewritten[1].principal = "mallory";
  rechain(rewritten);
  REQUIRE(verify_chain(rewritten).ok);
  const SignatureCheck c = check(rewritten, pub);
  REQUIRE_FALSE(c.ok);
  REQUIRE(c.first_bad.has_value());
  CHECK(rewritten[*c.first_bad].kind == EntryKind::checkpoint);
  CHECK_THAT(c.message, Catch::Matchers::Contains("does not verify"));

  // The signatures stripped (and the chain rebuilt): the seal is not signed.
  std::vector<TraceEntry> stripped = entries;
  for (TraceEntry& e : stripped) e.signature.clear();
  rechain(stripped);
  REQUIRE(verify_chain(stripped).ok);
  const SignatureCheck s = check(stripped, pub);
  REQUIRE_FALSE(s.ok);
  CHECK_THAT(s.message, Catch::Matchers::Contains("is not signed"));

  // Signed by another key.
  const SigningKey other = SigningKey::generate();
  const SignatureCheck o = check(signed_run(&other), pub);
  REQUIRE_FALSE(o.ok);

  // An unsigned trace: its chain verifies, but with a public key nothing proves who wrote it.
  const std::vector<TraceEntry> unsigned_run = signed_run(nullptr, 0);
  REQUIRE(verify_chain(unsigned_run).ok);
  const SignatureCheck n = check(unsigned_run, pub);
  REQUIRE_FALSE(n.ok);
  CHECK_THAT(n.message, Catch::Matchers::Contains("is not signed"));
}

TEST_CASE("Signatures: a rollback records who asked", "[kernel][sign]") {
  SafetyKernel k(load_spec(kSpec));
  const Outcome o = k.execute("inc");
  REQUIRE(o.receipt);
  k.rollback(*o.receipt, "ops");
  const std::vector<TraceEntry> entries = k.trace();
  REQUIRE(entries.back().kind == EntryKind::rolled_back);
  CHECK(entries.back().principal == "ops");
  REQUIRE(verify_chain(entries, true).ok);
  // Replayed and resumed as recorded.
  REQUIRE_FALSE(replay_trace(load_spec(kSpec), entries).has_value());
  KernelOptions options;
  options.resume = entries;
  SafetyKernel resumed(load_spec(kSpec), options);
  CHECK(resumed.trace().back().hash == entries.back().hash);
}
