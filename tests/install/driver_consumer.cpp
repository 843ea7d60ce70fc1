// Links clampai::driver from the installed package and runs a task spec with the deterministic
// driver, its lookahead guarding the kernel.
#include <iostream>

#include "clampai/driver.hpp"
#include "clampai/kernel.hpp"

int main(int argc, char** argv) {
  namespace cd = clampai::driver;
  namespace ck = clampai::kernel;
  if (argc != 2) return 2;
  const auto model = ck::load_spec_file(argv[1]);
  ck::KernelOptions options;
  options.guard = cd::lookahead_guard(model);
  ck::SafetyKernel kernel(model, options);
  cd::FirstApprovableDriver driver;
  const cd::RunResult r = cd::run(kernel, driver);
  std::cout << "run: " << cd::to_string(r.termination) << " after " << r.executed << " steps\n";
  return r.goal_reached ? 0 : 1;
}
