"""Budget pools from Python (docs/POOLS.md, issue 41): SafetyKernel(task, pool=...) with a
PoolTree built in Python or loaded from a pools file; the pools' figures read from Python."""

import gc
import json
from decimal import Decimal

import pytest

from clampai import (ActionSpec, Effect, InvalidArgument, PoolStatus, PoolTree, SafetyKernel,
                     SpecError, TaskDefinition, build_model)


def spend_task(total=10, cost=3):
    return TaskDefinition(goal="spend", initial_state={"n": 0},
                          available_actions=[ActionSpec(id="spend",
                                                        effects=(Effect("n", "increment", 1),),
                                                        cost=cost, reversible=True)],
                          budget=total, min_action_cost=1, budget_scale=0)


def spec(total=10, cost=3, pool=None):
    budget = {"total": total, "min_action_cost": 1, "scale": 0}
    if pool is not None:
        budget["pool"] = pool
    return {"name": "spend", "variables": {"n": {"type": "int", "initial": 0}},
            "actions": [{"id": "spend", "cost": cost, "reversible": True,
                         "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
            "budget": budget}


def tree3():
    return PoolTree({"org": {"total": 12}, "team-a": {"total": 7, "parent": "org"},
                     "team-b": {"total": Decimal("20"), "parent": "org"}})


def reasons(outcome):
    return [(r.code, r.subject) for r in outcome.decision.reasons]


def test_a_charge_must_fit_every_level_and_the_refusal_names_it():
    tree = tree3()
    a = SafetyKernel(spend_task(), pool=tree["team-a"])
    b = SafetyKernel(spend_task(), pool=tree["team-b"])
    assert a.pool.name == "team-a" and a.model.budget_pool == "team-a"
    assert a.execute("spend").approved and a.execute("spend").approved  # team-a: 6 of 7
    out = a.execute("spend")  # fits the task (6 + 3 <= 10), not team-a (6 + 3 > 7)
    assert not out.approved and reasons(out) == [("budget_exceeded", "pool:team-a")]
    assert a.budget.spent_net == Decimal("6")  # nothing changed (T5)
    assert b.execute("spend").approved
    last = b.execute("spend")  # org: 12 of 12
    assert last.approved
    out = b.execute("spend")  # team-b has 14 left; org has none
    assert reasons(out) == [("budget_exceeded", "pool:org")]

    status = tree.status()
    assert list(status) == ["org", "team-a", "team-b"]  # parents first
    assert isinstance(status["org"], PoolStatus)
    org = status["org"]
    assert {k: org[k] for k in org.keys()} == {
        "name": "org", "parent": None, "budget": Decimal("12"), "spent_gross": Decimal("12"),
        "spent_net": Decimal("12"), "remaining": Decimal("0"), "tasks": 0}
    assert type(org.spent_net) is Decimal and org.to_dict()["spent_net"] == "12"
    assert status["team-a"]["parent"] == "org" and status["team-a"]["tasks"] == 1
    assert a.pool.status["remaining"] == Decimal("1")

    # A rollback refunds every level: net falls, gross stays (T4).
    assert b.rollback(last.receipt).approved
    after = tree.status()
    assert (after["org"]["spent_net"], after["org"]["spent_gross"]) == (9, 12)
    assert after["team-b"]["spent_net"] == 3
    assert not a.execute("spend").approved  # team-a: still 1 left
    assert b.execute("spend").approved  # org has 3 again


def test_a_spec_dict_a_spec_file_and_a_pools_file(tmp_path):
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps({"pools": {"org": {"total": 5},
                                           "team-a": {"total": 40, "parent": "org"}}}))
    tree = PoolTree.load(pools)
    assert list(tree) == ["org", "team-a"] and "org" in tree and len(tree) == 2
    k1 = SafetyKernel(spec(), pool=tree["team-a"])  # a dict naming no pool: given one
    path = tmp_path / "task.json"
    path.write_text(json.dumps(spec(pool="team-a")))
    k2 = SafetyKernel(str(path), pool=tree)  # a file naming its pool: the tree suffices
    assert k2.pool.name == "team-a"
    assert k1.execute("spend").approved
    out = k2.execute("spend")  # org: 3 + 3 > 5
    assert reasons(out) == [("budget_exceeded", "pool:org")]
    assert tree.status()["team-a"]["tasks"] == 2
    # A model built without a pool keeps its digest; in a pool it has another (it decides
    # otherwise).
    assert k1.model.digest != build_model(spec()).digest
    assert k1.model.digest == build_model(spec(pool="team-a")).digest


def test_set_total_raises_and_lowers_never_below_the_spend():
    tree = PoolTree({"org": {"total": 10}})
    k = SafetyKernel(spend_task(total=100), pool=tree["org"])
    assert k.execute("spend").approved and k.execute("spend").approved  # 6 of 10
    with pytest.raises(InvalidArgument, match=r"pool `org`'s total to 5: below its net spend 6"):
        tree.set_total("org", 5)
    tree.set_total("org", 6)
    assert not k.execute("spend").approved
    tree.set_total("org", Decimal("9"))
    assert k.execute("spend").approved
    assert tree.status()["org"]["budget"] == 9
    with pytest.raises(InvalidArgument, match="must not be negative"):
        tree.set_total("org", -1)
    with pytest.raises(InvalidArgument, match=r"not exact at the pool's scale of 0 digits"):
        tree.set_total("org", "9.5")
    with pytest.raises(InvalidArgument, match=r"unknown pool `orgg`"):
        tree.set_total("orgg", 1)
    with pytest.raises(InvalidArgument, match="not a decimal number"):
        tree.set_total("org", "ten")
    assert tree.status()["org"]["budget"] == 9  # the refusals changed nothing


def test_bad_pools_and_bad_pool_arguments_are_clear_errors(tmp_path):
    with pytest.raises(SpecError, match=r"pools\.team-a\.parent: unknown parent pool `orgg`"):
        PoolTree({"org": {"total": 1}, "team-a": {"total": 1, "parent": "orgg"}})
    with pytest.raises(SpecError, match=r"pools\.org\.total"):
        PoolTree({"org": {"total": -1}})
    with pytest.raises(TypeError, match="not a bool"):
        PoolTree({"org": {"total": True}})
    with pytest.raises(KeyError):
        PoolTree({"org": {"total": 1}})["nope"]
    tree = tree3()
    # A task that names a pool needs one: never run without its pool's checks.
    with pytest.raises(SpecError, match=r"budget\.pool: the budget is in pool `team-a`: give "
                                        r"pool="):
        SafetyKernel(spec(pool="team-a"))
    with pytest.raises(InvalidArgument, match=r"in pool `team-a`, not in pool= `team-b`"):
        SafetyKernel(spec(pool="team-a"), pool=tree["team-b"])
    with pytest.raises(InvalidArgument, match="names no pool"):
        SafetyKernel(spec(), pool=tree)
    with pytest.raises(InvalidArgument, match="not a TaskModel"):
        SafetyKernel(build_model(spec()), pool=tree["org"])
    with pytest.raises(TypeError, match="not str"):
        SafetyKernel(spec(), pool="org")
    with pytest.raises(SpecError, match=r"budget\.pool: .*unknown pool `nope`"):
        SafetyKernel(spec(pool="nope"), pool=tree)
    # A task whose amounts a pool cannot hold exactly is refused at load, changing nothing.
    coarse = PoolTree({"org": {"total": "1.5"}})
    with pytest.raises(SpecError, match=r"not exact at the task's budget scale of 0"):
        SafetyKernel(spec(), pool=coarse["org"])
    assert coarse.status()["org"]["tasks"] == 0
    assert SafetyKernel(spec()).pool is None


def test_an_emergency_action_registered_later_keeps_the_pool():
    # register_emergency_action rebuilds the model: the rebuilt one must sit in the pool too,
    # or the kernel would charge no pool from then on.
    tree = PoolTree({"org": {"total": 3}})
    task = TaskDefinition(goal="g", initial_state={"n": 0},
                          available_actions=[
                              ActionSpec(id="spend", effects=(Effect("n", "increment", 1),),
                                         cost=3),
                              ActionSpec(id="stop", effects=(Effect("n", "set", 0),), cost=0)],
                          budget=10, min_action_cost=1, budget_scale=0)
    k = SafetyKernel(task, pool=tree["org"])
    k.register_emergency_action("stop")
    assert k.model.budget_pool == "org" and "stop" in k.model.emergency_actions
    assert k.execute("spend").approved
    assert reasons(k.execute("spend")) == [("budget_exceeded", "pool:org")]
    assert tree.status()["org"]["spent_net"] == 3


def test_a_kernel_gone_leaves_its_pool_with_its_spend():
    tree = PoolTree({"org": {"total": 5}})
    k = SafetyKernel(spec(), pool=tree["org"])
    assert k.execute("spend").approved
    assert tree.status()["org"]["tasks"] == 1
    del k
    gc.collect()
    assert tree.status()["org"]["tasks"] == 0
    assert tree.status()["org"]["spent_net"] > 0
