// Links clampai::report from the installed package: composes the example pipeline and writes
// its JUnit report.
#include <iostream>

#include "clampai/composition/compose.hpp"
#include "clampai/report/compose.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const auto report = clampai::composition::compose(clampai::composition::load_manifest(argv[1]));
  clampai::report::write_compose(
      std::cout, clampai::report::Format::junit, {argv[1], &report, false, report.seconds});
  return report.exit_code();
}
