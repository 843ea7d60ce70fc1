#include "clampai/report/compose.hpp"

#include <iomanip>

#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

namespace cc = clampai::composition;
namespace cv = clampai::verifier;

namespace {

// A task's finding: `{"id", "kind"?, "verdict", "reason", "location"?, "counterexample"?}`.
void write_finding(JsonWriter& j, const cc::TaskResult& t, const cv::Obligation& f, bool kind) {
  j.begin_object().key("id").value(f.id);
  if (kind) j.key("kind").value(cv::to_string(f.kind));
  j.key("verdict").value(cv::to_string(f.verdict)).key("reason").value(f.reason);
  if (f.loc.line > 0) detail::write_location(j.key("location"), t.file, f.loc);
  if (f.counterexample) detail::write_counterexample(j.key("counterexample"), *f.counterexample);
  j.end_object();
}

std::string compose_json(const ComposeReport& in) {
  const cc::ComposeReport& r = *in.report;
  JsonWriter j = detail::report_writer();
  j.begin_object().key("manifest").value(in.manifest);
  j.key("summary").begin_object().key("proved").value(r.proved).key("refuted").value(r.refuted);
  j.key("unknown").value(r.unknown).key("tasks").value(r.tasks.size());
  j.key("reused").value(r.reused).key("seconds").value(in.seconds).end_object();
  j.key("tasks").begin_array();
  for (const auto& t : r.tasks) {
    j.begin_object().key("name").value(t.name).key("spec").value(t.file);
    j.key("digest").value(t.digest).key("reused").value(t.reused);
    j.key("proved").value(t.proved).key("refuted").value(t.refuted);
    j.key("unknown").value(t.unknown).key("warnings").value(t.warnings);
    j.key("findings").begin_array();
    for (const auto& f : t.findings) write_finding(j, t, f, true);
    j.end_array();
    if (!t.cache_note.empty()) j.key("cache_note").value(t.cache_note);
    j.end_object();
  }
  j.end_array().key("obligations").begin_array();
  for (const auto& o : r.obligations) {
    j.begin_object().key("id").value(o.id).key("kind").value(cc::to_string(o.kind));
    j.key("verdict").value(cv::to_string(o.verdict)).key("reason").value(o.reason);
    j.key("tasks").array_of(o.tasks);
    detail::write_location(j.key("location"), o.file, o.loc);
    if (o.counterexample) detail::write_counterexample(j.key("counterexample"), *o.counterexample);
    j.end_object();
  }
  return j.end_array().end_object().take();
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

std::string compose_sarif(const ComposeReport& in) {
  const cc::ComposeReport& r = *in.report;
  std::vector<detail::SarifResult> results;
  auto add = [&](const std::string& rule,
                 cv::VerdictKind verdict,
                 const std::string& text,
                 const std::string& file,
                 const kernel::SourceLoc& loc,
                 const std::optional<cv::Counterexample>& cex) {
    const bool refuted = verdict == cv::VerdictKind::refuted;
    detail::SarifResult result;
    result.rule = refuted ? rule : "obligation-unknown";
    result.level = refuted ? "error" : "warning";
    result.text = text;
    result.file = file;
    result.loc = loc;
    result.counterexample = cex ? &*cex : nullptr;
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
  JsonWriter j = detail::report_writer();
  detail::write_sarif_log(j, rules, results);
  return j.take();
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
    if (o.counterexample) c.details += detail::counterexample_text(*o.counterexample) + "\n";
    if (t != nullptr) {
      JsonWriter findings = detail::report_writer();
      findings.begin_array();
      for (const auto& f : t->findings)
        if (f.kind != cv::ObligationKind::lint) write_finding(findings, *t, f, false);
      c.details += findings.end_array().take() + "\n";
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
      out << compose_json(r) << "\n";
      return;
    case Format::sarif:
      out << compose_sarif(r) << "\n";
      return;
    case Format::junit:
      compose_junit(out, r);
      return;
  }
}

}  // namespace clampai::report
