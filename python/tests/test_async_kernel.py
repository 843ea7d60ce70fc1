"""AsyncSafetyKernel (the reference's async kernel, issue 38): the README's example, decisions
off the event loop when a predicate may block, and cancellation before and after the commit
starts. No test depends on timing: threads are held and released with events."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from clampai import (ActionSpec, AsyncSafetyKernel, Effect, Invariant, SafetyViolation, State,
                     make_action, make_state)


def run(coro):
    return asyncio.run(coro)


def test_readme_async_kernel():
    async def main():
        state, action = make_state(n=0), make_action("step", cost=1.0, n=1)
        kernel = AsyncSafetyKernel(budget=10.0, invariants=[])
        verdict = await kernel.evaluate(state, action)
        new_state, entry = await kernel.execute_atomic(state, action)
        return verdict, new_state, entry, kernel

    verdict, new_state, entry, kernel = run(main())
    assert verdict.approved and new_state["n"] == 1 and entry.step == 1
    assert kernel.step_count == 1 and kernel.budget.remaining == 9.0
    assert kernel.trace.length == 1 and kernel.max_steps == 10000


def test_concurrent_coroutines_share_one_budget():
    async def main():
        kernel = AsyncSafetyKernel(budget=5.0, invariants=[
            Invariant("cap", lambda s: s.get("n", 0) <= 100)])  # callable: off the loop
        action = ActionSpec(id="step", effects=(Effect("n", "increment", 1),), cost=1.0)

        async def one():
            try:
                await kernel.execute_atomic(State({"n": 0}), action)
                return True
            except SafetyViolation:
                return False

        results = await asyncio.gather(*(one() for _ in range(8)))
        return kernel, results

    kernel, results = run(main())
    assert sum(results) == 5 and kernel.step_count == 5 and kernel.budget.remaining == 0.0


def test_a_blocking_predicate_runs_off_the_event_loop():
    loop_threads, predicate_threads = [], []

    def predicate(s):
        predicate_threads.append(threading.get_ident())
        return True

    async def main():
        loop_threads.append(threading.get_ident())
        kernel = AsyncSafetyKernel(10.0, [Invariant("p", predicate)])
        await kernel.evaluate(make_state(n=0), make_action("a", cost=1.0, n=1))
        await kernel.execute_atomic(make_state(n=0), make_action("a", cost=1.0, n=1))
        fast = AsyncSafetyKernel(10.0, [])  # no Python predicate: decided on the loop
        await fast.execute_atomic(make_state(n=0), make_action("a", cost=1.0, n=1))
        return fast

    fast = run(main())
    assert predicate_threads and loop_threads[0] not in predicate_threads
    assert fast.step_count == 1


def test_offload_false_decides_a_python_predicate_on_the_loop():
    loop_threads, predicate_threads = [], []

    def predicate(s):
        predicate_threads.append(threading.get_ident())
        return s.get("n", 0) <= 1

    async def main():
        loop_threads.append(threading.get_ident())
        kernel = AsyncSafetyKernel(10.0, [Invariant("p", predicate)], offload=False)
        state, action = make_state(n=0), make_action("a", cost=1.0, n=1)
        assert (await kernel.evaluate(state, action)).approved
        state, _ = await kernel.execute_atomic(state, action)
        with pytest.raises(SafetyViolation):
            await kernel.execute_atomic(state, make_action("b", cost=1.0, n=5))
        return kernel

    kernel = run(main())
    assert set(predicate_threads) == {loop_threads[0]}
    assert kernel.step_count == 1


def test_cancelled_before_the_commit_starts_changes_nothing():
    blocker = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        async def main():
            kernel = AsyncSafetyKernel(10.0, [Invariant("p", lambda s: True)], executor=pool)
            pool.submit(blocker.wait)  # the only worker is busy: the commit cannot start
            task = asyncio.ensure_future(
                kernel.execute_atomic(make_state(n=0), make_action("a", cost=1.0, n=1)))
            await asyncio.sleep(0)  # the task submits its commit and waits
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            blocker.set()
            await asyncio.get_running_loop().run_in_executor(pool, lambda: None)  # drained
            return kernel

        kernel = run(main())
    assert kernel.step_count == 0 and kernel.budget.spent_gross == 0.0
    assert kernel.trace.length == 0


def test_cancelled_after_the_commit_started_lets_it_finish():
    inside, release = threading.Event(), threading.Event()

    def hold(s):
        inside.set()
        release.wait(timeout=30)
        return True

    async def main():
        kernel = AsyncSafetyKernel(10.0, [Invariant("hold", hold)])
        task = asyncio.ensure_future(
            kernel.execute_atomic(make_state(n=0), make_action("a", cost=1.0, n=1)))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, inside.wait, 30)  # the commit is under way
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return kernel

    kernel = run(main())
    assert kernel.step_count == 1 and kernel.budget.spent_net == 1.0  # committed, whole
    assert kernel.trace.length == 1 and kernel.trace.verify_integrity()[0]


def test_a_rejection_raises_and_the_lock_is_released():
    async def main():
        kernel = AsyncSafetyKernel(1.0, [])
        with pytest.raises(SafetyViolation):
            await kernel.execute_atomic(make_state(), make_action("big", cost=5.0))
        state, _ = await kernel.evaluate_and_execute_atomic(make_state(),
                                                            make_action("ok", cost=1.0))
        return kernel, state

    kernel, state = run(main())
    assert kernel.step_count == 1 and "step=1" in kernel.status()
