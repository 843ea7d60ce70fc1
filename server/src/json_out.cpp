// The response writer: plain string building, escaping as RFC 8259 requires.
#include "json_out.hpp"

#include "clampai/kernel/json.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

namespace {

// The length of the valid UTF-8 sequence at `s[i]` (a byte >= 0x80), or 0 if there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;
    if (c == 0xF4 && b(1) >= 0x90) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      // Messages echo client input: an invalid UTF-8 sequence becomes U+FFFD, so the
      // response stays valid JSON.
      const std::size_t n = utf8_sequence(s, i);
      if (n == 0) {
        out += "\ufffd";
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 15]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void JsonOut::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
}

JsonOut& JsonOut::begin_object() {
  separate();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}

JsonOut& JsonOut::end_object() {
  out_.push_back('}');
  first_.pop_back();
  return *this;
}

JsonOut& JsonOut::begin_array() {
  separate();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}

JsonOut& JsonOut::end_array() {
  out_.push_back(']');
  first_.pop_back();
  return *this;
}

JsonOut& JsonOut::key(std::string_view k) {
  separate();
  append_json_string(out_, k);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonOut& JsonOut::value(std::string_view s) {
  separate();
  append_json_string(out_, s);
  return *this;
}

JsonOut& JsonOut::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}

JsonOut& JsonOut::value(std::int64_t i) {
  separate();
  out_ += std::to_string(i);
  return *this;
}

JsonOut& JsonOut::value(std::uint64_t u) {
  separate();
  out_ += std::to_string(u);
  return *this;
}

JsonOut& JsonOut::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonOut& JsonOut::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

JsonOut& JsonOut::value(const ck::Value& v) {
  separate();
  // value_to_json gives integers within 2^53 and decimal strings: always canonical.
  if (!ck::jsonio::append_canonical(out_, ck::jsonio::value_to_json(v))) out_ += "null";
  return *this;
}

void write_reasons(JsonOut& j, const std::vector<ck::Reason>& reasons) {
  j.begin_array();
  for (const ck::Reason& r : reasons) {
    j.begin_object()
        .key("code")
        .value(ck::to_string(r.code))
        .key("subject")
        .value(r.subject)
        .key("message")
        .value(r.message)
        .end_object();
  }
  j.end_array();
}

void write_decision_members(JsonOut& j,
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

void write_state(JsonOut& j, const ck::State& s) {
  j.begin_object();
  for (std::size_t i = 0; i < s.size(); ++i)
    j.key(s.schema().name(static_cast<ck::VarId>(i))).value(s.get(static_cast<ck::VarId>(i)));
  j.end_object();
}

void write_budget(JsonOut& j, const ck::TaskModel& model, const ck::BudgetController& b) {
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

std::string compact_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false, escaped = false;
  for (const char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else if (c == '"') {
      in_string = true;
    }
    out += c;
  }
  return out;
}

}  // namespace clampai::server
