// The report library: the progress reporter, failure reports, the encoders' edge cases and the
// one JSON writer against nlohmann's dump.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/report.hpp"
#include "clampai/report/wire.hpp"

namespace cr = clampai::report;

namespace {

cr::Progress::Options plain(std::ostream& out, unsigned interval_ms = 0) {
  cr::Progress::Options o;
  o.command = "test";
  o.interval = std::chrono::milliseconds(interval_ms);
  o.out = &out;
  return o;
}

std::size_t count_lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("progress with interval 0 writes a plain line at every phase and update") {
  std::ostringstream out;
  {
    cr::Progress p(plain(out));
    p.phase("obligations", 3);
    p.update(1, 3);
    p.update(3, 3);
    p.phase("goal search");
  }
  const std::string s = out.str();
  CHECK(count_lines(s) == 4);
  CHECK(s.find("clampai test: obligations 0/3, ") == 0);
  CHECK(s.find("clampai test: obligations 3/3, ") != std::string::npos);
  CHECK(s.find("clampai test: goal search, ") != std::string::npos);
  CHECK(s.find('\r') == std::string::npos);
}

TEST_CASE("progress disabled (--quiet) writes nothing") {
  std::ostringstream out;
  auto o = plain(out, 1);
  o.enabled = false;
  {
    cr::Progress p(o);
    p.phase("x", 10);
    p.update(5, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(out.str().empty());
}

TEST_CASE("progress status text replaces the count") {
  std::ostringstream out;
  cr::Progress p(plain(out));
  p.status([] { return std::string("42 steps"); });
  p.phase("running");
  p.stop();
  p.update(1, 2);  // after stop: nothing
  CHECK(out.str().find("clampai test: running 42 steps, ") == 0);
  CHECK(count_lines(out.str()) == 1);
}

TEST_CASE("a live progress line is erased when it stops, and a quick one never shows") {
  std::ostringstream out;
  auto o = plain(out, 5);
  o.live = true;
  {
    cr::Progress p(o);
    p.phase("quick");
  }  // stopped within the live delay: nothing was drawn, nothing to erase
  CHECK(out.str().empty());
}

TEST_CASE("progress is safe to update from many threads") {
  std::ostringstream out;
  cr::Progress p(plain(out));
  p.phase("work", 4000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p, t] {
      for (int i = 0; i < 1000; ++i) p.update(static_cast<std::size_t>(t * 1000 + i), 4000);
    });
  }
  for (auto& th : threads) th.join();
  p.stop();
  CHECK(count_lines(out.str()) == 4001);
}

TEST_CASE("locate finds a leading LINE:COLUMN after the file name") {
  const auto a = cr::locate("spec.json", "spec.json: 3:14: malformed JSON");
  CHECK(a.file == "spec.json");
  CHECK(a.line == 3);
  CHECK(a.column == 14);
  const auto b = cr::locate("spec.json", "spec.json: actions[0].requires:1:1: unknown variable");
  CHECK(b.line == 0);  // an expression's position is not a file position
  const auto c = cr::locate("spec.json", "cannot read `spec.json`");
  CHECK(c.file == "spec.json");
  CHECK(c.line == 0);
  CHECK(cr::locate("", "0:5: x").line == 0);
}

TEST_CASE("formats round-trip through their names") {
  for (const auto f : {cr::Format::text, cr::Format::json, cr::Format::sarif, cr::Format::junit})
    CHECK(cr::parse_format(cr::to_string(f)) == f);
  CHECK_FALSE(cr::parse_format("xml").has_value());
}

TEST_CASE("failure reports carry the error in every machine format") {
  cr::Failure f;
  f.command = "verify";
  f.input = "a b&.json";
  f.message = "a b&.json: 2:3: bad <thing> \x01";
  f.location = cr::locate(f.input, f.message);
  std::ostringstream text, json, sarif, junit;
  cr::write_failure(text, cr::Format::text, f);
  cr::write_failure(json, cr::Format::json, f);
  cr::write_failure(sarif, cr::Format::sarif, f);
  cr::write_failure(junit, cr::Format::junit, f);
  CHECK(text.str().empty());
  CHECK(json.str().find("\"exit_code\": 2") != std::string::npos);
  CHECK(json.str().find("\"line\": 2") != std::string::npos);
  CHECK(sarif.str().find("\"executionSuccessful\": false") != std::string::npos);
  CHECK(sarif.str().find("\"uri\": \"a%20b%26.json\"") != std::string::npos);
  CHECK(junit.str().find("<error message=\"a b&amp;.json: 2:3: bad &lt;thing&gt; ?\"") !=
        std::string::npos);
  CHECK(junit.str().find("time=\"0.000\"") != std::string::npos);
}

TEST_CASE("bytes that are not UTF-8 (a file name) never break a report") {
  cr::Failure f;
  f.command = "verify";
  f.input = "q\xff\xc3-.json";
  f.message = "cannot read `q\xff\xc3-.json` \xe2\x82\xac";  // the euro sign is valid UTF-8
  std::ostringstream json, junit, sarif;
  REQUIRE_NOTHROW(cr::write_failure(json, cr::Format::json, f));
  REQUIRE_NOTHROW(cr::write_failure(sarif, cr::Format::sarif, f));
  cr::write_failure(junit, cr::Format::junit, f);
  CHECK(json.str().find("q\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  CHECK(json.str().find("\xe2\x82\xac") != std::string::npos);
  const std::string expected = std::string("message=\"cannot read `q?") + "?-.json` \xe2\x82\xac\"";
  CHECK(junit.str().find(expected) != std::string::npos);
  CHECK(junit.str().find('\xff') == std::string::npos);
}

namespace {

// What `run --ledger` printed before the report took its ledger section as typed values: the
// report without it, re-parsed, with the `ledger` object added (JSON); the line after (text).
std::string with_ledger_reparsed(const std::string& report,
                                 cr::Format format,
                                 const cr::LedgerSection& l) {
  if (format != cr::Format::json) {
    std::ostringstream line;
    if (const auto* e = std::get_if<cr::EscrowLedgerStats>(&l.stats)) {
      line << "ledger: " << l.url << ": " << e->commits << " commits by this process in "
           << e->leases << " leases, " << e->flushes << " flushes; " << e->expired
           << " stale leases of others expired\n";
    } else {
      const auto& s = std::get<clampai::kernel::SharedStats>(l.stats);
      line << "ledger: " << l.url << ": " << s.commits << " commits by this process, "
           << s.conflicts << " conflicts retried, " << s.applied
           << " entries of other processes replayed\n";
    }
    return report + line.str();
  }
  nlohmann::json j = nlohmann::json::parse(report);
  if (const auto* e = std::get_if<cr::EscrowLedgerStats>(&l.stats)) {
    j["ledger"] = {{"url", l.url},
                   {"mode", "escrow"},
                   {"leases", e->leases},
                   {"flushes", e->flushes},
                   {"commits", e->commits},
                   {"expired", e->expired}};
  } else {
    const auto& s = std::get<clampai::kernel::SharedStats>(l.stats);
    j["ledger"] = {{"url", l.url},
                   {"commits", s.commits},
                   {"conflicts", s.conflicts},
                   {"replayed", s.applied},
                   {"reconnects", s.reconnects}};
  }
  return j.dump(2) + "\n";
}

}  // namespace

TEST_CASE("run and agent reports on a ledger: the bytes of the re-parsed report") {
  const auto model =
      clampai::kernel::load_spec(R"({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "goal": "n >= 1", "budget": {"total": 10, "min_action_cost": 1}})");
  clampai::driver::RunResult result;
  result.goal_reached = true;
  result.termination = clampai::driver::Termination::goal_reached;
  result.executed = result.attempted = 1;
  result.actions = {"a"};
  clampai::kernel::SharedStats shared;
  shared.commits = 3;
  shared.conflicts = 2;
  shared.applied = 5;
  shared.reconnects = 1;
  const std::vector<cr::LedgerSection> sections = {
      {"memory:", shared}, {"postgresql://h/db#t", cr::EscrowLedgerStats{4, 3, 7, 1}}};
  for (const cr::LedgerSection& section : sections) {
    for (const cr::Format format : {cr::Format::json, cr::Format::text}) {
      cr::RunReport run;
      run.spec = "spec\xff.json";  // not UTF-8: replaced in JSON, as before
      run.model = model.get();
      run.result = &result;
      run.steps = 1;
      run.step_limit = 10;
      run.total = 10000;
      run.net = run.gross = 1000;
      run.trace_entries = 4;
      run.trace_head = std::string(64, 'a');
      run.trace_verified = true;
      run.trace_file = section.url;
      std::ostringstream without, with;
      cr::write_run(without, format, run);
      run.ledger = section;
      cr::write_run(with, format, run);
      CHECK(with.str() == with_ledger_reparsed(without.str(), format, section));

      cr::AgentReport agent;
      agent.spec = run.spec;
      agent.model = model.get();
      agent.llm = "mock";
      agent.termination = "goal_reached";
      agent.goal_reached = true;
      agent.message = "done \xc3";
      agent.progress = 0.1 + 0.2;  // a double that must come back the same
      agent.trace_head = run.trace_head;
      std::ostringstream agent_without, agent_with;
      cr::write_agent(agent_without, format, agent);
      agent.ledger = section;
      cr::write_agent(agent_with, format, agent);
      CHECK(agent_with.str() == with_ledger_reparsed(agent_without.str(), format, section));
    }
  }
  // A ledger whose name is not UTF-8 (a file ledger's path): the re-parsed report threw at the
  // end of the run; the one report replaces the bytes, as everywhere else.
  cr::RunReport run;
  run.model = model.get();
  run.result = &result;
  run.ledger = cr::LedgerSection{"file:q\xff.jsonl", shared};
  std::ostringstream out;
  REQUIRE_NOTHROW(cr::write_run(out, cr::Format::json, run));
  CHECK(out.str().find("\"url\": \"file:q\xef\xbf\xbd.jsonl\"") != std::string::npos);
}

// ---- the one JSON writer against nlohmann's dump, on documents a seeded generator builds ----

namespace {

// Builds one random document three ways at once: through the indented and the compact
// JsonWriter, and as nlohmann documents (`json` sorts an object's members, `ordered_json` keeps
// them as written), so each writer can be compared with the dump it must equal.
struct DocumentGenerator {
  std::mt19937_64 rng;
  cr::JsonWriter indented{cr::JsonWriter::Layout::indented};
  cr::JsonWriter compact{};

  std::uint64_t below(std::uint64_t n) { return rng() % n; }

  // Text with what escaping has to get right: quotes, backslashes, every control character,
  // DEL, valid UTF-8 of each length, and invalid sequences (lone continuation bytes, overlong
  // forms, surrogates, code points beyond U+10FFFF, sequences cut short, at the end too).
  std::string text() {
    static const std::vector<std::string> pieces = {"a",
                                                    "Z",
                                                    " ",
                                                    "\"",
                                                    "\\",
                                                    "/",
                                                    "\x7f",
                                                    "\xc3\xa9",
                                                    "\xe2\x82\xac",
                                                    "\xf0\x9f\x98\x80",
                                                    "\xe2\x80\xa8",
                                                    "\xef\xbf\xbd",
                                                    "\xef\xbb\xbf",
                                                    "\x80",
                                                    "\xbf",
                                                    "\xff",
                                                    "\xfe",
                                                    "\xc0\x80",
                                                    "\xc1\xbf",
                                                    "\xe0\x80\x80",
                                                    "\xed\xa0\x80",
                                                    "\xf4\x90\x80\x80",
                                                    "\xf5\x80",
                                                    "\xe2\x82",
                                                    "\xf0\x9f\x98",
                                                    "\xf0\x9f",
                                                    "\xc3",
                                                    "\xe2",
                                                    "12.50",
                                                    "-0",
                                                    "1e400",
                                                    "null",
                                                    "true"};
    std::string s;
    const std::uint64_t n = below(6);
    for (std::uint64_t i = 0; i < n; ++i) {
      if (below(4) == 0) {
        s += static_cast<char>(below(0x20));  // a control character, NUL included
      } else {
        s += pieces[below(pieces.size())];
      }
    }
    return s;
  }

  void scalar(nlohmann::json& sorted, nlohmann::ordered_json& ordered) {
    static const std::vector<std::int64_t> ints = {0,
                                                   -1,
                                                   1,
                                                   -9007199254740993,
                                                   9007199254740993,
                                                   std::numeric_limits<std::int64_t>::min(),
                                                   std::numeric_limits<std::int64_t>::max()};
    static const std::vector<std::uint64_t> unsigneds = {
        0, 1ULL << 63, std::numeric_limits<std::uint64_t>::max(), 18446744073709551614ULL};
    static const std::vector<double> doubles = {0.0,
                                                -0.0,
                                                1.0,
                                                0.1 + 0.2,
                                                1e-5,
                                                1e15,
                                                1e16,
                                                -1.5e300,
                                                5e-324,
                                                123456789.125,
                                                std::numeric_limits<double>::quiet_NaN(),
                                                std::numeric_limits<double>::infinity()};
    const auto both = [&](auto v) {
      indented.value(v);
      compact.value(v);
      sorted = v;
      ordered = v;
    };
    switch (below(9)) {
      case 0:
        indented.null();
        compact.null();
        sorted = nullptr;
        ordered = nullptr;
        return;
      case 1:
        return both(below(2) == 0);
      case 2:
        return both(ints[below(ints.size())]);
      case 3:
        return both(static_cast<std::int64_t>(rng()));  // negative half the time
      case 4:
        return both(unsigneds[below(unsigneds.size())]);
      case 5:
        return both(doubles[below(doubles.size())]);
      case 6: {
        double d = 0;
        const std::uint64_t bits = rng();
        std::memcpy(&d, &bits, sizeof d);
        return both(d);
      }
      case 7:  // a decimal as the reports write one: text
        return both(std::to_string(static_cast<std::int64_t>(rng() % 100000) - 50000) + "." +
                    std::to_string(below(100)));
      default:
        return both(text());
    }
  }

  void node(int depth, nlohmann::json& sorted, nlohmann::ordered_json& ordered) {
    const std::uint64_t kind = depth >= 5 ? 0 : below(4);
    if (kind < 2) return scalar(sorted, ordered);
    const std::uint64_t n = below(4) == 0 ? 0 : below(5);  // empty containers often
    if (kind == 2) {
      indented.begin_array();
      compact.begin_array();
      sorted = nlohmann::json::array();
      ordered = nlohmann::ordered_json::array();
      for (std::uint64_t i = 0; i < n; ++i) {
        nlohmann::json s;
        nlohmann::ordered_json o;
        node(depth + 1, s, o);
        sorted.push_back(std::move(s));
        ordered.push_back(std::move(o));
      }
      indented.end_array();
      compact.end_array();
      return;
    }
    indented.begin_object();
    compact.begin_object();
    sorted = nlohmann::json::object();
    ordered = nlohmann::ordered_json::object();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::string key = text();
      if (sorted.contains(key)) continue;  // an object's keys are unique
      indented.key(key);
      compact.key(key);
      node(depth + 1, sorted[key], ordered[key]);
    }
    indented.end_object();
    compact.end_object();
  }
};

}  // namespace

TEST_CASE("the indented JsonWriter writes what nlohmann's dump(2) writes, byte for byte") {
  constexpr auto replace = nlohmann::json::error_handler_t::replace;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    DocumentGenerator g{std::mt19937_64(seed)};
    nlohmann::json sorted;
    nlohmann::ordered_json ordered;
    g.node(0, sorted, ordered);
    INFO("seed " << seed);
    REQUIRE(g.indented.take() == sorted.dump(2, ' ', false, replace));
    REQUIRE(g.compact.take() == ordered.dump(-1, ' ', false, replace));
  }
}

TEST_CASE("the indented JsonWriter: the shapes a report has, written out") {
  cr::JsonWriter j(cr::JsonWriter::Layout::indented);
  j.begin_object().key("z").begin_array().end_array().key("b").begin_object().end_object();
  j.key("a").begin_array().value(-1).begin_object().key("y").value("\xe2\x82 \x01").key("x");
  j.value(0.5).end_object().end_array().key("c").value(std::uint64_t{18446744073709551615ULL});
  CHECK(j.end_object().take() ==
        "{\n"
        "  \"a\": [\n"
        "    -1,\n"
        "    {\n"
        "      \"x\": 0.5,\n"
        "      \"y\": \"\xef\xbf\xbd \\u0001\"\n"  // one U+FFFD for the sequence cut short
        "    }\n"
        "  ],\n"
        "  \"b\": {},\n"
        "  \"c\": 18446744073709551615,\n"
        "  \"z\": []\n"
        "}");
}

TEST_CASE("a JSON report is its own nlohmann parse and dump(2): reasons with any bytes") {
  const auto model =
      clampai::kernel::load_spec(R"({"variables": {"n": {"type": "int", "initial": 0}},
    "actions": [{"id": "a", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
    "goal": "n >= 1", "budget": {"total": 10, "min_action_cost": 1}})");
  clampai::driver::RunResult result;
  result.termination = clampai::driver::Termination::no_approvable_action;
  result.rejections_by_reason = {{"budget_exceeded", 2}, {"a\xe2\x82", 1}};
  result.last_reasons = {{clampai::kernel::ReasonCode::budget_exceeded, "n", "budget \x01\xf0\x9f"},
                         {clampai::kernel::ReasonCode::invariant_violated, "\xed\xa0\x80", ""}};
  cr::RunReport run;
  run.spec = "s\"\\.json";
  run.model = model.get();
  run.result = &result;
  run.lookahead = 3;
  run.recover = true;
  std::ostringstream out;
  cr::write_run(out, cr::Format::json, run);
  const nlohmann::json parsed = nlohmann::json::parse(out.str());
  CHECK(out.str() == parsed.dump(2) + "\n");
  // The reasons in their one wire form: code, subject and message, whatever the bytes.
  CHECK(parsed["last_reasons"][0] == nlohmann::json{{"code", "budget_exceeded"},
                                                    {"message", "budget \x01\xef\xbf\xbd"},
                                                    {"subject", "n"}});
  CHECK(parsed["last_reasons"][1]["subject"] == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(parsed["rejections_by_reason"].contains("a\xef\xbf\xbd"));
}

TEST_CASE("html: a long trace is drawn in at most `buckets` buckets that keep its exact figures") {
  namespace ck = clampai::kernel;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("clampai-test-html-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "run.jsonl").string();
  const std::string spec = (dir / "spec.json").string();
  const char* const text = R"J({"variables": {"n": {"type": "int", "initial": 0}},
      "actions": [{"id": "add", "cost": 1,
                   "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
      "invariants": [{"name": "cap", "check": "n <= 5000"}],
      "budget": {"total": 1000000, "min_action_cost": 1}})J";
  std::ofstream(spec) << text;
  {
    ck::KernelOptions options;
    options.writer = std::make_shared<ck::TraceWriter>(trace, ck::FlushPolicy::buffered);
    ck::SafetyKernel kernel(ck::load_spec(text), options);
    for (int i = 0; i < 1000; ++i) REQUIRE(kernel.execute("add", {}).receipt);
    kernel.seal();
  }
  for (const std::size_t buckets : {std::size_t{16}, std::size_t{5}}) {
    std::ostringstream out;
    cr::HtmlOptions options;
    options.buckets = buckets;
    options.spec = spec;
    const cr::HtmlResult r = cr::write_html(out, {trace}, options);
    CHECK_FALSE(r.findings);
    REQUIRE(r.kinds == std::vector<cr::HtmlInput>{cr::HtmlInput::trace});
    const std::string page = out.str();
    // The rows of the exact figures: consecutive buckets from entry 0 to the seal (1001).
    std::size_t rows = 0;
    std::uint64_t next = 0;
    for (auto at = page.find("<tr data-first=\""); at != std::string::npos;
         at = page.find("<tr data-first=\"", at + 1)) {
      ++rows;
      const std::uint64_t first = std::stoull(page.substr(at + 16));
      const auto last_at = page.find("data-last=\"", at) + 11;
      CHECK(first == next);
      next = std::stoull(page.substr(last_at)) + 1;
    }
    CHECK(next == 1002);
    CHECK(rows <= buckets);
    CHECK(rows >= buckets / 2);
    CHECK(page.find("data-figure=\"net\">1000.000<") != std::string::npos);
    // The least margin of `n <= 5000` is 4000, after the last step.
    CHECK(page.find("data-least=\"4000\"") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("html: RunCharts draws a run's charts as its entries come, in bounded points") {
  namespace ck = clampai::kernel;
  const auto model = ck::load_spec(R"J({"variables": {"n": {"type": "int", "initial": 0}},
      "actions": [{"id": "add", "cost": 1,
                   "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
      "budget": {"total": 2000, "min_action_cost": 1}})J");
  cr::RunCharts charts(model, "decision", 16);
  CHECK(charts.reasons().find("No rejection yet") != std::string::npos);
  ck::TraceEntry start;
  start.kind = ck::EntryKind::genesis;
  start.net = start.gross = "0.000";
  charts.add(start);
  for (int i = 1; i <= 1000; ++i) {
    ck::TraceEntry e;
    e.kind = ck::EntryKind::executed;
    e.action = "add";
    e.net = e.gross = std::to_string(i) + ".000";
    charts.add(e);
  }
  ck::TraceEntry refused;
  refused.kind = ck::EntryKind::rejected;
  refused.action = "add";
  refused.reasons = {{ck::ReasonCode::budget_exceeded, "add", "too dear"}};
  refused.net = refused.gross = "1000.000";
  for (int i = 0; i < 3; ++i) charts.add(refused);
  CHECK(charts.count() == 1004);
  const std::string spend = charts.spend();
  CHECK(spend.find("data-final-net=\"1000.000\"") != std::string::npos);
  CHECK(spend.find("data-total=\"" + model->format_amount(model->budget.total) + "\"") !=
        std::string::npos);
  CHECK(spend.find("data-entries=\"1004\"") != std::string::npos);
  const auto points = spend.find("data-points=\"");
  REQUIRE(points != std::string::npos);
  const auto drawn = std::stoul(spend.substr(points + 13));
  CHECK(drawn <= 16);
  CHECK(drawn >= 8);
  CHECK(spend.find(">decision<") != std::string::npos);  // the axis names the unit
  CHECK(charts.timeline().find("data-executed=\"1000\" data-rejected=\"3\"") != std::string::npos);
  CHECK(charts.reasons().find("data-code=\"budget_exceeded\" data-count=\"3\"") !=
        std::string::npos);
  // The stylesheet of the report's pages styles the charts' classes.
  CHECK(cr::html_style().find("svg.chart") != std::string_view::npos);
}
