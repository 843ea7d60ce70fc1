#include "encode.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iomanip>
#include <variant>

#include "clampai/driver/lookahead.hpp"

namespace clampai::report::detail {

void write_ledger(JsonWriter& j, const LedgerSection& l) {
  j.begin_object().key("url").value(l.url);
  if (const auto* e = std::get_if<EscrowLedgerStats>(&l.stats)) {
    j.key("mode").value("escrow");
    j.key("leases").value(e->leases).key("flushes").value(e->flushes);
    j.key("commits").value(e->commits).key("expired").value(e->expired);
  } else {
    const auto& s = std::get<kernel::SharedStats>(l.stats);
    j.key("commits").value(s.commits).key("conflicts").value(s.conflicts);
    j.key("replayed").value(s.applied).key("reconnects").value(s.reconnects);
  }
  j.end_object();
}

void print_pools(std::ostream& out, const std::vector<kernel::PoolStatus>& pools) {
  for (const kernel::PoolStatus& p : pools) {
    out << "  pool        " << p.name << (p.parent.empty() ? "" : " (in " + p.parent + ")") << ": "
        << p.format(p.net) << " of " << p.format(p.total) << " (gross " << p.format(p.gross)
        << ")\n";
  }
}

void print_ledger(std::ostream& out, const LedgerSection& l) {
  if (const auto* e = std::get_if<EscrowLedgerStats>(&l.stats)) {
    out << "ledger: " << l.url << ": " << e->commits << " commits by this process in " << e->leases
        << " leases, " << e->flushes << " flushes; " << e->expired
        << " stale leases of others expired\n";
    return;
  }
  const auto& s = std::get<kernel::SharedStats>(l.stats);
  out << "ledger: " << l.url << ": " << s.commits << " commits by this process, " << s.conflicts
      << " conflicts retried, " << s.applied << " entries of other processes replayed\n";
}

void write_named_values(JsonWriter& j,
                        const std::vector<std::pair<std::string, kernel::Value>>& values) {
  j.begin_object();
  for (const auto& [k, v] : values) j.key(k).value(v.to_string());
  j.end_object();
}

void write_counterexample(JsonWriter& j, const verifier::Counterexample& c, bool all) {
  j.begin_object().key("pre");
  write_named_values(j, c.pre);
  if (all || !c.params.empty()) write_named_values(j.key("params"), c.params);
  if (all || !c.post.empty()) write_named_values(j.key("post"), c.post);
  j.end_object();
}

std::string counterexample_text(const verifier::Counterexample& c) {
  JsonWriter j = report_writer();
  write_counterexample(j, c);
  return j.take();
}

void write_plan(JsonWriter& j, const kernel::TaskModel& m, const driver::Plan& p) {
  j.begin_array();
  for (const auto& s : p) {
    const kernel::Action& a = m.actions[s.action];
    j.begin_object().key("action").value(a.id).key("params").begin_object();
    for (std::size_t i = 0; i < s.params.size(); ++i)
      j.key(a.parameters[i].name).value(s.params[i].to_string());
    j.end_object().key("cost").value(m.format_amount(s.cost)).end_object();
  }
  j.end_array();
}

void write_location(JsonWriter& j, const std::string& file, const kernel::SourceLoc& loc) {
  j.begin_object().key("file").value(file);
  if (loc.line > 0) j.key("line").value(loc.line).key("column").value(loc.column);
  j.end_object();
}

void print_counterexample(std::ostream& out, const verifier::Counterexample& cex) {
  std::size_t width = 8;
  for (const auto& [name, _] : cex.pre) width = std::max(width, name.size());
  const auto w = static_cast<int>(width);
  out << "    " << std::left << std::setw(w) << "variable"
      << "  " << (cex.post.empty() ? "value\n" : "before            after\n");
  for (std::size_t i = 0; i < cex.pre.size(); ++i) {
    if (cex.post.empty()) {  // a state, not a transition (base case)
      out << "    " << std::setw(w) << cex.pre[i].first << "  " << cex.pre[i].second.to_string()
          << "\n";
      continue;
    }
    const std::string before = cex.pre[i].second.to_string();
    const std::string after = cex.post[i].second.to_string();
    out << "    " << std::setw(w) << cex.pre[i].first << "  " << std::setw(16) << before << "  "
        << after << (after != before ? "   (changed)" : "") << "\n";
  }
  if (!cex.params.empty()) {
    out << "    with";
    for (const auto& [name, v] : cex.params) out << " " << name << " = " << v.to_string();
    out << "\n";
  }
  out << std::right;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string rejections_by_reason(std::uint64_t rejected,
                                 const std::map<std::string, std::uint64_t>& by_reason) {
  std::string out;
  std::uint64_t reasons = 0;
  for (const auto& [code, n] : by_reason) {
    out += (out.empty() ? "" : ", ") + code + " " + std::to_string(n);
    reasons += n;
  }
  if (reasons != rejected)
    out += "; " + std::to_string(reasons) + " reasons for " + std::to_string(rejected) +
           " rejection" + (rejected == 1 ? "" : "s") + ": one rejection can have several";
  return out;
}

// ---- SARIF ----

namespace {

// A file path as a URI reference: RFC 3986 unreserved characters and `/` stay, the rest is
// percent-encoded (a space, `#`, `%`, non-ASCII bytes).
std::string uri(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void write_physical(JsonWriter& j,
                    const std::string& file,
                    std::uint32_t line,
                    std::uint32_t column) {
  j.begin_object().key("artifactLocation").begin_object().key("uri").value(uri(file)).end_object();
  if (line > 0) {
    j.key("region").begin_object().key("startLine").value(line);
    if (column > 0) j.key("startColumn").value(column);
    j.end_object();
  }
  j.end_object();
}

void write_text(JsonWriter& j, std::string_view key, std::string_view text) {
  j.key(key).begin_object().key("text").value(text).end_object();
}

void write_sarif_result(JsonWriter& j, const SarifResult& r) {
  j.begin_object().key("ruleId").value(r.rule).key("level").value(r.level);
  write_text(j, "message", r.text);
  if (!r.file.empty()) {
    j.key("locations").begin_array().begin_object().key("physicalLocation");
    write_physical(j, r.file, r.loc.line, r.loc.column);
    j.end_object().end_array();
  }
  if (r.counterexample != nullptr || !r.steps.empty() || r.properties) {
    j.key("properties").begin_object();
    if (r.counterexample != nullptr)
      write_counterexample(j.key("counterexample"), *r.counterexample, true);
    if (!r.steps.empty()) {
      j.key("replay").begin_array();
      for (const auto& step : r.steps) j.value(step.first);
      j.end_array();
    }
    if (r.properties) r.properties(j);
    j.end_object();
  }
  if (!r.steps.empty()) {
    j.key("codeFlows").begin_array().begin_object();
    write_text(j, "message", "replayed through the kernel from the initial state");
    j.key("threadFlows").begin_array().begin_object().key("locations").begin_array();
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const auto& [text, loc] = r.steps[i];
      j.begin_object().key("location").begin_object();
      write_text(j, "message", "step " + std::to_string(i + 1) + ": " + text);
      if (!r.file.empty()) write_physical(j.key("physicalLocation"), r.file, loc.line, loc.column);
      j.end_object().key("executionOrder").value(i + 1).end_object();
    }
    if (!r.file.empty()) {  // the flow ends where the finding is
      j.begin_object().key("location").begin_object();
      write_physical(j.key("physicalLocation"), r.file, r.loc.line, r.loc.column);
      write_text(j, "message", r.text);
      j.end_object().key("executionOrder").value(r.steps.size() + 1).end_object();
    }
    j.end_array().end_object().end_array().end_object().end_array();
  }
  j.end_object();
}

}  // namespace

void write_sarif_log(JsonWriter& j,
                     const std::vector<SarifRule>& rules,
                     const std::vector<SarifResult>& results,
                     const Failure* failure) {
  j.begin_object();
  j.key("$schema").value("https://json.schemastore.org/sarif-2.1.0.json");
  j.key("version").value("2.1.0");
  j.key("runs").begin_array().begin_object();
  j.key("tool").begin_object().key("driver").begin_object();
  j.key("name").value("clampai").key("version").value(tool_version());
  j.key("informationUri").value("https://clampai.dev");
  j.key("rules").begin_array();
  for (const auto& r : rules) {
    j.begin_object().key("id").value(r.id);
    write_text(j, "shortDescription", r.description);
    j.end_object();
  }
  j.end_array().end_object().end_object();
  j.key("invocations").begin_array().begin_object();
  j.key("executionSuccessful").value(failure == nullptr);
  if (failure != nullptr) {
    j.key("exitCode").value(failure->exit_code);
    j.key("toolExecutionNotifications").begin_array().begin_object();
    j.key("level").value("error");
    write_text(j, "message", failure->message);
    j.key("descriptor").begin_object();
    j.key("id").value(failure->internal ? "internal-error" : "bad-input").end_object();
    if (!failure->location.file.empty()) {
      j.key("locations").begin_array().begin_object().key("physicalLocation");
      const Location& at = failure->location;
      write_physical(j, at.file, at.line, at.column);
      j.end_object().end_array();
    }
    j.end_object().end_array();
  }
  j.end_object().end_array();
  j.key("results").begin_array();
  for (const SarifResult& r : results) write_sarif_result(j, r);
  j.end_array();
  j.end_object().end_array().end_object();
}

// ---- XML and JUnit ----

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms,
// no surrogates, at most U+10FFFF), or 0.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string xml(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t n = utf8_length(s.substr(i));
      if (n == 0) {
        out += '?';
        ++i;
      } else {
        out += s.substr(i, n);
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

std::string junit_time(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds > 0 && seconds < 1e12 ? seconds : 0.0);
  return buf;
}

void write_junit(std::ostream& os,
                 const std::string& suites,
                 const std::string& suite,
                 double seconds,
                 const std::vector<JUnitCase>& cases) {
  std::size_t failures = 0, errors = 0, skipped = 0;
  for (const auto& c : cases) {
    failures += c.outcome == "failure";
    errors += c.outcome == "error";
    skipped += c.outcome == "skipped";
  }
  const std::string counts = "tests=\"" + std::to_string(cases.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"" + std::to_string(errors) +
                             "\"";
  const std::string time = " time=\"" + junit_time(seconds) + "\"";
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<testsuites name=\"" << xml(suites) << "\" " << counts << time << ">\n"
     << "  <testsuite name=\"" << xml(suite) << "\" " << counts << " skipped=\"" << skipped << "\""
     << time << ">\n";
  for (const auto& c : cases) {
    os << "    <testcase classname=\"" << xml(c.classname) << "\" name=\"" << xml(c.name) << "\"";
    if (c.outcome.empty() && c.out.empty()) {
      os << "/>\n";
      continue;
    }
    os << ">\n";
    if (!c.outcome.empty()) {
      os << "      <" << c.outcome << " message=\"" << xml(c.message) << "\"";
      if (!c.type.empty()) os << " type=\"" << xml(c.type) << "\"";
      if (c.details.empty()) {
        os << "/>\n";
      } else {
        os << ">" << xml(c.details) << "</" << c.outcome << ">\n";
      }
    }
    if (!c.out.empty()) os << "      <system-out>" << xml(c.out) << "</system-out>\n";
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
}

}  // namespace clampai::report::detail
