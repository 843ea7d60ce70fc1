#!/usr/bin/python3
"""Times the Python reference (clampai 1.0.1) on the task shapes of bench_kernel.cpp.

Usage: reference_bench.py REFERENCE_DIR [--seconds S]

The task: `n` numeric variables v0..v(n-1), all 0; `k` blocking invariants
`v0 + v1 <= 10 + i`; one action `step` (cost 1) that increments v0 and decrements v1; a budget
that never runs out. Prints one JSON object: {name: {"ns": CPU nanoseconds per call}} plus, for
the trace verification, {"items_per_second": entries verified per second of wall time}. The reference is only
imported and called through its documented API (README, docs/API.md); nothing of it is copied.
"""

import json
import sys
import time


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: reference_bench.py REFERENCE_DIR [--seconds S]", file=sys.stderr)
        return 2
    sys.path.insert(0, sys.argv[1])
    seconds = 0.5
    if "--seconds" in sys.argv:
        seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
    try:
        import clampai  # noqa: F401  (the reference)
        from clampai import ActionSpec, Effect, Invariant, SafetyKernel, State
    except ImportError as e:
        print(f"cannot import the reference from {sys.argv[1]}: {e}", file=sys.stderr)
        return 2

    budget = 4_000_000_000_000.0

    def make(n_vars: int, n_invariants: int):
        state = State({f"v{i}": 0 for i in range(n_vars)})
        invariants = [
            Invariant(f"i{i}", (lambda s, bound=10 + i: s.get("v0") + s.get("v1") <= bound))
            for i in range(n_invariants)
        ]
        action = ActionSpec(
            id="step",
            name="step",
            description="increments v0, decrements v1",
            effects=(Effect("v0", "increment", 1), Effect("v1", "decrement", 1)),
            cost=1.0,
        )
        kernel = SafetyKernel(budget, invariants, min_action_cost=1.0)
        return kernel, state, action

    def timed(call, clock=time.process_time) -> float:
        """Nanoseconds per call, by `clock` (CPU time by default, as bench_kernel's cpu_time):
        batches until `seconds` have passed."""
        call()  # warm up
        calls, start = 0, clock()
        batch = 1
        while True:
            for _ in range(batch):
                call()
            calls += batch
            elapsed = clock() - start
            if elapsed >= seconds:
                return elapsed * 1e9 / calls
            batch = min(batch * 2, 4096)

    results = {}
    for n_vars, n_inv in ((10, 1), (10, 100), (1000, 1)):
        kernel, state, action = make(n_vars, n_inv)
        results[f"evaluate/{n_vars}/{n_inv}"] = {"ns": timed(lambda: kernel.evaluate(state, action))}

    for n_vars in (10, 1000):
        kernel, state, action = make(n_vars, 1)
        current = [state]

        def execute():
            current[0], _ = kernel.evaluate_and_execute_atomic(current[0], action)

        # The reference keeps its trace in memory too; a fresh kernel per shape, as ours.
        results[f"execute/{n_vars}"] = {"ns": timed(execute)}

    # Trace verification: a 1,001-entry trace (genesis-free in the reference: 1,000 steps).
    kernel, state, action = make(10, 1)
    for _ in range(1000):
        state, _ = kernel.evaluate_and_execute_atomic(state, action)
    ok, why = kernel.trace.verify_integrity()
    if not ok:
        print(f"the reference's trace does not verify: {why}", file=sys.stderr)
        return 1
    entries = kernel.trace.length
    # Wall time, as bench_kernel's BM_Trace_Verify (which hashes on every core).
    ns = timed(lambda: kernel.trace.verify_integrity(), clock=time.perf_counter)
    results["trace_verify"] = {"ns": ns, "items_per_second": entries * 1e9 / ns}
    json.dump(results, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
