// A test agent for the fault tests of the shared ledger (tests/ledger/faults.sh): executes one
// action repeatedly on a ledger, records each commit it is told of, and can stop at a phase of
// a commit until told to go on (so that the test can kill it, restart the server or drop its
// connection there, deterministically).
//   fault_agent URL SPEC ACTION STEPS [PHASE:K DIR]
// PHASE: decided | committing | transaction (inside the commit's transaction, before COMMIT).
// At the K-th time it reaches PHASE it creates DIR/paused, waits for DIR/go, and goes on.
// Prints one line per commit (`committed SEQ`) as it happens and, at the end, a JSON summary
// (the first reason's code and subject when it stops refused). With CLAMPAI_ROLLBACK_EVERY=N in
// the environment, every N-th commit is rolled back at once (`rolled_back SEQ`): a refund at
// every level of a task's budget pools.
#include <cstdlib>
#include <iostream>
#include <string>

#include "clampai/kernel.hpp"
#include "clampai/ledger/ledger.hpp"
#include "pause_point.hpp"

namespace ck = clampai::kernel;

int main(int argc, char** argv) {
  if (argc != 5 && argc != 7) {
    std::cerr << "usage: fault_agent URL SPEC ACTION STEPS [PHASE:K DIR]\n";
    return 2;
  }
  try {
    const std::string url = argv[1];
    const auto model = ck::load_spec_file(argv[2]);
    const std::string action = argv[3];
    const long steps = std::stol(argv[4]);
    PausePoint pause(argc, argv, 5);
    auto reached = [&](const std::string& name) { pause.reached(name); };
    auto ledger = clampai::ledger::open_ledger(url, model->name);
    if (auto* pg = dynamic_cast<clampai::ledger::PostgresLedger*>(ledger.get()))
      pg->set_transaction_hook([&] { reached("transaction"); });
    ck::SharedOptions options;
    options.hook = [&](ck::SharedPhase p) {
      reached(p == ck::SharedPhase::decided ? "decided" : "committing");
    };
    options.reconnect_delay_ms = 20;
    ck::SharedKernel kernel(model, ledger, options);
    const char* every_env = std::getenv("CLAMPAI_ROLLBACK_EVERY");
    const long rollback_every = every_env != nullptr ? std::stol(every_env) : 0;
    long committed = 0;
    long rolled_back = 0;
    std::string refused;
    std::string subject;
    for (long i = 0; i < steps; ++i) {
      const ck::Outcome o = kernel.execute(action);
      if (!o.receipt) {
        refused = o.decision.reasons.empty()
                      ? "?"
                      : std::string(ck::to_string(o.decision.reasons.front().code));
        if (!o.decision.reasons.empty()) subject = o.decision.reasons.front().subject;
        break;
      }
      ++committed;
      std::cout << "committed " << o.receipt->sequence << std::endl;
      if (rollback_every > 0 && committed % rollback_every == 0) {
        (void)kernel.rollback(*o.receipt);
        ++rolled_back;
        std::cout << "rolled_back " << o.receipt->sequence << std::endl;
      }
    }
    const ck::SharedStats s = kernel.stats();
    std::cout << "{\"committed\": " << committed << ", \"rolled_back\": " << rolled_back
              << ", \"refused\": \"" << refused << "\", \"subject\": \"" << subject
              << "\", \"conflicts\": " << s.conflicts << ", \"reconnects\": " << s.reconnects
              << ", \"in_doubt\": " << s.in_doubt << ", \"length\": " << kernel.length() << "}"
              << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fault_agent: " << e.what() << "\n";
    return 1;
  }
}
