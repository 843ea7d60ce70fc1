"""ProcessSharedBudgetController on the shared ledger (issue 38): a PostgreSQL URL keeps one budget
for processes anywhere, each charge and refund an entry of a task's trace committed by the C++
SharedKernel. Runs on a throwaway cluster (ctest `python_tests_postgres`, through
scripts/with-postgres.sh); skipped without DATABASE_URL."""

import multiprocessing
import os
import subprocess
from decimal import Decimal

import pytest

from clampai import InvalidArgument, ProcessSharedBudgetController

DATABASE_URL = os.environ.get("DATABASE_URL", "")
pytestmark = pytest.mark.skipif(not DATABASE_URL.startswith("postgresql"),
                                reason="needs DATABASE_URL (scripts/with-postgres.sh)")

WORKERS = 3
TRIES = 15  # 45 tries of 0.5 against a budget of 10: 20 succeed


def url(task):
    return f"{DATABASE_URL}#{task}"


def charge_until_refused(controller, name, results):
    done = 0
    for i in range(TRIES):
        try:
            controller.charge(f"{name}-{i}", 0.5)
            done += 1
        except RuntimeError:
            pass
    results.put(done)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_processes_charging_concurrently_never_overspend(context):
    controller = ProcessSharedBudgetController(10, url=url(f"race-{context}"))
    ctx = multiprocessing.get_context(context)
    results = ctx.Queue()
    procs = [ctx.Process(target=charge_until_refused, args=(controller, f"w{n}", results))
             for n in range(WORKERS)]
    for p in procs:
        p.start()
    counts = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert sum(counts) == 20
    exact = controller.exact()  # the parent's own connection, refreshed
    assert exact["spent_gross"] == exact["budget"] == 10 and exact["remaining"] == 0
    assert controller.can_afford(0.00001)[0] is False


def test_the_interface_and_the_trace(tmp_path):
    b = ProcessSharedBudgetController(10.0, url=url("interface"))
    b.charge("a", 3.5)
    assert b.can_afford(6.5) == (True, "")
    with pytest.raises(RuntimeError, match="cannot charge 7"):
        b.charge("b", 7)
    b.refund("a", 1.25)
    with pytest.raises(InvalidArgument, match="more than the net spend 2.25"):
        b.refund("a", 2.5)
    with pytest.raises(ValueError, match="more digits"):
        b.charge("c", Decimal("0.000001"))
    other = ProcessSharedBudgetController(10, url=url("interface"))  # another connection
    assert other.exact()["spent_net"] == Decimal("2.25") and b.path == ""
    assert (b.spent_gross, b.spent_refunded, b.utilization()) == (3.5, 1.25, 0.225)
    # The task's trace is the ledger's: the CLI verifies its chain (approved and rejected).
    cli = os.environ.get("CLAMPAI_CLI")
    if cli:
        done = subprocess.run([cli, "trace", "verify", url("interface")], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr + done.stdout


def test_another_budget_for_the_task_is_refused():
    ProcessSharedBudgetController(5, url=url("five"))
    with pytest.raises(ValueError, match="holds another budget than 6"):
        ProcessSharedBudgetController(6, url=url("five"))
