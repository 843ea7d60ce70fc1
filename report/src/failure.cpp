#include <cctype>
#include <charconv>

#include "clampai/report/format.hpp"
#include "clampai/report/wire.hpp"
#include "encode.hpp"

namespace clampai::report {

std::string_view to_string(Format f) {
  switch (f) {
    case Format::text:
      return "text";
    case Format::json:
      return "json";
    case Format::sarif:
      return "sarif";
    case Format::junit:
      return "junit";
  }
  return "text";
}

std::optional<Format> parse_format(std::string_view name) {
  for (const Format f : {Format::text, Format::json, Format::sarif, Format::junit})
    if (name == to_string(f)) return f;
  return std::nullopt;
}

std::string_view tool_version() { return CLAMPAI_VERSION; }

namespace {

// `LINE:COLUMN:` at the start of `s` (both positive), or nothing.
std::optional<std::pair<std::uint32_t, std::uint32_t>> position(std::string_view s) {
  std::uint32_t line = 0, column = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, line);
  if (ec != std::errc() || p == end || *p != ':') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, column);
  if (ec2 != std::errc() || q == end || *q != ':' || line == 0 || column == 0) return std::nullopt;
  return std::pair{line, column};
}

}  // namespace

Location locate(const std::string& file, const std::string& message) {
  Location loc{file, 0, 0};
  std::string_view rest(message);
  if (!file.empty() && rest.substr(0, file.size() + 1) == file + ":") {
    rest.remove_prefix(file.size() + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  }
  if (const auto pos = position(rest)) {
    loc.line = pos->first;
    loc.column = pos->second;
  }
  return loc;
}

void write_failure(std::ostream& out, Format format, const Failure& failure) {
  const std::string kind = failure.internal ? "internal_error" : "bad_input";
  switch (format) {
    case Format::text:
      return;
    case Format::json: {
      JsonWriter j = detail::report_writer();
      j.begin_object().key("command").value(failure.command).key("ok").value(false);
      j.key("exit_code").value(failure.exit_code).key("error").begin_object();
      j.key("kind").value(kind).key("message").value(failure.message);
      if (!failure.input.empty()) j.key("input").value(failure.input);
      if (!failure.location.file.empty()) {
        const Location& at = failure.location;
        j.key("location").begin_object().key("file").value(at.file);
        if (at.line > 0) j.key("line").value(at.line).key("column").value(at.column);
        j.end_object();
      }
      out << j.end_object().end_object().take() << "\n";
      return;
    }
    case Format::sarif: {
      JsonWriter j = detail::report_writer();
      detail::write_sarif_log(j, {}, {}, &failure);
      out << j.take() << "\n";
      return;
    }
    case Format::junit: {
      detail::JUnitCase c;
      c.classname = "clampai." + failure.command;
      c.name = failure.input.empty() ? failure.command : failure.input;
      c.outcome = "error";
      c.type = kind;
      c.message = failure.message;
      c.details = failure.message;
      if (failure.location.line > 0) {
        c.details += "\nat " + failure.location.file + ":" + std::to_string(failure.location.line) +
                     ":" + std::to_string(failure.location.column);
      }
      detail::write_junit(out, "clampai " + failure.command, c.name, 0, {c});
      return;
    }
  }
}

}  // namespace clampai::report
