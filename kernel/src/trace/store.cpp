// The kernel's store (store.hpp), out of line: the renderer of executed entries' lines, the
// hasher (in order, by whoever drains, and its background thread), trimming, the undo records
// read back, and the views that read and verify the kept lines. What a commit runs (publish,
// publish_executed, push_undo, settle) stays inline in the header.
#include "store.hpp"

namespace clampai::kernel {

std::atomic<bool> detail::test_no_background_hasher{false};
std::atomic<std::uint64_t> detail::test_lines_rendered_ahead{0};

SafetyKernel::Impl::~Impl() {
  if (worker.joinable()) {
    {
      std::lock_guard lock(worker_mutex);
      worker_stop = true;
    }
    worker_wake.notify_one();
    worker.join();
  }
}

ExecutedRecord SafetyKernel::Impl::decode(const char* record, LineValue* values) const noexcept {
  ExecutedRecord r;
  const char* p = record + 32;
  std::uint64_t v = 0;
  p = detail::get_varint(p, v);
  r.fields.action = static_cast<std::size_t>(v);
  r.fields.emergency = *p++ != 0;
  p = detail::get_varint(p, v);
  r.fields.cost = detail::unzigzag(v);
  p = detail::get_varint(p, v);
  r.fields.gross = detail::unzigzag(v);
  p = detail::get_varint(p, v);
  r.fields.net = detail::unzigzag(v);
  p = detail::get_varint(p, r.fields.emergency_steps);
  p = detail::get_varint(p, r.fields.step);
  p = detail::get_varint(p, v);
  r.fields.time = detail::unzigzag(v);
  const ActionLayout& layout = layouts[r.fields.action];
  const std::size_t count = layout.changes.size() + layout.params.size();
  for (std::size_t i = 0; i < count; ++i) {
    p = detail::get_varint(p, v);
    if ((v & 1) != 0) {
      const auto n = static_cast<std::size_t>(v >> 1);
      values[i] = LineValue{0, {p, n}};
      p += n;
    } else {
      values[i] = LineValue{detail::unzigzag(v >> 1), {}};
    }
  }
  r.values = values;
  p = detail::get_varint(p, v);
  r.fields.warnings = {p, static_cast<std::size_t>(v)};
  return r;
}

LineLayout SafetyKernel::Impl::render(const ExecutedRecord& r,
                                      std::uint64_t sequence,
                                      const char* prev,
                                      const char* hash,
                                      char* at) const noexcept {
  const ActionLayout& layout = layouts[r.fields.action];
  const LineValue* params = r.values + layout.changes.size();
  LineWriter out(at);
  auto put_value = [&](const LineValue& v) {
    if (v.text.empty()) {
      out.put_int(v.integer);
    } else {
      out.put(v.text);
    }
  };
  out.put(layout.action);
  for (std::size_t i = 0; i < layout.changes.size(); ++i) {
    if (i > 0) out.put(',');
    out.put(layout.changes[i].second);
    put_value(r.values[layout.changes[i].first]);
  }
  out.put(kCost);
  out.put_amount(r.fields.cost, scale);
  out.put(r.fields.emergency ? kEmergency : kNoEmergency);
  out.put_int(r.fields.emergency_steps);
  out.put(kGross);
  out.put_amount(r.fields.gross, scale);
  const std::size_t hash_at = out.size();
  out.put(detail::kHashKey);
  if (hash != nullptr) {
    out.put(hash, 64);
  } else {
    out.put(std::string_view("0000000000000000000000000000000000000000000000000000000000000000"));
  }
  out.put('"');
  out.put(kNet);
  out.put_amount(r.fields.net, scale);
  out.put(kParams);
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    if (i > 0) out.put(',');
    out.put(layout.params[i].second);
    put_value(params[layout.params[i].first]);
  }
  out.put(kPrev);
  const std::size_t prev_at = out.size();
  out.put(prev, 64);
  out.put(kSeq);
  out.put_int(sequence);
  out.put(kStep);
  out.put_int(r.fields.step);
  out.put(kTime);
  out.put_int(r.fields.time);
  out.put(r.fields.warnings.empty() ? kNoWarnings : r.fields.warnings);
  return LineLayout{static_cast<std::uint32_t>(out.size()),
                    static_cast<std::uint32_t>(hash_at),
                    static_cast<std::uint32_t>(prev_at)};
}

void SafetyKernel::Impl::hash_line(const Job& job, std::uint64_t sequence) {
  Slot& s = *job.slot;
  if (s.compact) {
    LineLayout at = job.ahead;
    char* text = nullptr;
    if (at.size != 0) {
      text = pre_room(sequence);
      std::memcpy(text + at.prev_at, last_hash, sizeof last_hash);
    } else {
      text = rendered.get();
      at = render(decode(s.text, decoded.get()), sequence, last_hash, nullptr, text);
    }
    const std::size_t tail = at.hash_at + detail::kHashMember;
    unsigned char digest[32];
    detail::sha256_one({{text, at.hash_at}, {text + tail, at.size - tail}}, digest);
    std::memcpy(s.text, digest, sizeof digest);
    detail::digest_hex(digest, last_hash);
    std::memcpy(text + at.hash_at + detail::kHashKey.size(), last_hash, sizeof last_hash);
    last_text = text;
    last_rendered = at;
    return;
  }
  std::memcpy(s.text + s.prev_at, last_hash, sizeof last_hash);
  const std::size_t tail = s.hash_at + detail::kHashMember;
  char* digits = s.text + s.hash_at + detail::kHashKey.size();
  detail::sha256_one_hex({{s.text, s.hash_at}, {s.text + tail, s.size - tail}}, digits);
  std::memcpy(last_hash, digits, sizeof last_hash);
}

void SafetyKernel::Impl::hash_published() {
  const std::uint64_t p = published.load(std::memory_order_acquire);
  for (std::uint64_t h = hashed.load(std::memory_order_relaxed); h < p; ++h) {
    hash_line(ring[h % kRing], h);
    hashed.store(h + 1, std::memory_order_release);
  }
}

bool SafetyKernel::Impl::drain() {
  if (hashing.exchange(true, std::memory_order_seq_cst)) return false;
  for (;;) {
    hash_published();
    hashing.store(false, std::memory_order_seq_cst);
    // A line published while this thread held `hashing` may have found it held: take it.
    if (published.load(std::memory_order_seq_cst) == hashed.load(std::memory_order_relaxed))
      return true;
    if (hashing.exchange(true, std::memory_order_seq_cst)) return true;
  }
}

void SafetyKernel::Impl::worker_loop() {
  for (;;) {
    drain();
    // Sleeps until a batch waits: one wake-up per batch, not per line.
    std::unique_lock lock(worker_mutex);
    worker_sleeping.store(true, std::memory_order_seq_cst);
    worker_wake.wait(lock, [&] { return worker_stop || waiting() >= kBatch; });
    worker_sleeping.store(false, std::memory_order_relaxed);
    if (worker_stop) return;
  }
}

void SafetyKernel::Impl::nudge() noexcept {
  if (waiting() < kBatch) return;
  if (!worker.joinable()) {
    std::lock_guard lock(worker_mutex);
    if (!worker.joinable() && !worker_stop) {
      try {
        worker = std::thread([this] { worker_loop(); });
      } catch (...) {
        worker_stop = true;  // no thread: hashed by settle() and the full ring
      }
    }
    return;
  }
  if (worker_sleeping.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(worker_mutex);
    worker_wake.notify_one();
  }
}

bool SafetyKernel::Impl::make_pre() noexcept {
  try {
    pre = std::make_unique_for_overwrite<char[]>(kRing * kPreBytes);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

void SafetyKernel::Impl::trim(std::size_t window) noexcept {
  if (window == 0) return;
  const std::uint64_t done = hashed.load(std::memory_order_acquire);
  std::optional<Slot> dropped;
  while (slots.size() > window && first_sequence < done) {
    dropped = slots.front();
    slots.pop_front();
    ++first_sequence;
  }
  if (dropped) hash_of(*dropped, before_first);  // its chunk is not freed yet
  // A reader without the lock may be reading the lines: the chunks wait for a later trim.
  if (pins.load(std::memory_order_acquire) > 0) return;
  lines.drop_before(slots.front().text);
}

std::vector<Value> SafetyKernel::Impl::undo_values(std::size_t index, std::size_t count) const {
  const Undo& u = undo[index];
  const char* p = u.values;
  // The record's boxed values are after those of the records before it, in record order.
  std::size_t next_boxed = boxed.size();
  for (std::size_t i = undo.size(); i > index; --i) next_boxed -= undo[i - 1].boxed;
  std::vector<Value> out(count);
  for (Value& v : out) {
    const auto tag = static_cast<unsigned char>(*p++);
    switch (tag) {
      case kUndefined:
        break;
      case kFalse:
      case kTrue:
        v = Value::boolean(tag == kTrue);
        break;
      case kNumber: {
        const auto scale_byte = static_cast<std::uint8_t>(*p++);
        std::uint64_t units = 0;
        p = detail::get_varint(p, units);
        v = Value::number(Decimal{detail::unzigzag(units), scale_byte});
        break;
      }
      default:
        v = boxed[next_boxed++];
        break;
    }
  }
  return out;
}

void SafetyKernel::Impl::View::render(const Impl& k, std::size_t from, std::size_t to) {
  const std::size_t n = to - from;
  std::vector<std::size_t> at(n + 1, 0);  // where each line goes in `rendered_`
  for (std::size_t i = 0; i < n; ++i) {
    const Slot& s = slots_[from + i];
    at[i + 1] = at[i] + (s.compact ? s.hash_at : 0);  // a record's bound
  }
  if (at[n] > rendered_capacity_) {
    rendered_ = std::make_unique_for_overwrite<char[]>(at[n]);
    rendered_capacity_ = at[n];
  }
  std::vector<LineLayout> layouts(n);
  constexpr std::size_t kPiece = 512;  // lines per piece
  parallel_for(
      (n + kPiece - 1) / kPiece, detail::verification_threads(), [&](std::size_t piece, unsigned) {
        std::vector<LineValue> values(std::max<std::size_t>(k.max_values, 1));
        for (std::size_t i = piece * kPiece; i < std::min(n, (piece + 1) * kPiece); ++i) {
          const Slot& s = slots_[from + i];
          if (!s.compact) continue;
          char prev[64];
          if (from + i == 0) {
            std::memcpy(prev, before_, sizeof prev);
          } else {
            hash_of(slots_[from + i - 1], prev);
          }
          char hash[64];
          hash_of(s, hash);
          layouts[i] = k.render(k.decode(s.text, values.data()),
                                first_ + from + i,
                                prev,
                                hash,
                                rendered_.get() + at[i]);
        }
      });
  lines_.clear();
  lines_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Slot& s = slots_[from + i];
    if (s.compact) {
      lines_.push_back({{rendered_.get() + at[i], layouts[i].size},
                        layouts[i].hash_at,
                        layouts[i].prev_at,
                        EntryKind::executed});
    } else {
      lines_.push_back({{s.text, s.size}, s.hash_at, s.prev_at, s.kind});
    }
  }
}

TraceCheck SafetyKernel::Impl::View::verify(const Impl& k) {
  const std::size_t n = slots_.size();
  TraceCheck check;
  for (std::size_t from = 0; from == 0 || from < n; from += kBatch) {
    const std::size_t to = std::min(n, from + kBatch);
    render(k, from, to);
    check = detail::verify_stored_lines(lines_, first_ + from, /*allow_unsealed=*/true);
    check.entries = n;
    if (!check.ok) return check;
    auto fail = [&](std::size_t i, const char* why) {
      check.ok = false;
      check.sealed = false;
      check.first_bad = first_ + i;
      check.message = "entry " + std::to_string(first_ + i) + ": " + why;
      return check;
    };
    if (from > 0) {  // the batch's first line links to the line before it
      char before[64];
      hash_of(slots_[from - 1], before);
      const detail::StoredLine& l = lines_.front();
      if (l.text.substr(l.prev_at, 64) != std::string_view(before, sizeof before))
        return fail(from, "does not link to the previous entry's hash");
    }
    if (check.sealed && to < n) return fail(to, "entries follow the seal");
  }
  check.message = detail::chain_summary(n, first_, check.sealed);
  return check;
}

std::unique_ptr<SafetyKernel::Impl::View> SafetyKernel::Impl::view(std::size_t window) {
  settle();
  trim(window);  // what waited for its hash beyond the window
  std::vector<Slot> copy(slots.begin(), slots.end());
  return std::make_unique<View>(std::move(copy), first_sequence, before_first, pins);
}

}  // namespace clampai::kernel
