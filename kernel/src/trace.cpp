// Trace entries: canonical serialization, hashing, chain verification, JSON Lines I/O.
#include "clampai/kernel/trace.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <thread>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/parallel.hpp"
#include "json.hpp"
#include "trace_codec.hpp"

namespace clampai::kernel {
namespace {

using detail::append_count;
using detail::append_json_string;
using detail::append_reasons;
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

// The canonical JSON of an entry; keys in RFC 8785 order.
std::string serialize(const TraceEntry& e, bool with_hash) {
  std::string out;
  out.reserve(512);
  const detail::LineLayout at = detail::append_canonical_without_hash(out, e);
  if (with_hash) {
    std::string member = ",\"hash\":";
    append_json_string(member, e.hash);
    out.insert(at.hash_at, member);
  }
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
    for (int c = 0; c <= static_cast<int>(ReasonCode::invariant_error); ++c) {
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

// The trace file's text: a regular file within the input limit (file.hpp).
std::string read_trace_text(const std::string& path) {
  try {
    return read_file(path);
  } catch (const FileError& e) {
    throw TraceError(e.what());
  }
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

namespace detail {

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

LineLayout append_canonical_without_hash(std::string& out, const TraceEntry& e) {
  LineLayout at;
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
  at.hash_at = out.size();
  out += ",\"kind\":";
  append_json_string(out, to_string(e.kind));
  out += ",\"net\":";
  append_json_string(out, e.net);
  out += ",\"params\":";
  append_named_values(out, e.params);
  out += ",\"prev\":";
  at.prev_at = out.size() + 1;
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
  return at;
}

TraceEntry entry_from_line(std::string_view line, const std::string& source) {
  return entry_from_json(parse_json(line, source));
}

TraceCheck verify_stored_lines(const std::vector<StoredLine>& lines,
                               std::uint64_t first_sequence,
                               bool allow_unsealed) {
  TraceCheck check;
  check.entries = lines.size();
  auto fail = [&](std::size_t i, const std::string& message) {
    check.ok = false;
    check.first_bad = first_sequence + i;
    check.message = "entry " + std::to_string(first_sequence + i) + ": " + message;
    return check;
  };
  if (lines.empty()) return fail(0, "the trace is empty (a trace starts with a genesis entry)");
  // Each line's hash covers its own bytes only: computed on every core first, checked in order.
  std::vector<char> hash_ok(lines.size(), 0);
  const unsigned cores = std::max(1U, std::min(8U, std::thread::hardware_concurrency()));
  const std::size_t workers = lines.size() >= 256 ? cores : 1;
  auto hash_range = [&](std::size_t w) {
    Sha256 sha;
    char hex[64];
    const std::size_t per = (lines.size() + workers - 1) / workers;
    for (std::size_t i = w * per; i < std::min(lines.size(), (w + 1) * per); ++i) {
      const StoredLine& l = lines[i];
      if (l.text.size() < l.hash_at + kHashMember) continue;
      sha.reset();
      sha.update(l.text.substr(0, l.hash_at));
      sha.update(l.text.substr(l.hash_at + kHashMember));
      sha.final_hex(hex);
      hash_ok[i] = l.text.compare(l.hash_at + kHashKey.size(), 64, hex, 64) == 0 ? 1 : 0;
    }
  };
  if (workers > 1) {
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(hash_range, w);
    hash_range(0);
    for (auto& t : threads) t.join();
  } else {
    hash_range(0);
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const StoredLine& l = lines[i];
    const std::uint64_t seq = first_sequence + i;
    if (!hash_ok[i]) return fail(i, "hash mismatch: the entry was changed");
    const std::string_view prev = l.text.substr(l.prev_at, 64);
    if (i > 0 && prev != lines[i - 1].text.substr(lines[i - 1].hash_at + kHashKey.size(), 64))
      return fail(i, "does not link to the previous entry's hash");
    if (seq == 0 && prev != kZeroHash) return fail(i, "does not link to the previous entry's hash");
    if ((seq == 0) != (l.kind == EntryKind::genesis)) {
      return fail(
          i,
          seq == 0 ? "the first entry is not a genesis entry" : "a genesis entry after the start");
    }
    if (l.kind == EntryKind::sealed && i + 1 != lines.size())
      return fail(i + 1, "entries follow the seal");
  }
  check.sealed = lines.back().kind == EntryKind::sealed;
  if (!check.sealed && !allow_unsealed) {
    return fail(lines.size(),
                "the trace ends without a seal: it was truncated after entry " +
                    std::to_string(first_sequence + lines.size() - 1) +
                    ", or the run did not finish");
  }
  check.ok = true;
  check.message = std::to_string(lines.size()) + " entries" +
                  (first_sequence > 0 ? " (from entry " + std::to_string(first_sequence) + ")"
                                      : std::string()) +
                  ", chain intact" + (check.sealed ? ", sealed" : ", not sealed");
  return check;
}

}  // namespace detail

std::string_view to_string(EntryKind kind) { return kKindNames[static_cast<int>(kind)]; }

std::string TraceEntry::to_json_line() const { return serialize(*this, true); }

std::string TraceEntry::compute_hash() const {
  std::string out;
  out.reserve(512);
  detail::append_canonical_without_hash(out, *this);
  return sha256_hex(out);
}

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
  const std::string text = read_trace_text(path);
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
  const std::string text = read_trace_text(path);
  std::string problem;
  auto lines = split_lines(text, problem);
  // A last line without its newline is a write that was cut short (a crash, a full disk): the
  // entries before it are checked, and the tail is reported with how to drop it.
  const bool torn = !problem.empty();
  if (torn) lines.pop_back();
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
  if (!torn) return verify_chain(entries, allow_unsealed);
  check = entries.empty() ? TraceCheck{} : verify_chain(entries, /*allow_unsealed=*/true);
  if (entries.empty() || check.ok) {
    const std::size_t last_newline = text.rfind('\n');
    const std::size_t intact = last_newline == std::string::npos ? 0 : last_newline + 1;
    check.ok = false;
    check.entries = entries.size();
    check.first_bad = entries.size();
    check.truncated_tail = true;
    check.verified_bytes = intact;
    check.message = "truncated tail after " + std::to_string(entries.size()) +
                    " verified entries: the last line (" + std::to_string(text.size() - intact) +
                    " bytes) has no newline, a write was cut short (a crash or a full disk); to "
                    "recover, keep the verified entries: `truncate -s " +
                    std::to_string(intact) + " FILE` (or `head -n " +
                    std::to_string(entries.size()) +
                    " FILE > COPY`), then verify again (with --allow-unsealed: the run did not "
                    "seal it)";
  }
  return check;
}

TraceWriter::TraceWriter(const std::string& path, FlushPolicy policy, TraceOpen mode)
    : policy_(policy) {
  const int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                    (mode == TraceOpen::create      ? O_CREAT | O_EXCL
                     : mode == TraceOpen::overwrite ? O_CREAT
                                                    : O_APPEND);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    const int err = errno;
    std::string why = std::strerror(err);
    const std::string what = describe_file(path);
    if (!what.empty() && what != "a regular file" && what != "a symbolic link to a regular file") {
      why = "it is " + what + ", not a regular file";
    } else if (err == EEXIST) {
      why =
          "it already exists (a trace is never overwritten silently: --append continues it, "
          "--force replaces it)";
    } else if (err == ENOENT && mode == TraceOpen::append) {
      why = "it does not exist: there is no trace to append to";
    } else if (err == ENOENT && std::filesystem::path(path).has_parent_path()) {
      const std::filesystem::path parent = std::filesystem::path(path).parent_path();
      why += " (the directory `" + parent.string() + "` does not exist: create it first)";
    }
    throw TraceError("cannot open trace `" + path + "`: " + why);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw TraceError("cannot open trace `" + path + "`: it is " + describe_file(path) +
                     ", not a regular file");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    throw TraceError("cannot open trace `" + path + "`: " +
                     (err == EWOULDBLOCK
                          ? std::string("another process is writing it (it is locked)")
                          : std::strerror(err)));
  }
  // Emptied only now that no other writer can be using it.
  if ((mode == TraceOpen::overwrite && ::ftruncate(fd, 0) != 0) ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    throw TraceError("cannot open trace `" + path + "`: " + std::strerror(err));
  }
  file_ = ::fdopen(fd, mode == TraceOpen::append ? "ab" : "wb");
  if (file_ == nullptr) {
    ::close(fd);
    throw TraceError("cannot open trace `" + path + "`: " + std::strerror(errno));
  }
}

void TraceWriter::continue_from(std::uint64_t entries) {
  std::lock_guard lock(mutex_);
  if (next_ != 0 || !pending_.empty())
    throw InvalidArgument("continue_from: entries were already written");

  next_ = entries;
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
