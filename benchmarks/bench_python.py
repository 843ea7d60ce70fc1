#!/usr/bin/env python3
"""evaluate and execute through the Python bindings, beside the C++ call itself and the
pure-Python reference (../shared/reference/clampai-1.0.1), in one process on the same task:
the seed's quick start (a counter, one action, the invariant `errors <= 3`).

    PYTHONPATH=build/rel/python /usr/bin/python3 benchmarks/bench_python.py \
        --reference ../shared/reference/clampai-1.0.1

The bindings run the invariant as an expression (what the verifier can prove) and, in a second
kernel, as a Python callable (what the reference runs). Figures: BENCHMARKS.md.
"""

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import clampai
from clampai import ActionSpec, Effect, Invariant, SafetyKernel, State, TaskDefinition
from clampai import _clampai

BUDGET = 10 ** 9  # never the limit: every timed call is approved


def task(callable_invariant: bool) -> TaskDefinition:
    inv = (Invariant("max_errors", lambda s: s.get("errors", 0) <= 3) if callable_invariant
           else Invariant("max_errors", "errors <= 3"))
    return TaskDefinition(
        goal="Process records", initial_state=State({"processed": 0, "errors": 0}),
        available_actions=[ActionSpec(id="process_batch", name="Process Batch",
                                      effects=(Effect("processed", "increment", 5),), cost=2.0)],
        invariants=[inv], budget=BUDGET, min_action_cost=1)


def load_reference(root: Path):
    spec = importlib.util.spec_from_file_location("clampai_reference_formal",
                                                  root / "clampai" / "formal.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def find_reference() -> Path:
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "reference" / "clampai-1.0.1"
        if (candidate / "clampai" / "formal.py").is_file():
            return candidate
    return Path("../shared/reference/clampai-1.0.1")


def per_call_ns(fn, iterations: int, repeats: int) -> float:
    """The median over `repeats` of the mean CPU time (this thread's) per call of `iterations`
    calls: other processes loading the machine do not count."""
    runs = []
    for _ in range(repeats):
        start = time.thread_time_ns()
        fn(iterations)
        runs.append((time.thread_time_ns() - start) / iterations)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, default=find_reference(),
                        help="the reference's directory (default: shared/reference/"
                        "clampai-1.0.1 in a directory above this one)")
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    n, r = args.iterations, args.repeats
    rows = {}

    # The C++ call, timed in a C++ loop in this process.
    k = SafetyKernel(task(False))
    rows["evaluate: C++ call"] = statistics.median(
        _clampai._time_cpp(k, "evaluate", "process_batch", n) for _ in range(r))
    k = SafetyKernel(task(False))
    rows["execute: C++ call"] = statistics.median(
        _clampai._time_cpp(k, "execute", "process_batch", n) for _ in range(r))

    # Through the bindings.
    for label, callable_inv in (("expression invariant", False), ("Python invariant", True)):
        k = SafetyKernel(task(callable_inv))
        evaluate = k.evaluate

        def run_eval(i, evaluate=evaluate):
            for _ in range(i):
                evaluate("process_batch")

        rows[f"evaluate: bindings, {label}"] = per_call_ns(run_eval, n, r)
        k = SafetyKernel(task(callable_inv))
        execute = k.execute

        def run_exec(i, execute=execute):
            for _ in range(i):
                execute("process_batch")

        rows[f"execute: bindings, {label}"] = per_call_ns(run_exec, n, r)

    # The reference's form of the kernel here (the state with every call), with the callable
    # invariant the reference runs: a model per state shape and action, cached, then the C++
    # decision.
    inv = Invariant("max_errors", lambda s: s.get("errors", 0) <= 3)
    form_action = ActionSpec(id="process_batch", name="Process Batch",
                             effects=(Effect("processed", "increment", 5),), cost=2.0)
    fk = SafetyKernel(BUDGET, [inv], min_action_cost=1)
    form_state = State({"processed": 0, "errors": 0})

    def form_eval(i):
        for _ in range(i):
            fk.evaluate(form_state, form_action)

    rows["evaluate: reference form, Python invariant"] = per_call_ns(form_eval, max(n // 10, 100),
                                                                     r)
    fk = SafetyKernel(BUDGET, [inv], min_action_cost=1)
    form_holder = [form_state]

    def form_exec(i):
        for _ in range(i):
            form_holder[0], _entry = fk.execute(form_holder[0], form_action)

    rows["execute: reference form, Python invariant"] = per_call_ns(form_exec, max(n // 10, 100), r)

    # The async kernel (the reference's AsyncSafetyKernel form): `await` of sequential calls in
    # one coroutine, timed in CPU time of the whole process (the executor's thread counts).
    # Its overhead per call is the difference from the synchronous reference form above.
    import asyncio

    def per_call_async(make_call, iterations: int) -> float:
        async def loop(i):
            call = make_call()
            for _ in range(i):
                await call()

        runs = []
        for _ in range(r):
            start = time.process_time_ns()
            asyncio.run(loop(iterations))
            runs.append((time.process_time_ns() - start) / iterations)
        return statistics.median(runs)

    for label, invariant in (("expression invariant", Invariant("max_errors", "errors <= 3")),
                             ("Python invariant", inv)):
        def async_eval(invariant=invariant):
            ak = clampai.AsyncSafetyKernel(BUDGET, [invariant], min_action_cost=1)
            return lambda: ak.evaluate(form_state, form_action)

        def async_exec(invariant=invariant):
            ak = clampai.AsyncSafetyKernel(BUDGET, [invariant], min_action_cost=1)
            held = [form_state]

            async def call():
                held[0], _ = await ak.execute_atomic(held[0], form_action)
            return call

        def sync_eval(invariant=invariant):
            sk = SafetyKernel(BUDGET, [invariant], min_action_cost=1)

            async def call():
                sk.evaluate(form_state, form_action)
            return call

        def sync_exec(invariant=invariant):
            sk = SafetyKernel(BUDGET, [invariant], min_action_cost=1)
            held = [form_state]

            async def call():
                held[0], _ = sk.execute(held[0], form_action)
            return call

        m = max(n // 10, 100)
        rows[f"evaluate: reference form, sync, {label}"] = per_call_async(sync_eval, m)
        rows[f"evaluate: reference form, async, {label}"] = per_call_async(async_eval, m)
        rows[f"execute: reference form, sync, {label}"] = per_call_async(sync_exec, m)
        rows[f"execute: reference form, async, {label}"] = per_call_async(async_exec, m)

    # The reference, same task, same process (skipped, with a note, where it is not installed).
    if not (args.reference / "clampai" / "formal.py").is_file():
        print(f"bench_python: no reference at {args.reference}: its rows are skipped",
              file=sys.stderr)
        for name, ns in rows.items():
            print(f"{name:48} {ns:12.0f}")
        return
    ref = load_reference(args.reference)
    ref_action = ref.ActionSpec(id="process_batch", name="Process Batch", description="",
                                effects=(ref.Effect("processed", "increment", 5),), cost=2.0)
    ref_inv = ref.Invariant("max_errors", lambda s: s.get("errors", 0) <= 3)
    ref_state = ref.State({"processed": 0, "errors": 0})
    rk = ref.SafetyKernel(float(BUDGET), [ref_inv], min_action_cost=1.0)

    def ref_eval(i):
        for _ in range(i):
            rk.evaluate(ref_state, ref_action)

    rows["evaluate: reference (pure Python)"] = per_call_ns(ref_eval, max(n // 10, 100), r)
    rk = ref.SafetyKernel(float(BUDGET), [ref_inv], min_action_cost=1.0)
    holder = [ref_state]

    def ref_exec(i):
        for _ in range(i):
            holder[0], _entry = rk.execute(holder[0], ref_action)

    rows["execute: reference (pure Python)"] = per_call_ns(ref_exec, max(n // 10, 100), r)

    # The reference's AsyncSafetyKernel (it decides on the event loop, whatever the invariant).
    def ref_async_eval():
        ak = ref.AsyncSafetyKernel(float(BUDGET), [ref_inv], min_action_cost=1.0)
        return lambda: ak.evaluate(ref_state, ref_action)

    def ref_async_exec():
        ak = ref.AsyncSafetyKernel(float(BUDGET), [ref_inv], min_action_cost=1.0)
        held = [ref_state]

        async def call():
            held[0], _ = await ak.execute_atomic(held[0], ref_action)
        return call

    rows["evaluate: reference async (pure Python)"] = per_call_async(ref_async_eval,
                                                                     max(n // 10, 100))
    rows["execute: reference async (pure Python)"] = per_call_async(ref_async_exec,
                                                                    max(n // 10, 100))

    ratios = {}
    for op in ("evaluate", "execute"):
        cpp = rows[f"{op}: C++ call"]
        ref_ns = rows[f"{op}: reference (pure Python)"]
        for label in ("expression invariant", "Python invariant"):
            b = rows[f"{op}: bindings, {label}"]
            ratios[f"{op}, {label}: bindings / C++"] = b / cpp
            ratios[f"{op}, {label}: reference / bindings"] = ref_ns / b
        ratios[f"{op}, reference form: reference / bindings"] = (
            ref_ns / rows[f"{op}: reference form, Python invariant"])
        for label in ("expression invariant", "Python invariant"):
            ratios[f"{op}, async, {label}: overhead ns/call"] = (
                rows[f"{op}: reference form, async, {label}"]
                - rows[f"{op}: reference form, sync, {label}"])
    if args.json:
        print(json.dumps({"ns_per_call": rows, "ratios": ratios,
                          "python": platform.python_version()}, indent=2))
        return
    print(f"Python {platform.python_version()} ({sys.executable}), clampai {clampai.__version__}, "
          f"{n} calls x {r} runs (reference: {max(n // 10, 100)} calls)")
    print(f"{'call (CPU time)':48} {'ns/call':>12}")
    for name, ns in rows.items():
        print(f"{name:48} {ns:12.0f}")
    for name, ratio in ratios.items():
        unit = "" if name.endswith("ns/call") else "x"
        print(f"{name:48} {ratio:11.1f}{unit}")


if __name__ == "__main__":
    main()
