// Trace entries: canonical serialization, hashing, chain verification, JSON Lines I/O.
#include "clampai/kernel/trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/parallel.hpp"
#include "json.hpp"

namespace clampai::kernel {
namespace {

using detail::append_json_string;
using detail::append_value;
using detail::JsonNode;

constexpr std::string_view kKindNames[] = {
    "genesis", "executed", "rejected", "rolled_back", "sealed"};
const std::string kZeroHash(64, '0');

void append_named_values(std::string& out,
                         const std::vector<std::pair<std::string, Value>>& values) {
  auto by_name = [](const auto* a, const auto* b) { return a->first < b->first; };
  // Keys in order; small maps (the usual case) are sorted on the stack, by pointer.
  constexpr std::size_t kSmall = 16;
  const std::pair<std::string, Value>* small[kSmall];
  std::vector<const std::pair<std::string, Value>*> large;
  const std::pair<std::string, Value>** order = small;
  if (values.size() > kSmall) {
    large.resize(values.size());
    order = large.data();
  }
  for (std::size_t i = 0; i < values.size(); ++i) order[i] = &values[i];
  std::sort(order, order + values.size(), by_name);
  out += '{';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, order[i]->first);
    out += ':';
    append_value(out, order[i]->second);
  }
  out += '}';
}

void append_count(std::string& out, std::string_view key, std::uint64_t v) {
  out += key;
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, r.ptr);
}

void append_count(std::string& out, std::string_view key, std::int64_t v) {
  out += key;
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, r.ptr);
}

void append_reasons(std::string& out, const std::vector<Reason>& reasons) {
  out += '[';
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"code\":";
    append_json_string(out, to_string(reasons[i].code));
    out += ",\"message\":";
    append_json_string(out, reasons[i].message);
    out += ",\"subject\":";
    append_json_string(out, reasons[i].subject);
    out += '}';
  }
  out += ']';
}

// The canonical JSON of an entry; keys in RFC 8785 order.
std::string serialize(const TraceEntry& e, bool with_hash) {
  std::string out;
  out.reserve(512);
  out += "{\"action\":";
  append_json_string(out, e.action);
  out += ",\"changes\":";
  append_named_values(out, e.changes);
  out += ",\"cost\":";
  append_json_string(out, e.cost);
  out += ",\"emergency\":";
  out += e.emergency ? "true" : "false";
  append_count(out, ",\"emergency_steps\":", e.emergency_steps);
  out += ",\"gross\":";
  append_json_string(out, e.gross);
  if (with_hash) {
    out += ",\"hash\":";
    append_json_string(out, e.hash);
  }
  out += ",\"kind\":";
  append_json_string(out, to_string(e.kind));
  out += ",\"net\":";
  append_json_string(out, e.net);
  out += ",\"params\":";
  append_named_values(out, e.params);
  out += ",\"prev\":";
  append_json_string(out, e.prev);
  out += ",\"reasons\":";
  append_reasons(out, e.reasons);
  append_count(out, ",\"seq\":", e.sequence);
  out += ",\"spec\":";
  append_json_string(out, e.spec);
  out += ",\"state\":";
  append_json_string(out, e.state);
  append_count(out, ",\"step\":", e.step);
  append_count(out, ",\"time\":", e.time_us);
  out += ",\"warnings\":";
  append_reasons(out, e.warnings);
  out += '}';
  return out;
}

// ---- reading ----

[[noreturn]] void bad(const std::string& message) { throw TraceError(message); }

const JsonNode& member(const JsonNode& obj, const char* key, JsonNode::Kind kind) {
  const JsonNode* n = obj.find(key);
  if (n == nullptr) bad(std::string("missing `") + key + "`");
  if (n->kind != kind) bad(std::string("`") + key + "` is " + detail::describe(*n));
  return *n;
}

std::uint64_t as_count(const JsonNode& n, const char* key) {
  if (!n.integral || n.text.empty() || n.text[0] == '-')
    bad(std::string("`") + key + "` is not a count");
  try {
    return std::stoull(n.text);
  } catch (const std::exception&) {
    bad(std::string("`") + key + "` is out of range");
  }
}

Value generic_value(const JsonNode& n) {
  switch (n.kind) {
    case JsonNode::Kind::null:
      return Value();
    case JsonNode::Kind::boolean:
      return Value::boolean(n.boolean);
    case JsonNode::Kind::number: {
      auto d = Decimal::parse(n.text);
      if (!d) bad("number `" + n.text + "` is out of range");
      return Value::number(*d);
    }
    case JsonNode::Kind::string:
      return Value::string(n.text);
    case JsonNode::Kind::array: {
      Value::List items;
      for (const auto& i : n.items) items.push_back(generic_value(i));
      return Value::list(std::move(items));
    }
    case JsonNode::Kind::object:
      bad("objects are not values");
  }
  return Value();
}

std::vector<std::pair<std::string, Value>> named_values(const JsonNode& obj, const char* key) {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& [k, v] : member(obj, key, JsonNode::Kind::object).members)
    out.emplace_back(k, generic_value(v));
  return out;
}

std::vector<Reason> reasons(const JsonNode& obj, const char* key) {
  std::vector<Reason> out;
  for (const auto& r : member(obj, key, JsonNode::Kind::array).items) {
    if (r.kind != JsonNode::Kind::object)
      bad(std::string("`") + key + "` holds " + detail::describe(r));
    Reason reason;
    const std::string& code = member(r, "code", JsonNode::Kind::string).text;
    bool known = false;
    for (int c = 0; c <= static_cast<int>(ReasonCode::lookahead_trap); ++c) {
      if (to_string(static_cast<ReasonCode>(c)) == code) {
        reason.code = static_cast<ReasonCode>(c);
        known = true;
      }
    }
    if (!known) bad("unknown reason code `" + code + "`");
    reason.message = member(r, "message", JsonNode::Kind::string).text;
    reason.subject = member(r, "subject", JsonNode::Kind::string).text;
    out.push_back(std::move(reason));
  }
  return out;
}

TraceEntry entry_from_json(const JsonNode& j) {
  if (j.kind != JsonNode::Kind::object) bad("an entry must be a JSON object");
  TraceEntry e;
  e.action = member(j, "action", JsonNode::Kind::string).text;
  e.changes = named_values(j, "changes");
  e.cost = member(j, "cost", JsonNode::Kind::string).text;
  e.emergency = member(j, "emergency", JsonNode::Kind::boolean).boolean;
  e.emergency_steps =
      as_count(member(j, "emergency_steps", JsonNode::Kind::number), "emergency_steps");
  e.gross = member(j, "gross", JsonNode::Kind::string).text;
  e.hash = member(j, "hash", JsonNode::Kind::string).text;
  const std::string& kind = member(j, "kind", JsonNode::Kind::string).text;
  const auto k = std::find(std::begin(kKindNames), std::end(kKindNames), kind);
  if (k == std::end(kKindNames)) bad("unknown entry kind `" + kind + "`");
  e.kind = static_cast<EntryKind>(k - std::begin(kKindNames));
  e.net = member(j, "net", JsonNode::Kind::string).text;
  e.params = named_values(j, "params");
  e.prev = member(j, "prev", JsonNode::Kind::string).text;
  e.reasons = reasons(j, "reasons");
  e.sequence = as_count(member(j, "seq", JsonNode::Kind::number), "seq");
  e.spec = member(j, "spec", JsonNode::Kind::string).text;
  e.state = member(j, "state", JsonNode::Kind::string).text;
  e.step = as_count(member(j, "step", JsonNode::Kind::number), "step");
  const JsonNode& time = member(j, "time", JsonNode::Kind::number);
  if (!time.integral) bad("`time` is not an integer");
  try {
    e.time_us = std::stoll(time.text);
  } catch (const std::exception&) {
    bad("`time` is out of range");
  }
  e.warnings = reasons(j, "warnings");
  if (j.members.size() != 18) bad("unexpected members (an entry has exactly 18)");
  return e;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError("cannot read `" + path + "`");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits a JSON Lines file; each line must end with '\n'.
std::vector<std::string_view> split_lines(std::string_view text, std::string& problem) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      problem = "the last line has no newline: the file was truncated or changed";
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace

std::string_view to_string(EntryKind kind) { return kKindNames[static_cast<int>(kind)]; }

std::string TraceEntry::to_json_line() const { return serialize(*this, true); }

std::string TraceEntry::compute_hash() const { return sha256_hex(serialize(*this, false)); }

TraceCheck verify_chain(const std::vector<TraceEntry>& entries, bool allow_unsealed) {
  TraceCheck check;
  check.entries = entries.size();
  auto fail = [&](std::size_t i, const std::string& message) {
    check.ok = false;
    check.first_bad = i;
    check.message = "entry " + std::to_string(i) + ": " + message;
    return check;
  };
  if (entries.empty()) return fail(0, "the trace is empty (a trace starts with a genesis entry)");
  // Recomputing the hashes is the cost, and each is independent of the others: on a long trace
  // they are computed by several threads first; the checks then run in order as before, so
  // the first failure reported is the same.
  std::vector<char> hash_ok(entries.size(), 0);
  const unsigned cores = std::max(1U, std::min(8U, std::thread::hardware_concurrency()));
  constexpr std::size_t kChunk = 256;  // entries per work item
  parallel_for((entries.size() + kChunk - 1) / kChunk, cores, [&](std::size_t chunk, unsigned) {
    const std::size_t end = std::min(entries.size(), (chunk + 1) * kChunk);
    for (std::size_t i = chunk * kChunk; i < end; ++i)
      hash_ok[i] = entries[i].compute_hash() == entries[i].hash ? 1 : 0;
  });
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const TraceEntry& e = entries[i];
    if (e.sequence != i)
      return fail(i,
                  "sequence number " + std::to_string(e.sequence) + ", expected " +
                      std::to_string(i) + " (an entry was deleted, inserted or moved)");
    if (!hash_ok[i]) return fail(i, "hash mismatch: the entry was changed");
    const std::string& expected_prev = i == 0 ? kZeroHash : entries[i - 1].hash;
    if (e.prev != expected_prev) return fail(i, "does not link to the previous entry's hash");
    if ((i == 0) != (e.kind == EntryKind::genesis)) {
      return fail(
          i, i == 0 ? "the first entry is not a genesis entry" : "a genesis entry after the start");
    }
    if (e.kind == EntryKind::sealed && i + 1 != entries.size())
      return fail(i + 1, "entries follow the seal");
  }
  check.sealed = entries.back().kind == EntryKind::sealed;
  if (!check.sealed && !allow_unsealed) {
    return fail(entries.size(),
                "the trace ends without a seal: it was truncated after entry " +
                    std::to_string(entries.size() - 1) + ", or the run did not finish");
  }
  check.ok = true;
  check.message = std::to_string(entries.size()) + " entries, chain intact" +
                  (check.sealed ? ", sealed" : ", not sealed");
  return check;
}

std::vector<TraceEntry> read_trace_file(const std::string& path) {
  const std::string text = read_file(path);
  std::string problem;
  std::vector<TraceEntry> entries;
  const auto lines = split_lines(text, problem);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    try {
      entries.push_back(entry_from_json(detail::parse_json(lines[i], path)));
    } catch (const Error& e) {
      throw TraceError("line " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return entries;
}

TraceCheck verify_trace_file(const std::string& path, bool allow_unsealed) {
  const std::string text = read_file(path);
  std::string problem;
  const auto lines = split_lines(text, problem);
  std::vector<TraceEntry> entries;
  TraceCheck check;
  check.entries = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    try {
      TraceEntry e = entry_from_json(detail::parse_json(lines[i], path));
      if (e.to_json_line() != lines[i])
        throw TraceError("not in canonical form: the line was changed");
      entries.push_back(std::move(e));
    } catch (const Error& e) {
      check.first_bad = i;
      check.message =
          "entry " + std::to_string(i) + " (line " + std::to_string(i + 1) + "): " + e.what();
      return check;
    }
  }
  check = verify_chain(entries, allow_unsealed);
  if (check.ok && !problem.empty()) {
    check.ok = false;
    check.first_bad = lines.size() - 1;
    check.message = "entry " + std::to_string(lines.size() - 1) + ": " + problem;
  }
  return check;
}

TraceWriter::TraceWriter(const std::string& path, FlushPolicy policy) : policy_(policy) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) throw TraceError("cannot open `" + path + "` for writing");
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (const Error&) {
    // A destructor cannot report it; close() explicitly to see I/O errors.
  }
}

void TraceWriter::write_ready_locked() {
  for (auto it = pending_.find(next_); it != pending_.end(); it = pending_.find(next_)) {
    const std::string& line = it->second;
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
        std::fputc('\n', file_) == EOF) {
      error_ = "write failed";
    } else if (policy_ != FlushPolicy::buffered && std::fflush(file_) != 0) {
      error_ = "flush failed";
    } else if (policy_ == FlushPolicy::fsync && ::fsync(fileno(file_)) != 0) {
      error_ = "fsync failed";
    }
    pending_.erase(it);
    ++next_;
  }
}

void TraceWriter::write(std::uint64_t sequence, std::string line) {
  std::unique_lock lock(mutex_);
  if (file_ == nullptr) throw TraceError("the trace file is closed");
  pending_.emplace(sequence, std::move(line));
  write_ready_locked();
  written_.notify_all();
  written_.wait(lock, [&] { return next_ > sequence || !error_.empty(); });
  if (!error_.empty()) throw TraceError("trace file: " + error_);
}

void TraceWriter::close() {
  std::lock_guard lock(mutex_);
  if (file_ == nullptr) return;
  bool ok = std::fflush(file_) == 0;
  if (policy_ == FlushPolicy::fsync) ok = ::fsync(fileno(file_)) == 0 && ok;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) throw TraceError("trace file: closing failed");
}

}  // namespace clampai::kernel
