"""One kernel shared by Python threads (with and without Python predicates), the GIL released
around the library's long calls, and no leak over 100,000 calls."""

import gc
import os
import sys
import threading

import pytest

import clampai
from clampai import ActionSpec, Effect, Invariant, SafetyKernel, State, TaskDefinition

THREADS = 8
PER_THREAD = 400


def counter_task(python_predicate: bool, budget: int):
    invariants = [Invariant("cap", "n <= 100000")]
    if python_predicate:
        invariants.append(Invariant("py_cap", lambda s: s["n"] <= 100000))
    return TaskDefinition(goal="", initial_state={"n": 0, "m": 0}, budget=budget,
                          min_action_cost=1, invariants=invariants,
                          available_actions=[
                              ActionSpec(id="inc", cost=1, effects=(Effect("n", "increment", 1),)),
                              ActionSpec(id="two", cost=2, effects=(Effect("m", "increment", 1),))])


def run_threads(target):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)  # a safety net against a deadlock, not a timing assertion
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"
    assert not errors, errors


@pytest.mark.parametrize("python_predicate", [False, True])
def test_a_shared_kernel_commits_exactly_what_the_budget_allows(python_predicate):
    budget = THREADS * PER_THREAD // 2  # half of the attempts fit
    k = SafetyKernel(counter_task(python_predicate, budget))
    approved = [0] * THREADS

    def work(i):
        for _ in range(PER_THREAD):
            if k.execute("inc").approved:
                approved[i] += 1
            k.evaluate("two")

    run_threads(work)
    assert sum(approved) == budget  # T1 under contention: no lost or double charge
    assert k.state["n"] == budget and k.step_count == budget
    assert k.budget.remaining == 0
    assert k.verify_trace().ok and k.trace_length == budget + 1


def test_rollbacks_from_threads_never_corrupt_the_ledger():
    k = SafetyKernel(counter_task(True, 10 ** 6))

    def work(_):
        for _ in range(100):
            out = k.execute("inc")
            try:
                k.rollback(out.receipt)  # only the most recent commit may be rolled back
            except clampai.InvalidArgument:
                pass

    run_threads(work)
    b = k.budget
    assert b.spent_net == k.state["n"]  # every refund matches exactly one undone commit
    assert b.spent_gross == k.step_count
    assert k.verify_trace().ok


@pytest.mark.parametrize("call", ["evaluate", "state", "budget", "trace", "lookahead"])
def test_a_thread_waiting_for_the_kernel_does_not_hold_the_gil(call):
    # Thread A is inside the kernel (holding its lock) in a Python predicate that waits for
    # thread C; the main thread then calls the kernel and must wait for A. C can only run if
    # the main thread released the GIL before blocking on the kernel's lock. Preemptive GIL
    # switching is turned off, so C cannot get the GIL any other way: if the main thread kept
    # it, A could never take the GIL back and the test would deadlock (ctest's timeout then
    # fails it; checked by breaking the release on purpose).
    in_predicate, main_calling, released = (threading.Event() for _ in range(3))
    outcome = {}

    def predicate(state):
        if state["n"] == 1 and not in_predicate.is_set():
            in_predicate.set()
            outcome["released"] = released.wait(60)
        return True

    task = TaskDefinition(goal="", initial_state={"n": 0}, budget=10, min_action_cost=1,
                          invariants=[Invariant("py", predicate)],
                          available_actions=[ActionSpec(id="inc", cost=1,
                                                        effects=(Effect("n", "increment", 1),))])
    k = SafetyKernel(task)

    def c():
        main_calling.wait(60)
        released.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(100)
    try:
        threads = [threading.Thread(target=lambda: outcome.update(a=k.execute("inc").approved)),
                   threading.Thread(target=c)]
        for t in threads:
            t.start()
        assert in_predicate.wait(60)
        main_calling.set()
        # Each of these takes the kernel's lock, so it blocks until A is done.
        d = {"evaluate": lambda: k.evaluate("inc"), "state": lambda: k.state,
             "budget": lambda: k.budget, "trace": lambda: k.trace,
             "lookahead": lambda: clampai.lookahead(k, "inc", depth=1)}[call]()
        for t in threads:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(old)
    assert outcome == {"released": True, "a": True}
    assert d is not None and k.state["n"] == 1


def test_long_calls_run_with_python_predicates_from_threads():
    # verify and lookahead release the GIL and call Python predicates back with it held.
    calls = []

    def predicate(state):
        calls.append(threading.get_ident())
        return state["x"] <= 9

    task = TaskDefinition(goal="", initial_state={"x": 0}, budget=10, min_action_cost=1,
                          invariants=[Invariant("small", "x <= 5"), Invariant("py", predicate)],
                          available_actions=[
                              ActionSpec(id="a", cost=1, effects=(Effect("x", "increment", 3),))])
    results = []

    def work(_):
        r = clampai.verify(task)
        la = clampai.lookahead(task, "a", depth=3)
        results.append(({o.id: o.verdict for o in r.obligations}, la.approved))

    run_threads(work)
    assert len(results) == THREADS and all(r == results[0] for r in results)
    verdicts, approved = results[0]
    assert verdicts["preservation:a:py"] == "unknown" and approved
    assert len(set(calls)) > 1  # called back on several threads


def rss_kib() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def address_sanitized() -> bool:
    """True when AddressSanitizer's runtime is loaded (scripts/python-asan.sh): its quarantine
    keeps freed memory, so the RSS grows however little leaks."""
    with open("/proc/self/maps") as f:
        return "libasan" in f.read()


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_no_leak_over_100000_calls():
    task = counter_task(True, 5)
    k = SafetyKernel(task)
    for _ in range(5):
        k.execute("inc")  # the budget is spent: further executes are rejections (no trace)
    action, params, state = "inc", {}, State({"n": 1, "m": 0})
    predicate = task.invariants[1].predicate
    tracked = (action, params, state, predicate, clampai.Decision, clampai._clampai.Outcome)
    refs = [sys.getrefcount(x) for x in tracked]

    def calls(n):
        for i in range(n):
            d = k.evaluate(action, params)
            if i % 4 == 0:
                k.execute(action, params).decision.to_dict()
            elif i % 4 == 1:
                k.evaluate_in(state, "two").reasons
            elif i % 4 == 2:
                State({"n": i, "m": [1, 2], "d": 0.5}).to_dict()
            else:
                d.reason_codes, k.state.get("n"), k.budget
    calls(10_000)  # warm up allocators and caches
    gc.collect()
    before = rss_kib()
    calls(100_000)
    gc.collect()
    grown = rss_kib() - before
    assert grown < 4096 or address_sanitized(), f"RSS grew by {grown} KiB over 100,000 calls"
    assert [sys.getrefcount(x) for x in tracked] == refs
    assert k.trace_length == 6  # rejections were not traced


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_verify_with_jobs_works_in_a_forked_child(examples):
    # docs/PYTHON.md: the library's worker threads are started afresh in a forked child (the
    # parent's exist only in the parent). The parent has used them; the child verifies again.
    spec = examples / "quickstart.json"
    assert clampai.verify(spec, jobs=2).all_proved
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery, only an exit status
        status = 1
        try:
            import signal
            signal.alarm(120)  # a safety net against a deadlock, not a timing assertion
            status = 0 if clampai.verify(spec, jobs=2).all_proved else 1
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_the_reference_form_does_not_leak():
    # The reference's SafetyKernel(budget, invariants): each evaluate goes through the C++
    # ledger (`_Ledger.decide`), which returns a new Decision and a new State.
    predicate = lambda s: s.get("n", 0) <= 3  # noqa: E731
    kernel = SafetyKernel(10.0 ** 6, [Invariant("cap", predicate)])
    ok = ActionSpec(id="ok", effects=(Effect("n", "increment", 1),), cost=1.0)
    bad = ActionSpec(id="bad", effects=(Effect("n", "set", 9),), cost=1.0)
    state = State({"n": 0})
    tracked = (predicate, ok, bad, state)

    def calls(n):
        for i in range(n):
            verdict = kernel.evaluate(state, ok if i % 2 else bad)
            verdict.rejection_reasons, verdict.decision.reason_codes

    calls(5_000)  # builds and caches the two models (each holds the predicate)
    gc.collect()
    refs = [sys.getrefcount(x) for x in tracked]
    before = rss_kib()
    calls(50_000)
    gc.collect()
    grown = rss_kib() - before
    assert grown < 4096 or address_sanitized(), f"RSS grew by {grown} KiB over 50,000 calls"
    assert [sys.getrefcount(x) for x in tracked] == refs
