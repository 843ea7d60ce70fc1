"""AsyncOrchestrator (the Python ClampAI's async agent loop, issue 38): the C++ loop runs off the
event loop, an async adapter is awaited on it, and a cancellation before the hand-over to the
kernel commits nothing while one after it lets the commit finish. No test depends on timing:
the loop's thread is held and released with events."""

import asyncio
import threading

import pytest

from clampai import AsyncOrchestrator, AsyncSafetyKernel, SafetyKernel
from conftest import quickstart_task


def run(coro):
    return asyncio.run(coro)


def test_the_readme_form_runs_to_the_goal():
    async def main():
        engine = AsyncOrchestrator(quickstart_task())
        return await engine.run(), engine

    result, engine = run(main())
    assert result.goal_achieved and result.termination_reason.name == "GOAL_ACHIEVED"
    assert result.final_state["processed"] == 10
    assert engine.task_kernel.step_count == result.total_steps >= 2


class AsyncLLM:
    """The native async form: `acomplete` is a coroutine; records the thread it runs in."""

    def __init__(self):
        self.threads = []

    async def acomplete(self, prompt, system_prompt="", *, temperature=0.3, max_tokens=2000):
        self.threads.append(threading.get_ident())
        await asyncio.sleep(0)
        return '{"action": "process_batch"}'

    def complete(self, prompt, system_prompt="", temperature=0.3, max_tokens=2000):
        raise AssertionError("complete() called although acomplete() exists")


def test_an_async_adapter_is_awaited_on_the_event_loop():
    llm = AsyncLLM()

    async def main():
        loop_thread = threading.get_ident()
        result = await AsyncOrchestrator(quickstart_task(), llm).run()
        return result, loop_thread

    result, loop_thread = run(main())
    assert result.goal_achieved and result.llm_calls == len(llm.threads) >= 1
    assert set(llm.threads) == {loop_thread}


def test_a_sync_adapter_runs_off_the_event_loop():
    threads = []

    class SyncLLM:
        def complete(self, prompt, system_prompt="", temperature=0.3, max_tokens=2000):
            threads.append(threading.get_ident())
            return '{"action": "process_batch"}'

    async def main():
        result = await AsyncOrchestrator(quickstart_task(), SyncLLM()).run()
        return result, threading.get_ident()

    result, loop_thread = run(main())
    assert result.goal_achieved and threads and loop_thread not in threads


def test_cancelled_while_the_llm_thinks_commits_nothing():
    """Cancelled before the chosen action is handed to the kernel: the kernel is unchanged and
    the adapter's pending call is cancelled too."""
    state = {"cancelled": False}

    class StuckLLM:
        def __init__(self):
            self.started = asyncio.Event()

        async def acomplete(self, prompt, system_prompt="", *, temperature=0.3,
                            max_tokens=2000):
            self.started.set()
            try:
                await asyncio.Event().wait()  # never answers
            except asyncio.CancelledError:
                state["cancelled"] = True
                raise

    async def main():
        llm = StuckLLM()
        engine = AsyncOrchestrator(quickstart_task(), llm)
        task = asyncio.create_task(engine.run())
        await llm.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return engine

    engine = run(main())
    assert state["cancelled"]
    kernel = engine.task_kernel
    assert kernel.step_count == 0 and len(kernel.trace) == 1  # the genesis only
    assert kernel.budget.spent_net == 0 and kernel.state["processed"] == 0


def test_cancelled_after_the_hand_over_lets_the_commit_finish():
    """Cancelled while the kernel commits (held in a precondition, which the commit consults
    after the adapter answered): the commit completes, nothing after it runs, and the caller
    still gets CancelledError."""
    answered = threading.Event()
    release = threading.Event()
    calls = {"commit": 0}

    class OnceLLM:
        def __init__(self):
            self.calls = 0

        async def acomplete(self, prompt, system_prompt="", *, temperature=0.3,
                            max_tokens=2000):
            self.calls += 1
            answered.set()
            return '{"action": "process_batch"}'

    async def main():
        loop = asyncio.get_running_loop()
        committing = asyncio.Event()
        engine = AsyncOrchestrator(quickstart_task(), OnceLLM())

        def hold(state, action):
            if answered.is_set() and calls["commit"] == 0:  # the first commit's check
                calls["commit"] += 1
                loop.call_soon_threadsafe(committing.set)
                release.wait()
            return True

        engine.task_kernel.add_precondition(hold)
        task = asyncio.create_task(engine.run())
        await committing.wait()
        task.cancel()
        for _ in range(3):
            await asyncio.sleep(0)  # lets run() see the cancellation first (either order is fine)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return engine

    engine = run(main())
    assert calls["commit"] == 1
    kernel = engine.task_kernel
    assert kernel.step_count == 1 and kernel.state["processed"] == 5
    assert kernel.budget.spent_net == 2


def test_orchestrators_share_one_kernel():
    async def main():
        task = quickstart_task()
        shared = SafetyKernel(task)
        a = AsyncOrchestrator(task, kernel=shared)
        b = AsyncOrchestrator(task, kernel=shared)
        results = await asyncio.gather(a.run(), b.run())
        return shared, results

    shared, results = run(main())
    assert shared.state["processed"] >= 10
    assert sum(r.actions_succeeded for r in results) == shared.step_count
    assert shared.budget.spent_net <= shared.budget.budget


def test_the_readme_form_two_tasks_share_an_async_kernels_budget():
    """The Python ClampAI's README: `AsyncOrchestrator(task_a, kernel=shared_kernel)` beside
    `AsyncOrchestrator(task_b, kernel=shared_kernel)`, one budget for both."""
    async def main():
        shared_kernel = AsyncSafetyKernel(budget=5.0, invariants=[])
        a = AsyncOrchestrator(quickstart_task(), kernel=shared_kernel)
        b = AsyncOrchestrator(quickstart_task(goal="Process 10 records too"),
                              kernel=shared_kernel)
        results = await asyncio.gather(a.run(), b.run())
        return shared_kernel, (a, b), results

    shared, engines, results = run(main())
    assert all(e.kernel is shared for e in engines)
    spent = sum(e.task_kernel.budget.spent_net for e in engines)
    assert shared.budget.spent_net == float(spent) <= 5.0  # each commit charged once
    assert shared.budget.spent_refunded == 0
    names = {r.termination_reason.name for r in results}
    assert names <= {"GOAL_ACHIEVED", "BUDGET_EXHAUSTED"} and "BUDGET_EXHAUSTED" in names


def test_a_rejected_action_is_refunded_to_the_shared_budget():
    class Failing:
        def complete(self, prompt, system_prompt="", temperature=0.3, max_tokens=2000):
            return '{"action": "fail"}'  # errors += 2: the second breaks max_errors

    async def main():
        shared = AsyncSafetyKernel(budget=50.0, invariants=[])
        engine = AsyncOrchestrator(quickstart_task(), Failing(), kernel=shared)
        return shared, engine, await engine.run()

    shared, engine, result = run(main())
    assert engine.task_kernel.step_count == 1 and result.actions_rejected_safety >= 1
    assert shared.budget.spent_net == 1.0
    assert shared.budget.spent_refunded == shared.budget.spent_gross - 1.0 >= 1.0


def test_a_kernel_of_another_kind_or_task_is_refused():
    with pytest.raises(TypeError, match="for this task or an AsyncSafetyKernel"):
        AsyncOrchestrator(quickstart_task(), kernel=object())
    other = SafetyKernel(quickstart_task(budget=30.0))
    with pytest.raises(ValueError, match="model differs"):
        AsyncOrchestrator(quickstart_task(), kernel=other)
