// Ledgers by URL.
#include <string>

#include "clampai/ledger/escrow.hpp"
#include "clampai/ledger/ledger.hpp"

namespace clampai::ledger {

bool is_postgres_url(const std::string& url) {
  return url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
}

PostgresUrl split_postgres_url(const std::string& url) {
  if (!is_postgres_url(url))
    throw InvalidArgument("`" + redact_url(url) + "` is not a postgresql:// URL");
  const std::size_t hash = url.find('#');
  if (hash == std::string::npos) return {url, ""};
  PostgresUrl out{url.substr(0, hash), url.substr(hash + 1)};
  if (out.task.empty())
    throw InvalidArgument("the ledger URL `" + redact_url(url) +
                          "` ends with an empty fragment: name the task after `#`");
  return out;
}

std::string redact_url(const std::string& url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const std::size_t start = scheme + 3;
  const std::size_t end = url.find_first_of("/?#", start);
  const std::size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < start) return url;
  const std::size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

std::shared_ptr<kernel::Ledger> open_ledger(const std::string& url,
                                            const std::string& task,
                                            Access access) {
  if (is_escrow_url(url))
    throw InvalidArgument("the ledger `" + redact_url(url) +
                          "` selects escrow mode (escrow=SLICE), which only `clampai run` and "
                          "clampai::ledger::EscrowKernel support: drop escrow= for the shared "
                          "mode");
  if (is_postgres_url(url)) {
    PostgresUrl parts = split_postgres_url(url);
    if (parts.task.empty()) parts.task = task;
    if (parts.task.empty())
      throw InvalidArgument("the ledger `" + redact_url(url) +
                            "` needs a task: name it after `#` (URL#TASK) or give the spec a "
                            "`name`");
    return std::make_shared<PostgresLedger>(parts.conninfo, parts.task, access);
  }
  if (auto local = kernel::open_local_ledger(url)) return local;
  throw InvalidArgument("unknown ledger `" + redact_url(url) +
                        "`: expected postgresql://... (a libpq URI), file:PATH or memory:");
}

}  // namespace clampai::ledger
