#include "decision_log.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/json.hpp"
#include "json_out.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;

namespace {

std::unique_ptr<ck::OutputFile> open_log(const std::string& path) {
  ck::WriteOptions options;
  options.mode = ck::WriteMode::append;
  options.permissions = 0600;
  options.what = "decision log";
  return std::make_unique<ck::OutputFile>(path, options);
}

// RFC 3339 in UTC with microseconds: 2026-11-28T14:05:09.123456Z.
std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lldZ", static_cast<long long>(us % 1000000));
  return std::string(text, n) + frac;
}

}  // namespace

std::string params_digest(const ck::jsonio::JsonNode* params) {
  std::string canonical = "{}";
  if (params != nullptr && params->kind != ck::jsonio::JsonNode::Kind::null) {
    canonical.clear();
    (void)ck::jsonio::append_canonical(canonical, *params);
  }
  return ck::sha256_hex(canonical);
}

DecisionLog::DecisionLog(std::string path) : path_(std::move(path)), file_(open_log(path_)) {}

void DecisionLog::write(const LoggedDecision& d) {
  JsonOut j;
  j.begin_object().key("time").value(now_rfc3339()).key("task").value(d.task);
  j.key("principal");
  if (d.principal.empty()) {
    j.null();
  } else {
    j.value(d.principal);
  }
  j.key("endpoint").value(d.endpoint).key("action").value(d.action);
  j.key("params_sha256").value(d.params_sha256).key("outcome").value(d.outcome);
  j.key("reasons").begin_array();
  if (d.reasons != nullptr)
    for (const ck::Reason& r : *d.reasons) j.value(ck::to_string(r.code));
  j.end_array();
  j.key("spec_digest").value(d.spec_digest).key("trace_position").value(d.trace_position);
  j.end_object();
  std::string line = j.take();
  line += '\n';
  std::lock_guard lock(mutex_);
  file_->write(line);  // one write of the whole line, appended (O_APPEND)
}

void DecisionLog::reopen() {
  auto fresh = open_log(path_);
  std::lock_guard lock(mutex_);
  file_ = std::move(fresh);
}

}  // namespace clampai::server
