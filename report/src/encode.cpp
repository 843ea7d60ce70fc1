#include "encode.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iomanip>
#include <variant>

#include "clampai/driver/lookahead.hpp"
#include "clampai/report/wire.hpp"

namespace clampai::report::detail {

json reasons(const std::vector<kernel::Reason>& rs) { return json::parse(reasons_json(rs)); }

json ledger(const LedgerSection& l) {
  if (const auto* e = std::get_if<EscrowLedgerStats>(&l.stats)) {
    return {{"url", l.url},
            {"mode", "escrow"},
            {"leases", e->leases},
            {"flushes", e->flushes},
            {"commits", e->commits},
            {"expired", e->expired}};
  }
  const auto& s = std::get<kernel::SharedStats>(l.stats);
  return {{"url", l.url},
          {"commits", s.commits},
          {"conflicts", s.conflicts},
          {"replayed", s.applied},
          {"reconnects", s.reconnects}};
}

json pools(const std::vector<kernel::PoolStatus>& pools) { return json::parse(pools_json(pools)); }

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

json named_values(const std::vector<std::pair<std::string, kernel::Value>>& values) {
  json o = json::object();
  for (const auto& [k, v] : values) o[k] = v.to_string();
  return o;
}

json counterexample(const verifier::Counterexample& c, bool all) {
  json j = {{"pre", named_values(c.pre)}};
  if (all || !c.params.empty()) j["params"] = named_values(c.params);
  if (all || !c.post.empty()) j["post"] = named_values(c.post);
  return j;
}

json plan(const kernel::TaskModel& m, const driver::Plan& p) {
  json out = json::array();
  for (const auto& s : p) {
    json params = json::object();
    for (std::size_t i = 0; i < s.params.size(); ++i)
      params[m.actions[s.action].parameters[i].name] = s.params[i].to_string();
    out.push_back({{"action", m.actions[s.action].id},
                   {"params", params},
                   {"cost", m.format_amount(s.cost)}});
  }
  return out;
}

json location(const std::string& file, const kernel::SourceLoc& loc) {
  json j = {{"file", file}};
  if (loc.line > 0) {
    j["line"] = loc.line;
    j["column"] = loc.column;
  }
  return j;
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

json physical(const std::string& file, std::uint32_t line, std::uint32_t column) {
  json p = {{"artifactLocation", {{"uri", uri(file)}}}};
  if (line > 0) {
    p["region"] = {{"startLine", line}};
    if (column > 0) p["region"]["startColumn"] = column;
  }
  return p;
}

}  // namespace

json sarif_result(const std::string& rule,
                  const std::string& level,
                  const std::string& text,
                  const std::string& file,
                  const kernel::SourceLoc& loc) {
  json r = {{"ruleId", rule}, {"level", level}, {"message", {{"text", text}}}};
  if (!file.empty())
    r["locations"] = json::array({{{"physicalLocation", physical(file, loc.line, loc.column)}}});
  return r;
}

void sarif_attach(json& result,
                  const verifier::Counterexample* cex,
                  const std::vector<std::pair<std::string, kernel::SourceLoc>>& steps,
                  const std::string& file) {
  if (cex != nullptr) result["properties"]["counterexample"] = counterexample(*cex, true);
  if (steps.empty()) return;
  json replay = json::array();
  json flow = json::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& [text, loc] = steps[i];
    replay.push_back(text);
    json where = {{"message", {{"text", "step " + std::to_string(i + 1) + ": " + text}}}};
    if (!file.empty()) where["physicalLocation"] = physical(file, loc.line, loc.column);
    flow.push_back({{"location", where}, {"executionOrder", i + 1}});
  }
  if (result.contains("locations")) {  // the flow ends where the finding is
    json last = result["locations"][0];
    last["message"] = result["message"];
    flow.push_back({{"location", last}, {"executionOrder", steps.size() + 1}});
  }
  result["properties"]["replay"] = replay;
  result["codeFlows"] =
      json::array({{{"message", {{"text", "replayed through the kernel from the initial state"}}},
                    {"threadFlows", json::array({{{"locations", flow}}})}}});
}

json sarif_log(const std::vector<SarifRule>& rules, json results, const Failure* failure) {
  json rule_list = json::array();
  for (const auto& r : rules)
    rule_list.push_back({{"id", r.id}, {"shortDescription", {{"text", r.description}}}});
  json invocation = {{"executionSuccessful", failure == nullptr}};
  if (failure != nullptr) {
    invocation["exitCode"] = failure->exit_code;
    json note = {{"level", "error"},
                 {"message", {{"text", failure->message}}},
                 {"descriptor", {{"id", failure->internal ? "internal-error" : "bad-input"}}}};
    if (!failure->location.file.empty()) {
      note["locations"] = json::array(
          {{{"physicalLocation",
             physical(failure->location.file, failure->location.line, failure->location.column)}}});
    }
    invocation["toolExecutionNotifications"] = json::array({note});
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           json::array({{{"tool",
                          {{"driver",
                            {{"name", "clampai"},
                             {"version", std::string(tool_version())},
                             {"informationUri", "https://clampai.dev"},
                             {"rules", rule_list}}}}},
                         {"invocations", json::array({invocation})},
                         {"results", std::move(results)}}})}};
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
