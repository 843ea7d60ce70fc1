// The wire form of the kernel's types (wire.hpp): plain string building, compact or indented.
#include "clampai/report/wire.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/detail/conversions/to_chars.hpp>

#include "clampai/kernel/json.hpp"

namespace clampai::report {

namespace ck = clampai::kernel;
namespace jsonio = clampai::kernel::jsonio;

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty()) return;
  Frame& f = open_.back();
  if (!f.first) out_.push_back(',');
  f.first = false;
  if (layout_ == Layout::indented) {
    out_.push_back('\n');
    out_.append(2 * open_.size(), ' ');
  }
}

// The members of the indented object `f` (just written, each `"key": value` after a separator of
// the same length) put in the order of their keys' bytes. Reordering keeps the object's length,
// so the offsets the enclosing objects hold stay true.
void JsonWriter::sort_members(const Frame& f) {
  const auto less = [](const Member* a, const Member* b) { return a->key < b->key; };
  std::vector<const Member*> order;
  order.reserve(f.members.size());
  for (const Member& m : f.members) order.push_back(&m);
  if (std::is_sorted(order.begin(), order.end(), less)) return;
  std::stable_sort(order.begin(), order.end(), less);
  std::string separator = ",\n";
  separator.append(2 * open_.size(), ' ');
  const std::size_t begin = f.members.front().begin;
  const auto end_of = [&](const Member* m) {
    const auto next = static_cast<std::size_t>(m - f.members.data()) + 1;
    return next < f.members.size() ? f.members[next].begin - separator.size() : out_.size();
  };
  std::string sorted;
  sorted.reserve(out_.size() - begin);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i > 0) sorted += separator;
    sorted.append(out_, order[i]->begin, end_of(order[i]) - order[i]->begin);
  }
  out_.replace(begin, std::string::npos, sorted);
}

void JsonWriter::close(char bracket) {
  if (layout_ == Layout::indented) {
    const Frame& f = open_.back();
    if (f.members.size() > 1) sort_members(f);
    if (!f.first) {
      out_.push_back('\n');
      out_.append(2 * (open_.size() - 1), ' ');
    }
  }
  out_.push_back(bracket);
  open_.pop_back();
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  open_.emplace_back();
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  open_.emplace_back();
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  if (layout_ == Layout::indented) open_.back().members.push_back({std::string(k), out_.size()});
  jsonio::append_json_string(out_, k, jsonio::InvalidUtf8::replace);
  out_ += layout_ == Layout::indented ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  jsonio::append_json_string(out_, s, jsonio::InvalidUtf8::replace);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::integer(std::int64_t i) {
  separate();
  out_ += std::to_string(i);
  return *this;
}

JsonWriter& JsonWriter::unsigned_integer(std::uint64_t u) {
  separate();
  out_ += std::to_string(u);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  separate();
  if (!std::isfinite(d)) {
    out_ += "null";
    return *this;
  }
  // The digits nlohmann's dump has always given the reports (Grisu2, laid out like `%g` with
  // `.0` on a whole number): the same text as before this writer, not only the same double.
  std::array<char, 64> buf{};
  const char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), d);
  out_.append(buf.data(), static_cast<std::size_t>(end - buf.data()));
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

void JsonWriter::write_node(const jsonio::JsonNode& n) {
  using Kind = jsonio::JsonNode::Kind;
  switch (n.kind) {
    case Kind::null:
      null();
      return;
    case Kind::boolean:
      value(n.boolean);
      return;
    case Kind::number:
      raw(n.text);
      return;
    case Kind::string:
      value(n.text);
      return;
    case Kind::array:
      begin_array();
      for (const jsonio::JsonNode& item : n.items) write_node(item);
      end_array();
      return;
    case Kind::object:
      begin_object();
      for (const auto& [k, v] : n.members) {
        key(k);
        write_node(v);
      }
      end_object();
      return;
  }
}

JsonWriter& JsonWriter::value(const ck::Value& v) {
  if (layout_ == Layout::indented) {
    write_node(jsonio::value_to_json(v));
    return *this;
  }
  separate();
  // value_to_json gives integers within 2^53 and decimal strings: always canonical.
  if (!jsonio::append_canonical(out_, jsonio::value_to_json(v))) out_ += "null";
  return *this;
}

void write_reason(JsonWriter& j, const ck::Reason& r) {
  j.begin_object()
      .key("code")
      .value(ck::to_string(r.code))
      .key("subject")
      .value(r.subject)
      .key("message")
      .value(r.message)
      .end_object();
}

void write_reasons(JsonWriter& j, const std::vector<ck::Reason>& reasons) {
  j.begin_array();
  for (const ck::Reason& r : reasons) write_reason(j, r);
  j.end_array();
}

void write_decision_members(JsonWriter& j,
                            const ck::TaskModel& model,
                            std::string_view action,
                            const ck::Decision& d) {
  j.key("action").value(action).key("approved").value(d.approved);
  j.key("cost").value(model.format_amount(d.cost)).key("emergency").value(d.emergency);
  j.key("reasons");
  write_reasons(j, d.reasons);
  j.key("warnings");
  write_reasons(j, d.warnings);
  j.key("changes").begin_object();
  for (const auto& [var, v] : d.changes) j.key(model.variables[var].name).value(v);
  j.end_object();
}

void write_decision(JsonWriter& j, const ck::TaskModel& model, const ck::Decision& d) {
  j.begin_object();
  const bool named = !d.has(ck::ReasonCode::unknown_action) && d.action < model.actions.size();
  write_decision_members(j, model, named ? std::string_view(model.actions[d.action].id) : "", d);
  j.end_object();
}

void write_state(JsonWriter& j, const ck::State& s) {
  j.begin_object();
  for (std::size_t i = 0; i < s.size(); ++i)
    j.key(s.schema().name(static_cast<ck::VarId>(i))).value(s.get(static_cast<ck::VarId>(i)));
  j.end_object();
}

void write_budget(JsonWriter& j, const ck::TaskModel& model, const ck::BudgetController& b) {
  j.begin_object()
      .key("total")
      .value(model.format_amount(b.total()))
      .key("net")
      .value(model.format_amount(b.net()))
      .key("gross")
      .value(model.format_amount(b.gross()))
      .key("remaining")
      .value(model.format_amount(b.remaining()))
      .end_object();
}

void write_pools(JsonWriter& j, const std::vector<ck::PoolStatus>& pools) {
  j.begin_array();
  for (const ck::PoolStatus& p : pools) {
    j.begin_object().key("name").value(p.name).key("parent");
    if (p.parent.empty()) {
      j.null();
    } else {
      j.value(p.parent);
    }
    j.key("total")
        .value(p.format(p.total))
        .key("net")
        .value(p.format(p.net))
        .key("gross")
        .value(p.format(p.gross))
        .key("remaining")
        .value(p.format(p.total - p.net))
        .key("tasks")
        .value(static_cast<std::uint64_t>(p.tasks))
        .end_object();
  }
  j.end_array();
}

void write_pool_charges(JsonWriter& j, const std::vector<ck::PoolCharge>& charges) {
  j.begin_array();
  for (const ck::PoolCharge& c : charges) {
    const auto text = [&c](ck::Amount a) {
      return ck::Decimal{a, static_cast<std::uint8_t>(c.scale)}.to_string();
    };
    j.begin_object()
        .key("pool")
        .value(c.pool)
        .key("amount")
        .value(text(c.amount))
        .key("net")
        .value(text(c.net))
        .key("gross")
        .value(text(c.gross))
        .key("total")
        .value(text(c.total))
        .key("refund")
        .value(c.refund)
        .end_object();
  }
  j.end_array();
}

std::string pools_json(const std::vector<ck::PoolStatus>& pools) {
  JsonWriter j;
  write_pools(j, pools);
  return j.take();
}

std::string decision_json(const ck::TaskModel& model, const ck::Decision& d) {
  JsonWriter j;
  write_decision(j, model, d);
  return j.take();
}

}  // namespace clampai::report
