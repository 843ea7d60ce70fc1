#include "certificate.hpp"

#include <openssl/crypto.h>

#include <filesystem>
#include <functional>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/spec_loader.hpp"

namespace clampai::composition {

using kernel::jsonio::JsonNode;
using verifier::VerdictKind;

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFormat = "clampai-certificate/2";
constexpr std::string_view kSealSha = "sha256";
constexpr std::string_view kSealHmac = "hmac-sha256";

// The seal of a certificate's canonical JSON (without its `seal` and `hash` members).
std::string seal_of(std::string_view body, const std::string& key) {
  return key.empty() ? kernel::sha256_hex(body) : kernel::hmac_sha256_hex(key, body);
}

// What every proof of the task rests on, recorded in its certificate.
const char* const kAssumptions[] = {
    "the task's blocking invariants and variable bounds hold when it starts",
    "the task starts in a state where its interface's `assumes` holds",
    "every action runs through a SafetyKernel built from this model (same digest)",
    "Z3's answers and the encoding of the expression language (replayed counterexamples are "
    "checked by the kernel; proofs are not)",
};

// Compares seals in constant time (for equal lengths; the length of a seal is public), so a
// forger cannot learn a valid HMAC byte by byte from how long the comparison takes.
bool same_seal(const std::string& expected, const std::string& given) {
  return expected.size() == given.size() &&
         CRYPTO_memcmp(expected.data(), given.data(), expected.size()) == 0;
}

std::string canonical(const JsonNode& n) {
  std::string out;
  if (!kernel::jsonio::append_canonical(out, n)) throw Error("certificate: not canonicalizable");
  return out;
}

VerdictKind parse_verdict(const std::string& s) {
  if (s == "proved") return VerdictKind::proved;
  if (s == "refuted") return VerdictKind::refuted;
  return VerdictKind::unknown;
}

verifier::ObligationKind parse_kind(const std::string& s) {
  for (int k = 0; k <= static_cast<int>(verifier::ObligationKind::lint); ++k) {
    if (verifier::to_string(static_cast<verifier::ObligationKind>(k)) == s)
      return static_cast<verifier::ObligationKind>(k);
  }
  throw Error("unknown obligation kind `" + s + "`");
}

// A counterexample's named values: `[[name, value], ...]` (values as the trace writes them).
JsonNode values_json(const std::vector<std::pair<std::string, kernel::Value>>& values) {
  JsonNode a = JsonNode::make_array();
  for (const auto& [name, v] : values) {
    JsonNode& pair = a.push(JsonNode::make_array());
    pair.push(JsonNode::make_string(name));
    pair.push(kernel::jsonio::value_to_json(v));
  }
  return a;
}

// Reads what values_json wrote, typing each value by the model's variable (or, for `params`,
// the action's parameter) of that name.
std::vector<std::pair<std::string, kernel::Value>> values_of(const JsonNode* n,
                                                             const kernel::TaskModel& m,
                                                             const kernel::Action* action) {
  std::vector<std::pair<std::string, kernel::Value>> out;
  if (n == nullptr) return out;
  if (n->kind != JsonNode::Kind::array) throw Error("malformed counterexample");
  for (const JsonNode& pair : n->items) {
    if (pair.kind != JsonNode::Kind::array || pair.items.size() != 2 ||
        pair.items[0].kind != JsonNode::Kind::string)
      throw Error("malformed counterexample");
    const std::string& name = pair.items[0].text;
    const kernel::Type* type = nullptr;
    if (action != nullptr) {
      for (const auto& p : action->parameters)
        if (p.name == name) type = &p.type;
    } else if (const auto id = m.schema->find(name)) {
      type = &m.variable_types[*id];
    }
    kernel::Value v;
    std::string error;
    if (type == nullptr || !kernel::jsonio::value_from_json(pair.items[1], *type, v, error))
      throw Error("counterexample value of `" + name + "`");
    out.emplace_back(name, std::move(v));
  }
  return out;
}

JsonNode to_json(const TaskResult& r,
                 const std::vector<verifier::Obligation>& all,
                 unsigned timeout_ms) {
  JsonNode c = JsonNode::make_object();
  c.add("format", JsonNode::make_string(std::string(kFormat)));
  c.add("toolkit", JsonNode::make_string(std::string(toolkit_version())));
  c.add("task", JsonNode::make_string(r.name));
  c.add("digest", JsonNode::make_string(r.digest));
  c.add("timeout_ms", JsonNode::make_integer(timeout_ms));
  c.add("proved", JsonNode::make_integer(static_cast<std::int64_t>(r.proved)));
  c.add("refuted", JsonNode::make_integer(static_cast<std::int64_t>(r.refuted)));
  c.add("unknown", JsonNode::make_integer(static_cast<std::int64_t>(r.unknown)));
  c.add("warnings", JsonNode::make_integer(static_cast<std::int64_t>(r.warnings)));
  JsonNode& obs = c.add("obligations", JsonNode::make_array());
  for (const auto& o : all) {
    JsonNode& j = obs.push(JsonNode::make_object());
    j.add("id", JsonNode::make_string(o.id));
    j.add("kind", JsonNode::make_string(std::string(verifier::to_string(o.kind))));
    j.add("verdict", JsonNode::make_string(std::string(verifier::to_string(o.verdict))));
    j.add("reason", JsonNode::make_string(o.reason));
    j.add("action", JsonNode::make_string(o.action));
    j.add("invariant", JsonNode::make_string(o.invariant));
    if (o.counterexample) {
      JsonNode& cex = j.add("counterexample", JsonNode::make_object());
      cex.add("pre", values_json(o.counterexample->pre));
      if (!o.counterexample->params.empty())
        cex.add("params", values_json(o.counterexample->params));
      if (!o.counterexample->post.empty()) cex.add("post", values_json(o.counterexample->post));
    }
  }
  JsonNode& as = c.add("assumptions", JsonNode::make_array());
  for (const char* a : kAssumptions) as.push(JsonNode::make_string(a));
  return c;
}

std::int64_t integer(const JsonNode& n, const char* key) {
  const JsonNode* v = n.find(key);
  if (v == nullptr || v->kind != JsonNode::Kind::number || !v->integral)
    throw Error(std::string("missing or malformed `") + key + "`");
  return std::stoll(v->text);
}
std::string text(const JsonNode& n, const char* key) {
  const JsonNode* v = n.find(key);
  if (v == nullptr || v->kind != JsonNode::Kind::string)
    throw Error(std::string("missing or malformed `") + key + "`");
  return v->text;
}

// Reads a cached certificate into `r`; returns why it cannot be used, or "" when it can.
std::string reuse(const std::string& file,
                  const TaskRef& task,
                  const ComposeOptions& options,
                  TaskResult& r) {
  const unsigned timeout_ms = options.timeout_ms;
  std::string body;
  try {
    // Bounded; a FIFO, a device or a symbolic link is an error, not a wait (file.hpp).
    body = kernel::read_own_file(file, kernel::max_input_bytes());
  } catch (const FileError& e) {
    // An entry that is not a regular file within the limit was put there by hand or by an
    // attacker: not read. A cache is an optimisation: a miss, and the task is verified.
    return std::string("it cannot be read safely: ") + e.what();
  }
  try {
    JsonNode c = kernel::jsonio::parse_json(body, "certificate");
    if (c.kind != JsonNode::Kind::object) return "not a certificate";
    if (text(c, "format") != kFormat) return "another certificate format";
    const std::string seal = text(c, "seal");
    const std::string hash = text(c, "hash");
    auto& ms = c.members;
    ms.erase(
        std::remove_if(ms.begin(),
                       ms.end(),
                       [](const auto& kv) { return kv.first == "hash" || kv.first == "seal"; }),
        ms.end());
    if (!options.cache_key.empty() && seal != kSealHmac)
      return "it is not sealed with a key (a cache key is set)";
    if (options.cache_key.empty() && seal != kSealSha)
      return "it is sealed with a key and no cache key is set";
    if (!same_seal(seal_of(canonical(c), options.cache_key), hash)) {
      return options.cache_key.empty()
                 ? "its hash does not match its contents (tampered or corrupt)"
                 : "its seal does not match its contents under the cache key (forged, "
                   "tampered, corrupt or sealed with another key)";
    }
    if (text(c, "toolkit") != toolkit_version()) return "made by " + text(c, "toolkit");
    if (text(c, "digest") != task.model->digest) return "for another model";
    r.proved = static_cast<std::size_t>(integer(c, "proved"));
    r.refuted = static_cast<std::size_t>(integer(c, "refuted"));
    r.unknown = static_cast<std::size_t>(integer(c, "unknown"));
    r.warnings = static_cast<std::size_t>(integer(c, "warnings"));
    if (r.unknown > 0 && static_cast<std::uint64_t>(integer(c, "timeout_ms")) < timeout_ms)
      return "it has unknown verdicts under a shorter timeout";
    const JsonNode* obs = c.find("obligations");
    if (obs == nullptr || obs->kind != JsonNode::Kind::array) return "no obligations";
    for (const JsonNode& o : obs->items) {
      verifier::Obligation ob;
      ob.id = text(o, "id");
      ob.kind = parse_kind(text(o, "kind"));
      ob.verdict = parse_verdict(text(o, "verdict"));
      ob.reason = text(o, "reason");
      ob.action = text(o, "action");
      ob.invariant = text(o, "invariant");
      // The digest ignores source positions: locate the verdict in the spec as it is now.
      ob.loc = verifier::location_of(*task.model, ob);
      if (const JsonNode* cex = o.find("counterexample")) {
        const kernel::TaskModel& m = *task.model;
        const auto a = m.find_action(ob.action);
        if (cex->kind != JsonNode::Kind::object || (cex->find("params") && !a))
          throw Error("malformed counterexample");
        verifier::Counterexample found;
        found.pre = values_of(cex->find("pre"), m, nullptr);
        found.params = values_of(cex->find("params"), m, a ? &m.actions[*a] : nullptr);
        found.post = values_of(cex->find("post"), m, nullptr);
        ob.counterexample = std::move(found);
      }
      if (ob.verdict != VerdictKind::proved) r.findings.push_back(std::move(ob));
    }
  } catch (const Error& e) {
    return std::string("malformed: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("malformed: ") + e.what();
  }
  return "";
}

}  // namespace

TaskResult certify(const TaskRef& task, const ComposeOptions& options) {
  TaskResult r;
  r.name = task.name;
  r.file = task.file;
  r.digest = task.model->digest;
  const std::string file = options.cache_dir.empty()
                               ? ""
                               : (fs::path(options.cache_dir) / (r.digest + ".json")).string();
  if (!file.empty() && fs::exists(file)) {
    TaskResult cached = r;
    const std::string why = reuse(file, task, options, cached);
    if (why.empty()) {
      cached.reused = true;
      return cached;
    }
    r.cache_note = "certificate not reused: " + why;
  }
  verifier::VerifyOptions vo;
  vo.timeout_ms = options.timeout_ms;
  vo.jobs = 1;
  const verifier::Report report = verifier::verify(task.model, vo);
  r.proved = report.proved;
  r.refuted = report.refuted;
  r.unknown = report.unknown;
  r.warnings = report.warnings;
  for (const auto& o : report.obligations) {
    if (o.verdict != VerdictKind::proved) r.findings.push_back(o);
  }
  if (file.empty()) return r;
  JsonNode c = to_json(r, report.obligations, options.timeout_ms);
  const std::string hash = seal_of(canonical(c), options.cache_key);
  c.add("seal",
        JsonNode::make_string(std::string(options.cache_key.empty() ? kSealSha : kSealHmac)));
  c.add("hash", JsonNode::make_string(hash));
  // Stored atomically (file.hpp): a reader never meets half a certificate, and an entry that
  // is a link or a special file is not replaced: a warning, the result stands.
  std::error_code ec;
  fs::create_directories(options.cache_dir, ec);
  try {
    kernel::write_file_atomically(file, canonical(c) + "\n", /*replace=*/true, "certificate");
  } catch (const FileError& e) {
    r.cache_note +=
        (r.cache_note.empty() ? "" : "; ") + std::string("certificate not stored: ") + e.what();
  }
  return r;
}

}  // namespace clampai::composition
