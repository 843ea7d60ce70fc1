// The `attested` trace entry: an attestation's result, bounded whatever the attestor printed.
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/trace.hpp"

namespace clampai::kernel {

namespace {

// At most kAttestationExcerptBytes bytes of `text`, printable ASCII (others as `?`), `...`
// when cut: what an entry keeps of an attestor's output.
std::string excerpt(const std::string& text) {
  std::string out;
  const bool cut = text.size() > kAttestationExcerptBytes;
  const std::size_t keep = cut ? kAttestationExcerptBytes - 3 : text.size();
  out.reserve(keep + 3);
  for (std::size_t i = 0; i < keep; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  if (cut) out += "...";
  return out;
}

const Value* param(const TraceEntry& e, std::string_view name) {
  for (const auto& [k, v] : e.params)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace

TraceEntry attestation_entry(const AttestationRecord& record) {
  TraceEntry e;
  e.kind = EntryKind::attested;
  e.action = record.gate;
  e.params.emplace_back("attestor", Value::string(record.attestor));
  e.params.emplace_back(
      "detail", Value::string(excerpt(record.error.empty() ? record.evidence : record.error)));
  e.params.emplace_back("evidence_sha256", Value::string(sha256_hex(record.evidence)));
  e.params.emplace_back("gate", Value::string(record.gate.empty() ? "goal" : "action"));
  e.params.emplace_back("passed", Value::boolean(record.passed));
  return e;
}

std::optional<std::string> malformed_attestation(const TraceEntry& e) {
  if (e.params.size() != 5) return "an attested entry has exactly 5 params";
  for (const char* key : {"attestor", "detail", "evidence_sha256", "gate"}) {
    const Value* v = param(e, key);
    if (v == nullptr || v->kind() != Value::Kind::string)
      return std::string("an attested entry's `") + key + "` must be a string";
  }
  const Value* passed = param(e, "passed");
  if (passed == nullptr || passed->kind() != Value::Kind::boolean)
    return std::string("an attested entry's `passed` must be true or false");
  const std::string& gate = param(e, "gate")->as_string();
  if (gate != (e.action.empty() ? "goal" : "action"))
    return "an attested entry's `gate` is `" + gate + "` but its action is `" + e.action + "`";
  if (param(e, "detail")->as_string().size() > kAttestationExcerptBytes)
    return std::string("an attested entry's `detail` is longer than its bound");
  if (!e.changes.empty()) return std::string("an attested entry changes nothing");
  return std::nullopt;
}

}  // namespace clampai::kernel
