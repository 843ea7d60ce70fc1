// docs/LEDGER.md's C++ example: a kernel on a shared ledger, here the file out/ledger.jsonl
// (`postgresql://...#TASK` for a database).
#include <filesystem>
#include <iostream>

#include "clampai/kernel.hpp"
#include "clampai/ledger/ledger.hpp"

int main() {
  using namespace clampai::kernel;
  std::filesystem::create_directories("out");
  auto model = load_spec_file("examples/payments.json");
  auto ledger = clampai::ledger::open_ledger("file:out/ledger.jsonl", model->name);
  SharedKernel kernel(model, ledger);
  auto outcome = kernel.execute("top_up", {{"amount", Value::number(*Decimal::parse("12.50"))}});
  std::cout << (outcome.decision.approved ? "approved" : "rejected") << "; the ledger has "
            << kernel.length() << " entries\n";
  return outcome.decision.approved ? 0 : 1;
}
