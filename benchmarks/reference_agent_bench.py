#!/usr/bin/python3
"""Times the Python reference's orchestrator (clampai 1.0.1) with its own mock LLM on the task of
bench_agent.cpp.

Usage: reference_agent_bench.py REFERENCE_DIR [--runs N]

The task: 20 numeric variables v0..v19, all 0; 50 actions a0..a49, a<i> increments v<i % 20>
(cost 1); 5 blocking invariants v<k> <= 10^9; the goal v0 >= 10^6 (out of reach); a budget of
200 with a minimum action cost of 1, so the run stops at the T2 bound of 200 steps. Prints one
JSON object: {"agent_step": {"ns": CPU nanoseconds per step of Orchestrator.run(), "steps":
steps per run, "runs": runs}}. The orchestrator is built outside the timed region. The
reference is only imported and called through its documented API (README, docs/API.md);
nothing of it is copied.
"""

import json
import logging
import sys
import time


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: reference_agent_bench.py REFERENCE_DIR [--runs N]", file=sys.stderr)
        return 2
    sys.path.insert(0, sys.argv[1])
    runs = 5
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
    try:
        from clampai import ActionSpec, Effect, Invariant, Orchestrator, State, TaskDefinition
    except ImportError as e:
        print(f"cannot import the reference from {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    logging.disable(logging.CRITICAL)

    def task():
        return TaskDefinition(
            goal="v0 >= 1000000",
            initial_state=State({f"v{i}": 0 for i in range(20)}),
            available_actions=[
                ActionSpec(
                    id=f"a{i}",
                    name=f"a{i}",
                    description=f"increments v{i % 20}",
                    effects=(Effect(f"v{i % 20}", "increment", 1),),
                    cost=1.0,
                )
                for i in range(50)
            ],
            invariants=[
                Invariant(f"cap{k}", (lambda s, k=k: s.get(f"v{k}") <= 1_000_000_000))
                for k in range(5)
            ],
            budget=200.0,
            goal_predicate=lambda s: s.get("v0") >= 1_000_000,
            goal_progress_fn=lambda s: s.get("v0") / 1_000_000,
            min_action_cost=1.0,
        )

    total_ns, total_steps = 0, 0
    for _ in range(runs):
        orchestrator = Orchestrator(task())
        start = time.process_time_ns()
        result = orchestrator.run()
        total_ns += time.process_time_ns() - start
        total_steps += result.total_steps
    if total_steps == 0:
        print("the reference's orchestrator took no step", file=sys.stderr)
        return 1
    print(json.dumps({"agent_step": {"ns": total_ns / total_steps,
                                     "steps": total_steps / runs, "runs": runs}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
