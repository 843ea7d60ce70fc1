// The README's C++ quick start: build a task in code, then let the kernel decide every step.
#include <iostream>

#include "clampai/kernel.hpp"

int main() {
  using namespace clampai::kernel;

  TaskDecl task;
  task.name = "quickstart";
  task.goal = "processed >= 10";
  task.variables = {{"processed", Type::integer(), Value::integer(0)},
                    {"errors", Type::integer(), Value::integer(0)}};

  ActionDecl batch;
  batch.id = "process_batch";
  batch.description = "Process the next 5 records";
  batch.cost = "2.0";
  batch.effects = {{"processed", EffectMode::increment, "5"}};
  task.actions = {batch};

  InvariantDecl max_errors;  // an expression: the verifier can reason about it
  max_errors.name = "max_errors";
  max_errors.expression = "errors <= 3";
  InvariantDecl whole_batches;  // a native predicate: enforced, but opaque to the verifier
  whole_batches.name = "whole_batches";
  whole_batches.predicate = [](const State& s) {
    return s.get("processed").as_number().units % 5 == 0;
  };
  task.invariants = {max_errors, whole_batches};
  task.budget = {*Decimal::parse("20.0"), *Decimal::parse("0.1")};

  SafetyKernel kernel(build_model(task));  // throws clampai::SpecError on a bad task
  while (!kernel.goal_reached()) {
    const Outcome o = kernel.execute("process_batch");
    if (!o.decision.approved) {
      for (const Reason& r : o.decision.reasons)
        std::cerr << to_string(r.code) << ": " << r.message << "\n";
      return 1;
    }
  }
  std::cout << "goal reached: processed = " << kernel.state().get("processed").to_string()
            << ", spent " << kernel.model().format_amount(kernel.budget().net()) << " of "
            << kernel.model().format_amount(kernel.budget().total()) << "\n";
  return kernel.verify_trace().ok ? 0 : 1;
}
