// Links clampai::ledger and clampai::hardening from the installed package: a PostgreSQL URL is
// redacted (no server needed) and RE2 installed as the kernel's pattern compiler.
#include <iostream>

#include "clampai/hardening.hpp"
#include "clampai/ledger/ledger.hpp"

int main() {
  namespace cl = clampai::ledger;
  clampai::hardening::install_pattern_engine();
  const std::string url = "postgresql://me:secret@localhost/db#task";
  std::cout << "ledger: " << cl::is_postgres_url(url) << " " << cl::redact_url(url) << " "
            << cl::split_postgres_url(url).task << "\n";
  return 0;
}
