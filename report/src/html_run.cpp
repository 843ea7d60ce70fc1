// The HTML report's section of a run: its trace read streaming (any length, in bounded
// memory), replayed through the kernel with a spec, drawn in at most `buckets` points.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/trace_reader.hpp"
#include "clampai/report/live_charts.hpp"
#include "html_page.hpp"

namespace clampai::report::html {

namespace {

namespace ck = clampai::kernel;

// A comparison invariant `a <= b` (`<`, `>=`, `>`) over numbers, whose margin is `b - a`
// (`a - b` for `>=` and `>`): how far the state is from breaking it.
struct Comparison {
  std::size_t invariant = 0;
  const ck::Expr* low = nullptr;   // the side that must stay below
  const ck::Expr* high = nullptr;  // the side that must stay above
  std::optional<ck::Decimal> current{};
  std::optional<ck::Decimal> least{};
  std::uint64_t least_at = 0;
};

std::optional<ck::Decimal> margin(const Comparison& c, const ck::State& state) {
  ck::EvalEnv env;
  env.state = &state;
  ck::Decimal lo;
  ck::Decimal hi;
  if (ck::evaluate_number(*c.low, env, lo) != ck::EvalError::none) return std::nullopt;
  if (ck::evaluate_number(*c.high, env, hi) != ck::EvalError::none) return std::nullopt;
  return ck::checked_sub(hi, lo);
}

double to_double(const ck::Decimal& d) { return value_of(d.to_string()); }

// Entries [first, last] of the trace: the figures after the last, the decisions counted.
struct Bucket {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t step = 0;  // after the last entry
  std::string net;
  std::string gross;
  std::uint64_t executed = 0;
  std::uint64_t rejected = 0;
  std::uint64_t rolled_back = 0;
  std::uint64_t attested = 0;
  std::string what;  // the single entry's action and outcome, for its tooltip
  std::vector<std::optional<ck::Decimal>> least;  // per comparison invariant
};

std::optional<ck::Decimal> lesser(const std::optional<ck::Decimal>& a,
                                  const std::optional<ck::Decimal>& b) {
  if (!a) return b;
  if (!b) return a;
  return *b < *a ? b : a;
}

void merge_into(Bucket& a, const Bucket& b) {
  a.last = b.last;
  a.step = b.step;
  a.net = b.net;
  a.gross = b.gross;
  a.executed += b.executed;
  a.rejected += b.rejected;
  a.rolled_back += b.rolled_back;
  a.attested += b.attested;
  a.what.clear();
  for (std::size_t i = 0; i < a.least.size(); ++i) a.least[i] = lesser(a.least[i], b.least[i]);
}

// What the section gathers from the trace, in memory bounded by the buckets, the reason codes
// and actions, and the first rejections kept for the table.
struct Run {
  std::size_t max_buckets = 240;
  std::string unit = "entry";  // what the horizontal axis counts
  std::string x_title = "trace entry";
  std::uint64_t width = 1;  // entries per bucket
  std::vector<Bucket> buckets;
  std::uint64_t entries = 0;
  std::uint64_t executed = 0;
  std::uint64_t rejected = 0;
  std::uint64_t rolled_back = 0;
  std::uint64_t attested = 0;
  std::uint64_t emergency_steps = 0;
  std::uint64_t step = 0;
  std::string net = "0";
  std::string gross = "0";
  std::string head;
  std::string spec_digest;
  bool seen_seal = false;
  std::map<std::string, std::uint64_t> by_reason;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_action;  // executed, rejected
  struct Rejection {
    std::uint64_t seq = 0;
    std::uint64_t step = 0;
    std::string action;
    std::string reasons;
  };
  std::vector<Rejection> rejections;  // the first kRejectionRows
  std::vector<Comparison> comparisons;
  std::vector<std::size_t> others;           // the other invariants' indices
  std::vector<std::uint64_t> others_broken;  // states where each was false
  std::optional<ck::State> previous;         // for transition invariants
};

constexpr std::size_t kRejectionRows = 50;

std::string outcome_of(ck::EntryKind k) {
  switch (k) {
    case ck::EntryKind::executed:
      return "executed";
    case ck::EntryKind::rejected:
      return "rejected";
    case ck::EntryKind::rolled_back:
      return "rolled back";
    case ck::EntryKind::attested:
      return "attested";
    case ck::EntryKind::genesis:
      return "genesis";
    case ck::EntryKind::sealed:
      return "sealed";
    case ck::EntryKind::checkpoint:
    case ck::EntryKind::approval_requested:
    case ck::EntryKind::approval_granted:
    case ck::EntryKind::approval_denied:
    case ck::EntryKind::approval_expired:
    case ck::EntryKind::spec_changed:
    case ck::EntryKind::compensated: {
      std::string name(ck::to_string(k));
      std::replace(name.begin(), name.end(), '_', ' ');
      return name;
    }
  }
  return "";
}

void observe_state(Run& run, const ck::TaskModel& model, const ck::State& state, bool transition) {
  for (auto& c : run.comparisons) {
    c.current = margin(c, state);
    if (c.current && (!c.least || *c.current < *c.least)) {
      c.least = c.current;
      c.least_at = run.entries - 1;
    }
  }
  for (std::size_t k = 0; k < run.others.size(); ++k) {
    const ck::Invariant& inv = model.invariants[run.others[k]];
    if (!inv.expr) continue;
    if (inv.transition && (!transition || !run.previous)) continue;
    ck::EvalEnv env;
    env.state = &state;
    env.old = inv.transition ? &*run.previous : nullptr;
    bool holds = false;
    if (ck::evaluate_bool(*inv.expr, env, holds) != ck::EvalError::none || !holds)
      ++run.others_broken[k];
  }
  run.previous = state;
}

void add_entry(Run& run,
               const ck::TraceEntry& e,
               const ck::TaskModel* model,
               const ck::TraceReplay* replay) {
  ++run.entries;
  run.step = e.step;
  run.emergency_steps = e.emergency_steps;
  run.net = e.net;
  run.gross = e.gross;
  run.head = e.hash;
  if (e.kind == ck::EntryKind::genesis) run.spec_digest = e.spec;
  if (e.kind == ck::EntryKind::sealed) run.seen_seal = true;
  Bucket b;
  b.first = b.last = e.sequence;
  b.step = e.step;
  b.net = e.net;
  b.gross = e.gross;
  b.what = run.unit + " " + std::to_string(e.sequence) + ": " + outcome_of(e.kind) +
           (e.action.empty() ? "" : " " + e.action);
  switch (e.kind) {
    case ck::EntryKind::executed:
      ++run.executed;
      ++b.executed;
      ++run.by_action[e.action].first;
      break;
    case ck::EntryKind::rejected: {
      ++run.rejected;
      ++b.rejected;
      ++run.by_action[e.action].second;
      std::string reasons;
      for (const auto& r : e.reasons) {
        const std::string code(ck::to_string(r.code));
        ++run.by_reason[code];
        reasons += (reasons.empty() ? "" : "; ") + code + ": " + r.message;
        if (b.what.find(code) == std::string::npos) b.what += " (" + code + ")";
      }
      if (run.rejections.size() < kRejectionRows)
        run.rejections.push_back({e.sequence, e.step, e.action, reasons});
      break;
    }
    case ck::EntryKind::rolled_back:
      ++run.rolled_back;
      ++b.rolled_back;
      break;
    case ck::EntryKind::attested:
      ++run.attested;
      ++b.attested;
      break;
    default:
      break;
  }
  if (model != nullptr && replay != nullptr &&
      (e.kind == ck::EntryKind::genesis || e.kind == ck::EntryKind::executed ||
       e.kind == ck::EntryKind::rolled_back || e.kind == ck::EntryKind::compensated))
    observe_state(run, *model, replay->state(), e.kind != ck::EntryKind::genesis);
  for (const auto& c : run.comparisons) b.least.push_back(c.current);
  // Into the last bucket while it has room; a new one else; when there are twice as many
  // buckets as drawn, neighbours merge (each bucket then holds twice as many entries).
  if (!run.buckets.empty() && run.buckets.back().last - run.buckets.back().first + 1 < run.width) {
    merge_into(run.buckets.back(), b);
  } else {
    run.buckets.push_back(std::move(b));
  }
  if (run.buckets.size() > run.max_buckets) {
    std::vector<Bucket> merged;
    merged.reserve(run.max_buckets);
    for (std::size_t i = 0; i + 1 < run.buckets.size(); i += 2) {
      merged.push_back(std::move(run.buckets[i]));
      merge_into(merged.back(), run.buckets[i + 1]);
    }
    if (run.buckets.size() % 2 == 1) merged.push_back(std::move(run.buckets.back()));
    run.buckets = std::move(merged);
    run.width *= 2;
  }
}

std::string spend_chart(const Run& run, const ck::TaskModel* model) {
  Frame f;
  f.height = 280;
  f.x0 = 0;
  f.x1 = static_cast<double>(std::max<std::uint64_t>(run.entries, 2) - 1);
  double top = value_of(run.gross);
  std::string total;
  if (model != nullptr) {
    total = model->format_amount(model->budget.total);
    top = std::max(top, value_of(total));
  }
  for (const auto& b : run.buckets) top = std::max({top, value_of(b.gross), value_of(b.net)});
  f.y1 = top > 0 ? top * 1.08 : 1;
  std::string s = f.open("spend",
                         "net and gross spend per " + run.x_title +
                             (total.empty() ? std::string() : " against the budget " + total),
                         "data-final-net=\"" + esc(run.net) + "\" data-final-gross=\"" +
                             esc(run.gross) + "\" data-total=\"" + esc(total) +
                             "\" data-entries=\"" + std::to_string(run.entries) +
                             "\" data-points=\"" + std::to_string(run.buckets.size()) + "\"") +
                  f.axes(run.x_title, "spend");
  if (!total.empty()) {
    const double y = f.y(value_of(total));
    s += "<g class=\"t1\"><title>budget " + esc(total) +
         " (T1: net spend never exceeds it)</title><line class=\"budget\" x1=\"" + num(f.x(f.x0)) +
         "\" y1=\"" + num(y) + "\" x2=\"" + num(f.x(f.x1)) + "\" y2=\"" + num(y) +
         "\"/><text x=\"" + num(f.x(f.x1) + 6) + "\" y=\"" + num(y + 4) + "\">budget " +
         esc(total) + " (T1)</text></g>";
  }
  std::string net = "M";
  std::string gross = "M";
  for (std::size_t i = 0; i < run.buckets.size(); ++i) {
    const Bucket& b = run.buckets[i];
    const std::string x = num(f.x(static_cast<double>(b.last)));
    net += (i ? " L" : "") + x + " " + num(f.y(value_of(b.net)));
    gross += (i ? " L" : "") + x + " " + num(f.y(value_of(b.gross)));
  }
  s += "<path class=\"net\" d=\"" + net +
       "\"><title>net spend (charges less refunds)</title></path>";
  s += "<path class=\"gross\" d=\"" + gross +
       "\"><title>gross spend (every charge, refunds not "
       "deducted; never decreases, T4)</title></path>";
  if (run.buckets.size() <= 80) {
    for (const Bucket& b : run.buckets) {
      s += marker("square", f.x(static_cast<double>(b.last)), f.y(value_of(b.gross)), 3, "gross");
      s += marker("circle", f.x(static_cast<double>(b.last)), f.y(value_of(b.net)), 3, "net");
    }
  }
  const double end = f.x(f.x1) + 6;
  const double ny = f.y(value_of(run.net));
  double gy = f.y(value_of(run.gross));
  if (std::abs(gy - ny) < 14) gy = ny - 14;
  s += "<text x=\"" + num(end) + "\" y=\"" + num(ny + 4) + "\">net " + esc(run.net) + "</text>";
  s += "<text x=\"" + num(end) + "\" y=\"" + num(gy + 4) + "\">gross " + esc(run.gross) + "</text>";
  return s + "</svg>";
}

std::string timeline_chart(const Run& run) {
  Frame f;
  f.height = 190;
  f.x0 = 0;
  f.x1 = static_cast<double>(std::max<std::uint64_t>(run.entries, 2) - 1);
  f.y0 = 0;
  f.y1 = 4;
  struct Lane {
    const char* name;
    const char* shape;
    const char* cls;
    std::uint64_t Bucket::*count;
  };
  const Lane lanes[] = {{"executed", "circle", "ok", &Bucket::executed},
                        {"rejected", "cross", "bad", &Bucket::rejected},
                        {"rolled back", "triangle", "rb", &Bucket::rolled_back},
                        {"attested", "diamond", "att", &Bucket::attested}};
  std::string s = f.open("timeline",
                         "decisions over the trace, by outcome",
                         "data-executed=\"" + std::to_string(run.executed) + "\" data-rejected=\"" +
                             std::to_string(run.rejected) + "\" data-rolled-back=\"" +
                             std::to_string(run.rolled_back) + "\"") +
                  f.axes(run.x_title, "");
  std::uint64_t most = 1;
  for (const Bucket& b : run.buckets)
    for (const Lane& l : lanes) most = std::max(most, b.*(l.count));
  const double room = (f.width - f.left - f.right) /
                      static_cast<double>(std::max<std::size_t>(run.buckets.size(), 1));
  const double full = std::clamp(room / 2, 2.0, 7.0);
  for (int i = 0; i < 4; ++i) {
    const Lane& l = lanes[i];
    const double y = f.y(3.5 - i);
    s += "<text class=\"lane\" x=\"" + num(f.left - 6) + "\" y=\"" + num(y + 4) +
         "\" text-anchor=\"end\">" + l.name + "</text>";
    for (const Bucket& b : run.buckets) {
      const std::uint64_t n = b.*(l.count);
      if (n == 0) continue;
      const double r =
          std::max(2.0, full * std::sqrt(static_cast<double>(n) / static_cast<double>(most)));
      const double x = f.x((static_cast<double>(b.first) + static_cast<double>(b.last)) / 2);
      const std::string title = b.first == b.last && !b.what.empty()
                                    ? b.what
                                    : run.unit + "s " + std::to_string(b.first) + "–" +
                                          std::to_string(b.last) + ": " + std::to_string(n) + " " +
                                          l.name;
      s += "<g class=\"mark\" data-outcome=\"" + std::string(l.name) + "\" data-first=\"" +
           std::to_string(b.first) + "\" data-last=\"" + std::to_string(b.last) +
           "\" data-count=\"" + std::to_string(n) + "\"><title>" + esc(title) + "</title>" +
           marker(l.shape, x, y, r, l.cls) + "</g>";
    }
  }
  return s + "</svg>";
}

std::string reasons_chart(const Run& run) {
  if (run.by_reason.empty())
    return "<p>No rejection is recorded in this trace" +
           std::string(run.rejected == 0 ? " (a run records them with "
                                           "<code>--record-rejections</code>)"
                                         : "") +
           ".</p>";
  std::vector<std::pair<std::string, std::uint64_t>> rows(run.by_reason.begin(),
                                                          run.by_reason.end());
  std::stable_sort(
      rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  Frame f;
  f.left = 170;
  f.right = 70;
  f.height = 30.0 * static_cast<double>(rows.size()) + 50;
  f.x0 = 0;
  f.x1 = static_cast<double>(rows.front().second);
  f.y0 = 0;
  f.y1 = static_cast<double>(rows.size());
  std::string s = f.open("reasons", "rejections by reason code") + f.axes("rejections", "");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y0 = f.y(static_cast<double>(rows.size() - i));
    const double y1 = f.y(static_cast<double>(rows.size() - i - 1));
    const double w = f.x(static_cast<double>(rows[i].second)) - f.x(0);
    s += "<g class=\"reason\" data-code=\"" + esc(rows[i].first) + "\" data-count=\"" +
         std::to_string(rows[i].second) + "\"><title>" + esc(rows[i].first) + ": " +
         std::to_string(rows[i].second) + "</title><rect class=\"bar\" x=\"" + num(f.x(0)) +
         "\" y=\"" + num(y0 + 5) + "\" width=\"" + num(std::max(w, 1.0)) + "\" height=\"" +
         num(y1 - y0 - 10) + "\"/><text x=\"" + num(f.x(0) - 6) + "\" y=\"" +
         num((y0 + y1) / 2 + 4) + "\" text-anchor=\"end\">" + esc(rows[i].first) +
         "</text><text x=\"" + num(f.x(0) + w + 6) + "\" y=\"" + num((y0 + y1) / 2 + 4) + "\">" +
         std::to_string(rows[i].second) + "</text></g>";
  }
  return s + "</svg>";
}

// The spend chart and the timeline with their legends: the run section's and the live page's
// (RunCharts) pictures are these.
std::string spend_block(const Run& run, const ck::TaskModel* model) {
  return legend({{"line", "net", "net spend (solid, ●)"},
                 {"dash", "gross", "gross spend (dashed, ■)"},
                 {"dash", "budget", "budget (dotted, T1)"}}) +
         spend_chart(run, model);
}

std::string timeline_block(const Run& run) {
  return legend({{"circle", "ok", "● executed"},
                 {"cross", "bad", "✗ rejected"},
                 {"triangle", "rb", "▲ rolled back"},
                 {"diamond", "att", "◆ attested"}}) +
         timeline_chart(run);
}

std::string margin_chart(const Run& run,
                         const Comparison& c,
                         std::size_t k,
                         const std::string& name) {
  Frame f;
  f.height = 170;
  f.x0 = 0;
  f.x1 = static_cast<double>(std::max<std::uint64_t>(run.entries, 2) - 1);
  double lo = 0;
  double hi = 0;
  for (const Bucket& b : run.buckets) {
    if (!b.least[k]) continue;
    lo = std::min(lo, to_double(*b.least[k]));
    hi = std::max(hi, to_double(*b.least[k]));
  }
  f.y0 = lo;
  f.y1 = hi > lo ? hi * 1.08 + (hi == 0 ? 1 : 0) : lo + 1;
  std::string s = f.open("margin",
                         "margin of " + name + " over the trace",
                         "data-invariant=\"" + esc(name) + "\" data-least=\"" +
                             esc(c.least ? c.least->to_string() : "") + "\"") +
                  f.axes("trace entry", "margin");
  s += "<line class=\"zero\" x1=\"" + num(f.x(f.x0)) + "\" y1=\"" + num(f.y(0)) + "\" x2=\"" +
       num(f.x(f.x1)) + "\" y2=\"" + num(f.y(0)) +
       "\"><title>0: the invariant breaks below "
       "this line</title></line>";
  std::string d;
  for (const Bucket& b : run.buckets) {
    if (!b.least[k]) continue;
    d += (d.empty() ? "M" : " L") + num(f.x(static_cast<double>(b.last))) + " " +
         num(f.y(to_double(*b.least[k])));
  }
  if (!d.empty()) s += "<path class=\"mline\" d=\"" + d + "\"/>";
  if (c.least)
    s += "<g><title>least margin " + esc(c.least->to_string()) + " at entry " +
         std::to_string(c.least_at) + "</title>" +
         marker("diamond",
                f.x(static_cast<double>(c.least_at)),
                f.y(to_double(*c.least)),
                5,
                "unknown") +
         "</g>";
  return s + "</svg>";
}

}  // namespace

std::string run_section(const std::string& id,
                        const std::string& path,
                        const std::shared_ptr<const ck::TaskModel>& model,
                        const std::string& spec_path,
                        std::size_t buckets,
                        bool& findings) {
  Run run;
  run.max_buckets = buckets;
  if (model) {
    for (std::size_t i = 0; i < model->invariants.size(); ++i) {
      const ck::Invariant& inv = model->invariants[i];
      const ck::Expr* e = inv.expr.get();
      const bool cmp = e != nullptr && !inv.transition && e->args.size() == 2 &&
                       (e->op == ck::ExprOp::le || e->op == ck::ExprOp::lt ||
                        e->op == ck::ExprOp::ge || e->op == ck::ExprOp::gt) &&
                       e->args[0]->type.is_numeric() && e->args[1]->type.is_numeric();
      if (cmp) {
        const bool below = e->op == ck::ExprOp::le || e->op == ck::ExprOp::lt;
        Comparison c;
        c.invariant = i;
        c.low = (below ? e->args[0] : e->args[1]).get();
        c.high = (below ? e->args[1] : e->args[0]).get();
        run.comparisons.push_back(c);
      } else {
        run.others.push_back(i);
      }
    }
    run.others_broken.assign(run.others.size(), 0);
  }
  ck::TraceReadOptions read;
  read.allow_unsealed = true;
  ck::TraceReader reader(path, read);
  ck::TraceCheck check;
  bool mismatched = false;
  if (model) {
    ck::TraceReplay replay(model, ck::default_replay_undo_depth);
    check = ck::replay_stream(
        reader,
        replay,
        [&](const ck::TraceEntry& e, const ck::TraceReplay& r) {
          add_entry(run, e, model.get(), &r);
        },
        &mismatched);
  } else {
    ck::TraceEntry e;
    while (reader.next(e)) add_entry(run, e, nullptr, nullptr);
    check = reader.finish();
  }
  findings = !check.ok;

  std::string s = "<section id=\"" + id + "\" aria-labelledby=\"" + id +
                  "-h\" data-kind=\"run\"><h2 id=\"" + id + "-h\">Run: " + esc(path) +
                  "</h2><p class=\"source\">a trace (JSON Lines)" +
                  (model ? ", replayed through the kernel for <code>" + esc(spec_path) + "</code>"
                         : std::string(", not replayed (give <code>--spec</code> to replay it "
                                       "and draw the budget and the invariants' margins)")) +
                  "</p>";
  // The chain.
  const std::string chain = check.ok ? "<span class=\"status-ok\">✓ verified</span>"
                                     : "<span class=\"status-bad\">✗ " +
                                           esc(mismatched ? "replay differs" : "broken") +
                                           "</span>: " + esc(check.message);
  const std::string seal = check.sealed || run.seen_seal
                               ? "<span class=\"status-ok\">✓ sealed</span> (the run finished)"
                               : "<span class=\"status-bad\">not sealed</span> (a run that "
                                 "did not finish, or a trace still being written)";
  s += "<h3>Chain</h3>" +
       facts_table(
           {{"hash chain", chain},
            {"seal", seal},
            {"entries", "<span data-figure=\"entries\">" + std::to_string(run.entries) + "</span>"},
            {"head", "<code>sha256:" + esc(run.head) + "</code>"},
            {"spec digest", "<code>sha256:" + esc(run.spec_digest) + "</code>"},
            {"replay",
             model ? (mismatched ? "<span class=\"status-bad\">✗ differs</span>"
                      : check.ok ? "<span class=\"status-ok\">✓ ok</span>"
                                 : "stopped with the chain")
                   : std::string("not requested")}});
  s +=
      "<h3>Budget</h3>" +
      facts_table({{"net spend", "<span data-figure=\"net\">" + esc(run.net) + "</span>"},
                   {"gross spend", "<span data-figure=\"gross\">" + esc(run.gross) + "</span>"},
                   {"budget",
                    model ? "<span data-figure=\"total\">" +
                                esc(model->format_amount(model->budget.total)) + "</span>"
                          : std::string("unknown without <code>--spec</code>")},
                   {"steps",
                    "<span data-figure=\"steps\">" + std::to_string(run.step) + "</span>" +
                        (model ? " of at most " + std::to_string(model->budget.step_limit) + " (T2)"
                               : std::string()) +
                        ", emergency steps " + std::to_string(run.emergency_steps)}});
  s += spend_block(run, model.get());
  s += "<h3>Decisions</h3>" +
       facts_table(
           {{"executed",
             "<span data-figure=\"executed\">" + std::to_string(run.executed) + "</span>"},
            {"rejected",
             "<span data-figure=\"rejected\">" + std::to_string(run.rejected) + "</span>"},
            {"rolled back",
             "<span data-figure=\"rolled_back\">" + std::to_string(run.rolled_back) + "</span>"},
            {"attested", std::to_string(run.attested)}}) +
       timeline_block(run);
  if (run.width > 1)
    s += "<p class=\"note\">" + std::to_string(run.entries) + " entries, drawn in " +
         std::to_string(run.buckets.size()) + " buckets of " + std::to_string(run.width) +
         " entries (a mark's size grows with its count; the exact figures are in the tables).</p>";
  s += "<h3>Rejections by reason</h3>" + reasons_chart(run);
  if (!run.by_reason.empty()) {
    s += "<table class=\"list reasons\"><thead><tr><th scope=\"col\">reason code</th><th "
         "scope=\"col\" class=\"num\">rejections</th></tr></thead><tbody>";
    for (const auto& [code, n] : run.by_reason)
      s += "<tr data-code=\"" + esc(code) + "\"><td><code>" + esc(code) +
           "</code></td><td class=\"num\">" + std::to_string(n) + "</td></tr>";
    s += "</tbody></table>";
  }
  if (!run.rejections.empty()) {
    s += "<details><summary>The first " + std::to_string(run.rejections.size()) +
         " rejections</summary><div class=\"scroll\"><table class=\"list\"><thead><tr><th "
         "scope=\"col\">entry</th><th scope=\"col\">step</th><th scope=\"col\">action</th><th "
         "scope=\"col\">why</th></tr></thead><tbody>";
    for (const auto& r : run.rejections)
      s += "<tr><td class=\"num\">" + std::to_string(r.seq) + "</td><td class=\"num\">" +
           std::to_string(r.step) + "</td><td><code>" + esc(r.action) + "</code></td><td>" +
           esc(r.reasons) + "</td></tr>";
    s += "</tbody></table></div></details>";
  }
  if (!run.by_action.empty()) {
    s += "<details><summary>Decisions by action</summary><table class=\"list\"><thead><tr><th "
         "scope=\"col\">action</th><th scope=\"col\" class=\"num\">executed</th><th "
         "scope=\"col\" class=\"num\">rejected</th></tr></thead><tbody>";
    for (const auto& [a, n] : run.by_action)
      s += "<tr><td><code>" + esc(a) + "</code></td><td class=\"num\">" + std::to_string(n.first) +
           "</td><td class=\"num\">" + std::to_string(n.second) + "</td></tr>";
    s += "</tbody></table></details>";
  }
  if (model) {
    s += "<h3>Invariants</h3>";
    if (!run.comparisons.empty()) {
      s += "<p>Each comparison invariant's margin (how far each state was from breaking it: "
           "<code>b - a</code> for <code>a &lt;= b</code>), its least value per bucket.</p>"
           "<table class=\"list margins\"><thead><tr><th scope=\"col\">invariant</th><th "
           "scope=\"col\">expression</th><th scope=\"col\" class=\"num\">least margin</th><th "
           "scope=\"col\" class=\"num\">at entry</th><th scope=\"col\" class=\"num\">final "
           "margin</th></tr></thead><tbody>";
      for (const auto& c : run.comparisons) {
        const ck::Invariant& inv = model->invariants[c.invariant];
        s += "<tr data-invariant=\"" + esc(inv.name) + "\"><td><code>" + esc(inv.name) +
             "</code></td><td><code>" + esc(ck::to_source(*inv.expr)) +
             "</code></td><td class=\"num\">" + esc(c.least ? c.least->to_string() : "–") +
             "</td><td class=\"num\">" + (c.least ? std::to_string(c.least_at) : "–") +
             "</td><td class=\"num\">" + esc(c.current ? c.current->to_string() : "–") +
             "</td></tr>";
      }
      s += "</tbody></table>";
      for (std::size_t k = 0; k < run.comparisons.size(); ++k) {
        const std::string& name = model->invariants[run.comparisons[k].invariant].name;
        s += "<h4>margin of <code>" + esc(name) + "</code></h4>" +
             margin_chart(run, run.comparisons[k], k, name);
      }
    }
    if (!run.others.empty()) {
      s += "<table class=\"list holds\"><thead><tr><th scope=\"col\">invariant</th><th "
           "scope=\"col\">enforcement</th><th scope=\"col\">over the replayed "
           "states</th></tr></thead><tbody>";
      for (std::size_t k = 0; k < run.others.size(); ++k) {
        const ck::Invariant& inv = model->invariants[run.others[k]];
        const bool blocking = inv.enforcement == ck::Enforcement::blocking;
        std::string verdict;
        if (!inv.expr)
          verdict = "computed natively (" +
                    esc(inv.opaque_reason.empty() ? "a predicate" : inv.opaque_reason) + ")";
        else if (run.others_broken[k] == 0)
          verdict = "<span class=\"status-ok\">✓ holds</span> at every state";
        else
          verdict = "<span class=\"status-bad\">✗ false</span> at " +
                    std::to_string(run.others_broken[k]) + " states";
        s += "<tr data-invariant=\"" + esc(inv.name) + "\"><td><code>" + esc(inv.name) +
             "</code></td><td>" + (blocking ? "blocking" : "monitoring") + "</td><td>" + verdict +
             "</td></tr>";
      }
      s += "</tbody></table>";
    }
  }
  // The exact figures of every bucket.
  s += "<details><summary>Exact figures, " +
       std::string(run.width == 1
                       ? "entry by entry"
                       : "bucket by bucket (" + std::to_string(run.width) + " entries each)") +
       "</summary><div class=\"scroll\"><table class=\"list buckets\"><thead><tr><th "
       "scope=\"col\">entries</th><th scope=\"col\" class=\"num\">step</th><th scope=\"col\" "
       "class=\"num\">net</th><th scope=\"col\" class=\"num\">gross</th><th scope=\"col\" "
       "class=\"num\">executed</th><th scope=\"col\" class=\"num\">rejected</th><th scope=\"col\" "
       "class=\"num\">rolled back</th>";
  if (model)
    for (const auto& c : run.comparisons)
      s += "<th scope=\"col\" class=\"num\">least margin of <code>" +
           esc(model->invariants[c.invariant].name) + "</code></th>";
  s += "</tr></thead><tbody>";
  for (const Bucket& b : run.buckets) {
    s += "<tr data-first=\"" + std::to_string(b.first) + "\" data-last=\"" +
         std::to_string(b.last) + "\" data-net=\"" + esc(b.net) + "\" data-gross=\"" +
         esc(b.gross) + "\"><td>" + std::to_string(b.first) +
         (b.last != b.first ? "–" + std::to_string(b.last) : "") +
         (b.what.empty() || b.first != b.last ? ""
                                              : " " + esc(b.what.substr(b.what.find(':') + 2))) +
         "</td><td class=\"num\">" + std::to_string(b.step) + "</td><td class=\"num\">" +
         esc(b.net) + "</td><td class=\"num\">" + esc(b.gross) + "</td><td class=\"num\">" +
         std::to_string(b.executed) + "</td><td class=\"num\">" + std::to_string(b.rejected) +
         "</td><td class=\"num\">" + std::to_string(b.rolled_back) + "</td>";
    for (const auto& m : b.least)
      s += "<td class=\"num\">" + esc(m ? m->to_string() : "–") + "</td>";
    s += "</tr>";
  }
  return s + "</tbody></table></div></details></section>";
}

}  // namespace clampai::report::html

namespace clampai::report {

struct RunCharts::Impl {
  std::shared_ptr<const kernel::TaskModel> model;
  html::Run run;
};

RunCharts::RunCharts(std::shared_ptr<const kernel::TaskModel> model,
                     std::string unit,
                     std::size_t buckets)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  impl_->run.max_buckets = std::max<std::size_t>(buckets, 2);
  impl_->run.x_title = unit;
  impl_->run.unit = std::move(unit);
}

RunCharts::~RunCharts() = default;
RunCharts::RunCharts(RunCharts&&) noexcept = default;
RunCharts& RunCharts::operator=(RunCharts&&) noexcept = default;

void RunCharts::add(kernel::TraceEntry entry) {
  entry.sequence = impl_->run.entries;
  html::add_entry(impl_->run, entry, nullptr, nullptr);
}

std::uint64_t RunCharts::count() const { return impl_->run.entries; }

std::string RunCharts::spend() const { return html::spend_block(impl_->run, impl_->model.get()); }

std::string RunCharts::timeline() const { return html::timeline_block(impl_->run); }

std::string RunCharts::reasons() const {
  if (impl_->run.by_reason.empty()) return "<p class=\"note\">No rejection yet.</p>";
  return html::reasons_chart(impl_->run);
}

}  // namespace clampai::report
