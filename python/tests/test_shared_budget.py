"""ProcessSharedBudgetController (the Python ClampAI's, issue 38): one budget for several
processes on one machine, in a locked file. Processes charging concurrently never overspend
(T1), whether they got the controller by fork, by pickling (spawn) or by opening its file."""

import multiprocessing
import pickle
from decimal import Decimal

import pytest

from clampai import InvalidArgument, ProcessSharedBudgetController

WORKERS = 4
TRIES = 40  # each worker tries this many charges of 0.1: 160 tries for a budget of 10 (100)


def charge_until_refused(controller, name, tries, results):
    done = 0
    for i in range(tries):
        try:
            controller.charge(f"{name}-{i}", 0.1)
            done += 1
        except RuntimeError:
            pass
    results.put(done)


def run_workers(context, make_controller):
    ctx = multiprocessing.get_context(context)
    results = ctx.Queue()
    procs = [ctx.Process(target=charge_until_refused,
                         args=(make_controller(), f"w{n}", TRIES, results))
             for n in range(WORKERS)]
    for p in procs:
        p.start()
    counts = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    return counts


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_processes_charging_concurrently_never_overspend(context):
    controller = ProcessSharedBudgetController(10.0)
    counts = run_workers(context, lambda: controller)
    # 160 tries of 0.1 against 10: exactly 100 succeed, whoever makes them (exact arithmetic).
    assert sum(counts) == 100
    exact = controller.exact()
    assert exact["spent_gross"] == exact["budget"] == Decimal(10)
    assert exact["remaining"] == 0 and controller.spent_net == 10.0
    assert controller.can_afford(0.00001)[0] is False
    assert controller.ledger == []  # the workers' charges are in their own ledgers


def test_unrelated_processes_share_a_named_file(tmp_path):
    path = tmp_path / "budget.json"
    counts = run_workers("spawn", lambda: ProcessSharedBudgetController(5, url=f"file:{path}"))
    assert sum(counts) == 50
    again = ProcessSharedBudgetController(5, url=str(path))
    assert again.spent_net == 5.0 and again.path == str(path)


def test_the_interface_of_budget_controller():
    b = ProcessSharedBudgetController(10.0)
    assert (b.budget, b.spent, b.remaining, b.utilization()) == (10.0, 0.0, 10.0, 0.0)
    b.charge("a", 3.5)
    assert b.can_afford(6.5) == (True, "")
    ok, why = b.can_afford(6.50001)
    assert not ok and "6.50001" in why and "remaining 6.5" in why
    with pytest.raises(RuntimeError, match="cannot charge 7"):
        b.charge("b", 7)
    b.refund("a", 1.25)
    assert (b.spent_gross, b.spent_refunded, b.spent_net) == (3.5, 1.25, 2.25)
    assert b.utilization() == 0.225
    assert [(a, c) for a, c, _ in b.ledger] == [("a", 3.5), ("REFUND:a", -1.25)]
    with pytest.raises(InvalidArgument, match="more than the net spend"):
        b.refund("a", 2.5)
    with pytest.raises(ValueError, match="Cost must be >= 0"):
        b.charge("a", -1)
    with pytest.raises(ValueError):
        ProcessSharedBudgetController(-1)
    assert "Remaining: 7.75" in b.summary()
    copy = pickle.loads(pickle.dumps(b))  # a spawned process's view: the same file
    copy.charge("c", 0.75)
    assert b.spent_net == 3.0
    assert [a for a, _, _ in copy.ledger] == ["c"] and len(b.ledger) == 2


def test_a_cost_finer_than_the_scale_is_exact():
    b = ProcessSharedBudgetController(1)
    b.charge("a", Decimal("0.0000001"))  # 7 digits: the file's units are refined
    assert b.exact()["spent_net"] == Decimal("0.0000001")
    assert b.exact()["remaining"] == Decimal("0.9999999")


def test_the_temporary_file_goes_with_its_creator():
    import gc
    import os

    b = ProcessSharedBudgetController(1)
    path = b.path
    assert os.path.exists(path)
    del b
    gc.collect()
    assert not os.path.exists(path)


def test_bad_files_and_urls_are_named(tmp_path):
    path = tmp_path / "b.json"
    ProcessSharedBudgetController(5, url=str(path))
    with pytest.raises(ValueError, match=r"b\.json holds a budget of 5, not 6"):
        ProcessSharedBudgetController(6, url=str(path))
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    with pytest.raises(InvalidArgument, match=r"junk\.json: not a shared budget file"):
        ProcessSharedBudgetController(5, url=f"file:{junk}")
    assert junk.read_text() == "{not json"  # left as it was
    with pytest.raises(ValueError, match="expected `file:PATH`"):
        ProcessSharedBudgetController(5, url="http://example")
    with pytest.raises(InvalidArgument, match="cannot open"):
        ProcessSharedBudgetController(5, url=str(tmp_path / "no" / "such" / "dir.json"))


@pytest.mark.parametrize("content", [
    b"\xff\xfe\x00garbage",
    b"[]",
    b'{"clampai_budget": 2, "scale": 5, "total": 500000, "gross": 0, "refunded": 0}',
    b'{"clampai_budget": 1, "scale": 5, "total": 500000, "gross": -1, "refunded": 0}',
    b'{"clampai_budget": 1, "scale": 5, "total": 500000, "gross": 1, "refunded": 2}',
    b'{"clampai_budget": 1, "scale": 5, "total": "500000", "gross": 0, "refunded": 0}',
    b'{"clampai_budget": 1, "scale": 5, "total": 500000.0, "gross": 0, "refunded": 0}',
    b'{"clampai_budget": 1, "scale": true, "total": 500000, "gross": 0, "refunded": 0}',
    b'{"clampai_budget": 1, "scale": 5, "total": 500000, "gross": 0}',
    b'{"clampai_budget": 1, "scale": 5, "total": 500000, "gross": 0, "refunded": 0',
])
def test_a_damaged_budget_file_is_refused_and_left_alone(tmp_path, content):
    path = tmp_path / "budget.json"
    path.write_bytes(content)
    with pytest.raises(InvalidArgument, match=r"budget\.json: not a shared budget file"):
        ProcessSharedBudgetController(5, url=str(path))
    assert path.read_bytes() == content


def test_a_file_damaged_after_opening_stops_every_operation(tmp_path):
    path = tmp_path / "budget.json"
    b = ProcessSharedBudgetController(5, url=str(path))
    b.charge("a", 1)
    path.write_text('{"clampai_budget": 1}')
    with pytest.raises(InvalidArgument, match="not a shared budget file"):
        b.charge("b", 1)
    with pytest.raises(InvalidArgument, match="not a shared budget file"):
        b.spent_net  # noqa: B018 - reading is refused too
