// The report library: the progress reporter, failure reports and the encoders' edge cases.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "clampai/report.hpp"

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
