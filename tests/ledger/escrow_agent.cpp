// A test agent for escrow mode (tests/ledger/escrow.sh): executes one action repeatedly in
// escrow mode, prints each commit it is told of, and can stop at a point until told to go on
// (so that the test can kill it there, holding its lease).
//   escrow_agent URL SPEC ACTION[!undo] STEPS [POINT:K DIR]
// URL: postgresql://...?escrow=SLICE[&escrow_lease=SECONDS][&escrow_batch=N][#TASK].
// POINT: `after` (the K-th commit has returned: the lease is held, nothing in flight) or
// `flush` (inside the K-th flush's transaction, before COMMIT). There it creates DIR/paused and
// waits for DIR/go. Prints `committed CHAIN SEQ` per durable commit and, at the end, a JSON
// summary; closes its lease when it ends.
#include <iostream>
#include <string>

#include "clampai/kernel.hpp"
#include "clampai/ledger/escrow.hpp"
#include "pause_point.hpp"

namespace ck = clampai::kernel;
namespace cl = clampai::ledger;

int main(int argc, char** argv) {
  if (argc != 5 && argc != 7) {
    std::cerr << "usage: escrow_agent URL SPEC ACTION STEPS [POINT:K DIR]\n";
    return 2;
  }
  try {
    const cl::EscrowUrl url = cl::split_escrow_url(argv[1]);
    const auto model = ck::load_spec_file(argv[2]);
    std::string action = argv[3];
    // ACTION!undo: roll back every second commit right after it (its refund returns to the lease).
    const bool undo = action.size() > 5 && action.substr(action.size() - 5) == "!undo";
    if (undo) action.resize(action.size() - 5);
    const long steps = std::stol(argv[4]);
    PausePoint pause(argc, argv, 5);
    cl::EscrowOptions options;
    options.slice = ck::Decimal::parse(url.slice)->rescaled(model->budget.scale)->units;
    options.lifetime = url.lifetime;
    options.batch = url.batch;
    options.hook = [&] { pause.reached("flush"); };
    cl::EscrowKernel kernel(
        model, url.conninfo, url.task.empty() ? model->name : url.task, options);
    long committed = 0;  // net of the rollbacks
    long rolled_back = 0;
    std::string refused;
    for (long i = 0; i < steps; ++i) {
      const ck::Outcome o = kernel.execute(action);
      if (!o.receipt) {
        refused = o.decision.reasons.empty()
                      ? "?"
                      : std::string(ck::to_string(o.decision.reasons.front().code));
        break;
      }
      ++committed;
      if (kernel.pending() == 0)
        std::cout << "committed " << kernel.chain() << " " << o.receipt->sequence << std::endl;
      if (undo && (committed + rolled_back) % 2 == 0) {
        (void)kernel.rollback(*o.receipt);
        --committed;
        ++rolled_back;
      }
      pause.reached("after");
    }
    kernel.close();
    const cl::EscrowStats s = kernel.stats();
    const std::string task = url.task.empty() ? model->name : url.task;
    const auto pool = cl::EscrowKernel::pool(url.conninfo, *model, task);
    std::cout << "{\"committed\": " << committed << ", \"refused\": \"" << refused
              << "\", \"rolled_back\": " << rolled_back << ", \"leases\": " << s.leases
              << ", \"flushes\": " << s.flushes << ", \"expired\": " << s.expired
              << ", \"pool_free\": " << (pool->total - pool->reserved)
              << ", \"pool_active\": " << pool->active << "}" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "escrow_agent: " << e.what() << "\n";
    return 1;
  }
}
