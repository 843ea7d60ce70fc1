#include "clampai/report/compose.hpp"

#include <iomanip>

#include "encode.hpp"

namespace clampai::report {

namespace cc = clampai::composition;
namespace cv = clampai::verifier;
using detail::json;

namespace {

json compose_json(const ComposeReport& in) {
  const cc::ComposeReport& r = *in.report;
  json tasks = json::array();
  for (const auto& t : r.tasks) {
    json findings = json::array();
    for (const auto& f : t.findings) {
      json fj = {{"id", f.id},
                 {"kind", std::string(cv::to_string(f.kind))},
                 {"verdict", std::string(cv::to_string(f.verdict))},
                 {"reason", f.reason}};
      if (f.loc.line > 0) fj["location"] = detail::location(t.file, f.loc);
      if (f.counterexample) fj["counterexample"] = detail::counterexample(*f.counterexample);
      findings.push_back(fj);
    }
    json tj = {{"name", t.name},
               {"spec", t.file},
               {"digest", t.digest},
               {"reused", t.reused},
               {"proved", t.proved},
               {"refuted", t.refuted},
               {"unknown", t.unknown},
               {"warnings", t.warnings},
               {"findings", findings}};
    if (!t.cache_note.empty()) tj["cache_note"] = t.cache_note;
    tasks.push_back(tj);
  }
  json obligations = json::array();
  for (const auto& o : r.obligations) {
    json oj = {{"id", o.id},
               {"kind", std::string(cc::to_string(o.kind))},
               {"verdict", std::string(cv::to_string(o.verdict))},
               {"reason", o.reason},
               {"tasks", o.tasks},
               {"location", detail::location(o.file, o.loc)}};
    if (o.counterexample) oj["counterexample"] = detail::counterexample(*o.counterexample);
    obligations.push_back(oj);
  }
  return {{"manifest", in.manifest},
          {"summary",
           {{"proved", r.proved},
            {"refuted", r.refuted},
            {"unknown", r.unknown},
            {"tasks", r.tasks.size()},
            {"reused", r.reused},
            {"seconds", in.seconds}}},
          {"tasks", tasks},
          {"obligations", obligations}};
}

void compose_text(std::ostream& out, const ComposeReport& in) {
  const cc::ComposeReport& r = *in.report;
  std::size_t width = 4;
  for (const auto& t : r.tasks) width = std::max(width, t.name.size());
  for (const auto& t : r.tasks) {
    out << "task " << std::left << std::setw(static_cast<int>(width)) << t.name << std::right
        << "  " << t.proved << " proved, " << t.refuted << " refuted, " << t.unknown << " unknown"
        << (t.reused ? "  (certificate reused)" : "") << "\n";
    if (!t.cache_note.empty()) out << "    " << t.cache_note << "\n";
    for (const auto& f : t.findings) {
      if (f.kind == cv::ObligationKind::lint) continue;
      out << "    " << detail::upper(cv::to_string(f.verdict)) << " " << f.id << ": " << f.reason
          << "\n";
      if (f.loc.line > 0)
        out << "    at " << t.file << ":" << f.loc.line << ":" << f.loc.column << "\n";
      if (f.counterexample) detail::print_counterexample(out, *f.counterexample);
    }
  }
  for (const auto& o : r.obligations) {
    if (o.kind == cc::ObligationKind::task) continue;
    if (o.verdict == cv::VerdictKind::proved && !in.show_proved) continue;
    out << detail::upper(cv::to_string(o.verdict)) << " " << o.id << ": " << o.reason << "\n";
    if (o.verdict != cv::VerdictKind::proved && !o.file.empty()) {
      out << "    at " << o.file;
      if (o.loc.line > 0) out << ":" << o.loc.line << ":" << o.loc.column;
      out << "\n";
    }
    if (o.counterexample) detail::print_counterexample(out, *o.counterexample);
  }
  out << "summary: " << r.proved + r.refuted + r.unknown << " obligations: " << r.proved
      << " proved, " << r.refuted << " refuted, " << r.unknown << " unknown; " << r.tasks.size()
      << " task" << (r.tasks.size() == 1 ? "" : "s") << ", " << r.reused << " certificate"
      << (r.reused == 1 ? "" : "s") << " reused (" << std::fixed << std::setprecision(3)
      << in.seconds << " s)\n";
  out.unsetf(std::ios::floatfield);
}

json compose_sarif(const ComposeReport& in) {
  const cc::ComposeReport& r = *in.report;
  json results = json::array();
  auto add = [&](const std::string& rule,
                 cv::VerdictKind verdict,
                 const std::string& text,
                 const std::string& file,
                 const kernel::SourceLoc& loc,
                 const std::optional<cv::Counterexample>& cex) {
    const bool refuted = verdict == cv::VerdictKind::refuted;
    json result = detail::sarif_result(
        refuted ? rule : "obligation-unknown", refuted ? "error" : "warning", text, file, loc);
    detail::sarif_attach(result, cex ? &*cex : nullptr, {}, file);
    results.push_back(std::move(result));
  };
  for (const auto& t : r.tasks) {
    for (const auto& f : t.findings) {
      if (f.kind == cv::ObligationKind::lint) continue;
      add("task-not-verified",
          f.verdict,
          t.name + ": " + f.id + ": " + f.reason,
          t.file,
          f.loc,
          f.counterexample);
    }
  }
  for (const auto& o : r.obligations) {
    if (o.verdict == cv::VerdictKind::proved || o.kind == cc::ObligationKind::task) continue;
    add("composition-" + std::string(cc::to_string(o.kind)),
        o.verdict,
        o.id + ": " + o.reason,
        o.file,
        o.loc,
        o.counterexample);
  }
  std::vector<detail::SarifRule> rules = {
      {"task-not-verified", "A composed task's own verification fails"},
      {"obligation-unknown", "The solver could not decide an obligation"},
  };
  for (int k = 1; k <= static_cast<int>(cc::ObligationKind::forbidden); ++k) {
    const std::string kind(cc::to_string(static_cast<cc::ObligationKind>(k)));
    rules.push_back({"composition-" + kind, "A " + kind + " composition obligation is refuted"});
  }
  return detail::sarif_log(rules, std::move(results));
}

std::string where(const std::string& file, const kernel::SourceLoc& loc) {
  if (file.empty()) return "";
  std::string s = "at " + file;
  if (loc.line > 0) s += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
  return s + "\n";
}

void compose_junit(std::ostream& out, const ComposeReport& in) {
  const cc::ComposeReport& r = *in.report;
  std::vector<detail::JUnitCase> cases;
  for (const auto& o : r.obligations) {
    detail::JUnitCase c;
    c.classname = "compose." + std::string(cc::to_string(o.kind));
    c.name = o.id;
    // A task's test case: whether its certificate was reused, and every finding (not only the
    // first, which the message names) with its location and counterexample.
    const cc::TaskResult* t = nullptr;
    if (o.kind == cc::ObligationKind::task) {
      for (const auto& candidate : r.tasks)
        if (!o.tasks.empty() && candidate.name == o.tasks.front()) t = &candidate;
    }
    if (t != nullptr) {
      c.out = t->reused ? "certificate reused (model " + t->digest + ")"
                        : "verified (model " + t->digest + ")" +
                              (t->cache_note.empty() ? "" : "; " + t->cache_note);
    }
    if (o.verdict == cv::VerdictKind::proved) {
      cases.push_back(std::move(c));
      continue;
    }
    c.outcome = o.verdict == cv::VerdictKind::refuted ? "failure" : "error";
    c.type = std::string(cv::to_string(o.verdict));
    c.message = o.reason;
    c.details = where(o.file, o.loc);
    if (o.counterexample)
      c.details += detail::counterexample(*o.counterexample)
                       .dump(2, ' ', false, detail::json::error_handler_t::replace) +
                   "\n";
    if (t != nullptr) {
      json findings = json::array();
      for (const auto& f : t->findings) {
        if (f.kind == cv::ObligationKind::lint) continue;
        json fj = {
            {"id", f.id}, {"verdict", std::string(cv::to_string(f.verdict))}, {"reason", f.reason}};
        if (f.loc.line > 0) fj["location"] = detail::location(t->file, f.loc);
        if (f.counterexample) fj["counterexample"] = detail::counterexample(*f.counterexample);
        findings.push_back(fj);
      }
      c.details += findings.dump(2, ' ', false, detail::json::error_handler_t::replace) + "\n";
    }
    cases.push_back(std::move(c));
  }
  detail::write_junit(out, "clampai compose", in.manifest, in.seconds, cases);
}

}  // namespace

void write_compose(std::ostream& out, Format format, const ComposeReport& r) {
  switch (format) {
    case Format::text:
      compose_text(out, r);
      return;
    case Format::json:
      out << compose_json(r).dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
      return;
    case Format::sarif:
      out << compose_sarif(r).dump(2, ' ', false, detail::json::error_handler_t::replace) << "\n";
      return;
    case Format::junit:
      compose_junit(out, r);
      return;
  }
}

}  // namespace clampai::report
