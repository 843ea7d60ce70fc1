// Links clampai::composition from the installed package and composes the example pipeline.
#include <iostream>

#include "clampai/composition/compose.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const auto report = clampai::composition::compose(clampai::composition::load_manifest(argv[1]));
  std::cout << "composed: " << report.proved << " proved, " << report.refuted << " refuted\n";
  return report.exit_code();
}
