"""The Python ClampAI's hardening layer and task-less reference monitor in its documented style
(issue 38): attestations and the attestation gate, its attestors' forms, readiness probes and
temporal dependencies, environment reconciliation, dependency discovery, resource tracking,
security labels and `ReferenceMonitor().enforce`, as its docs/API.md, README and docstrings
describe them (the import line changed), and where this package answers differently
(docs/PYTHON.md)."""

import dataclasses
import hashlib
import os

import pytest

from clampai import (ActionSpec, Attestation, AttestationGate, AttestationResult, CaptureBasin,
                     CausalGraph, ContractSpecification, DataLabel, DependencyDiscovery, Effect,
                     EnvironmentDriftError, EnvironmentProbe, EnvironmentReconciler, Expr,
                     FailurePattern, LabelledData, MultiDimensionalAttestor, Permission,
                     PredicateAttestor, QualityDimension, QualityScore, ReadinessProbe,
                     ReconciliationResult, ReferenceMonitor, ResourceDescriptor, ResourceState,
                     ResourceTracker, SecurityLevel, State, SubprocessAttestor,
                     TemporalCausalGraph, TemporalDependency)

S = State({"files": 3})


# --- Attestation, AttestationResult ---------------------------------------------------------

def test_attestation_in_the_reference_form():
    a = Attestation("tests", AttestationResult.VERIFIED, "12 passed", 100.0, "abc")
    assert (a.attestor_name, a.result, a.evidence, a.timestamp, a.fingerprint) == \
        ("tests", AttestationResult.VERIFIED, "12 passed", 100.0, "abc")
    assert a.is_positive() and a.passed and a.error == ""
    assert not Attestation("t", AttestationResult.FAILED, "1 failed", 1.0, "x").is_positive()
    timeout = Attestation("t", AttestationResult.TIMEOUT, "Timed out after 1s", 1.0, "timeout")
    assert not timeout.is_positive() and timeout.error == "Timed out after 1s"
    assert a == Attestation("tests", AttestationResult.VERIFIED, "12 passed", 100.0, "abc")
    assert len({a, Attestation("tests", AttestationResult.VERIFIED, "12 passed", 100.0,
                               "abc")}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.evidence = "forged"
    with pytest.raises(TypeError, match="AttestationResult"):
        Attestation("t", "VERIFIED", "", 0.0, "")
    assert dataclasses.asdict(a)["evidence"] == "12 passed"
    assert dataclasses.replace(a, evidence="13 passed").fingerprint == "abc"
    assert repr(a).startswith("Attestation(attestor_name='tests', result=<AttestationResult.")
    assert [r.name for r in AttestationResult] == ["VERIFIED", "FAILED", "ERROR", "TIMEOUT",
                                                   "SKIPPED"]


# --- The attestors' reference forms ---------------------------------------------------------

def test_predicate_attestor_verifies_with_a_check_of_no_arguments():
    att = PredicateAttestor("tests_pass", lambda: (True, "42 passed"))
    assert att.name == "tests_pass"
    a = att.verify(S, "the build is green")
    assert a.result is AttestationResult.VERIFIED and a.evidence == "42 passed"
    assert a.fingerprint == hashlib.sha256(b"42 passed").hexdigest()[:32]
    assert PredicateAttestor("no", lambda: (False, "3 failed")).verify(
        S, "g").result is AttestationResult.FAILED

    def broken():
        raise ValueError("database unreachable")

    err = PredicateAttestor("db", broken).verify(S, "g", timeout_s=5.0)
    assert err.result is AttestationResult.ERROR and err.fingerprint == "error"
    assert "database unreachable" in err.evidence and not err.is_positive()


def test_subprocess_attestor_in_the_reference_form(tmp_path):
    att = SubprocessAttestor("tmp_exists", ["test", "-d", str(tmp_path)])
    assert att.name == "tmp_exists" and att.command == ("test", "-d", str(tmp_path))
    assert att.verify(S, "g").result is AttestationResult.VERIFIED
    assert SubprocessAttestor("gone", ["test", "-d", str(tmp_path / "no")]).verify(
        S, "g").result is AttestationResult.FAILED
    with pytest.raises(ValueError, match="'rm' not in allowlist"):
        SubprocessAttestor("wipe", ["rm", "-rf", "/"])
    with pytest.raises(ValueError, match="Cannot be empty|cannot be empty"):
        SubprocessAttestor("empty", [])
    with pytest.raises(ValueError, match="Working dir does not exist"):
        SubprocessAttestor("w", ["ls"], working_dir=str(tmp_path / "nowhere"))


def test_subprocess_attestor_pattern_directory_timeout_and_missing_program(tmp_path):
    (tmp_path / "marker.txt").write_text("x")
    listing = SubprocessAttestor("listed", ["ls"], success_pattern="marker.txt",
                                 working_dir=str(tmp_path))
    assert listing.verify(S, "g").result is AttestationResult.VERIFIED
    absent = SubprocessAttestor("listed", ["ls"], success_pattern="other.txt",
                                working_dir=str(tmp_path))
    assert absent.verify(S, "g").result is AttestationResult.FAILED
    # Braces are literal: no state substitution in the Python ClampAI's form.
    echo = SubprocessAttestor("e", ["echo", "{files}"], success_pattern="{files}",
                              command_allowlist=frozenset({"echo"}))
    assert echo.verify(S, "g").is_positive()
    slow = SubprocessAttestor("slow", ["sleep", "5"], command_allowlist=frozenset({"sleep"}))
    timed_out = slow.verify(S, "g", timeout_s=0.2)
    assert timed_out.result is AttestationResult.TIMEOUT
    assert (timed_out.evidence, timed_out.fingerprint) == ("Timed out after 0.2s", "timeout")
    missing = SubprocessAttestor("m", ["no-such-program-x"],
                                 command_allowlist=frozenset({"no-such-program-x"}))
    assert missing.verify(S, "g").result is AttestationResult.ERROR


def test_this_projects_subprocess_form_is_kept():
    assert SubprocessAttestor(["/usr/bin/true"], {"/usr/bin/true"}).verify(S, "g").is_positive()


def test_multi_dimensional_attestor_in_the_reference_form():
    att = MultiDimensionalAttestor("quality", threshold=0.7)
    att.add_check(QualityDimension.EXISTENCE, 1.0, lambda: (1.0, "file exists"))
    att.add_check(QualityDimension.CORRECTNESS, 2.0, lambda: (0.6, "most tests pass"))
    a = att.verify(S, "the report is good")
    assert a.result is AttestationResult.VERIFIED
    assert a.evidence == "Overall=0.733 | existence=1.00 | correctness=0.60"
    assert [s.score for s in att.scores()] == [1.0, 0.6]
    att.add_check(QualityDimension.SAFETY, 0.1, lambda: (0.0, "unsafe"))
    assert att.verify(S, "g").result is AttestationResult.FAILED  # a zero dimension fails
    low = MultiDimensionalAttestor("low", 0.9)
    low.add_check(QualityDimension.QUALITY, 1.0, lambda: (0.8, "ok"))
    assert not low.verify(S, "g").is_positive()

    def raises():
        raise RuntimeError("linter crashed")

    crashed = MultiDimensionalAttestor("c", threshold=0.0)
    crashed.add_check(QualityDimension.REGRESSION, 1.0, raises)
    assert crashed.scores() == [QualityScore(QualityDimension.REGRESSION, 0.0,
                                             "Error: linter crashed")]
    assert not crashed.verify(S, "g").is_positive()
    with pytest.raises(TypeError, match="add_check"):
        MultiDimensionalAttestor([lambda s: 1.0]).add_check(QualityDimension.QUALITY, 1.0,
                                                            lambda: (1.0, ""))


def test_multi_dimensional_mean_is_exact():
    # (0.1 + 0.7) / 2 is 0.4: the Python ClampAI's float mean is 0.39999999999999997 and fails.
    att = MultiDimensionalAttestor("exact", threshold=0.4)
    att.add_check(QualityDimension.QUALITY, 1.0, lambda: (0.1, ""))
    att.add_check(QualityDimension.SAFETY, 1.0, lambda: (0.7, ""))
    a = att.verify(S, "g")
    assert a.is_positive() and a.evidence.startswith("Overall=0.400 |")
    above = MultiDimensionalAttestor("exact", threshold=0.41)
    above.add_check(QualityDimension.QUALITY, 1.0, lambda: (0.1, ""))
    above.add_check(QualityDimension.SAFETY, 1.0, lambda: (0.7, ""))
    assert not above.verify(S, "g").is_positive()


# --- AttestationGate ------------------------------------------------------------------------

def test_attestation_gate_needs_the_predicate_and_a_quorum():
    gate = AttestationGate(quorum=2)
    gate.add_attestor(PredicateAttestor("a", lambda: (True, "ok")))
    gate.add_attestor(PredicateAttestor("b", lambda: (False, "no")))
    gate.add_attestor(PredicateAttestor("c", lambda: (True, "ok")))
    ok, attestations = gate.verify_goal(S, "three files", lambda s: s["files"] == 3)
    assert ok and [a.attestor_name for a in attestations] == ["a", "b", "c"]
    assert gate.verify_goal(S, "four files", lambda s: s["files"] == 4) == (False, [])
    assert len(gate.attestation_history) == 1  # a predicate that fails runs no attestor
    strict = AttestationGate(quorum=3)
    for a in gate._attestors:
        strict.add_attestor(a)
    assert strict.verify_goal(S, "g", lambda s: True)[0] is False
    weak, (skipped,) = AttestationGate().verify_goal(S, "g", lambda s: True)
    assert weak and skipped.result is AttestationResult.SKIPPED
    assert skipped.attestor_name == "predicate_only"
    with pytest.raises(TypeError, match="verify"):
        gate.add_attestor(object())


# --- ReadinessProbe, TemporalDependency, TemporalCausalGraph ---------------------------------

def test_readiness_probe_counts_its_backoff_without_sleeping():
    answers = iter([(False, "starting"), (False, "starting"), (True, "accepting")])
    probe = ReadinessProbe("db", lambda: next(answers), interval_s=1.0, backoff_factor=2.0)
    assert probe.wait_until_ready() == (True, "accepting", 3.0)  # waited 1 + 2
    never = ReadinessProbe("never", lambda: (False, "no"), initial_delay_s=0.5, max_retries=3)
    assert never.wait_until_ready() == (False, "Not ready after 3 attempts", 0.5 + 1 + 1.5 + 2.25)

    def raises():
        raise ConnectionError("refused")

    assert ReadinessProbe("r", raises, max_retries=1).wait_until_ready()[0] is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        probe.max_retries = 1


def test_temporal_causal_graph():
    graph = CausalGraph()
    graph.add_action("provision")
    graph.add_action("deploy", [("provision", "needs the database")])
    warm = {"ready": False}
    tcg = TemporalCausalGraph(graph)
    tcg.add_temporal_dep("deploy", TemporalDependency(
        "provision", "database warm", min_delay_s=5.0,
        readiness_probe=ReadinessProbe("db", lambda: (warm["ready"], "ping"), max_retries=1)))
    assert tcg.can_execute("deploy") == (False, ["provision"])
    tcg.set_time(10.0)
    tcg.mark_completed("provision")
    assert tcg.can_execute("deploy") == (False, ["provision: 0.0s elapsed, need 5.0s"])
    tcg.set_time(15.0)
    ok, unmet = tcg.can_execute("deploy")
    assert not ok and unmet[0].startswith("provision: exists but not ready")
    warm["ready"] = True
    assert tcg.can_execute("deploy") == (True, [])
    assert tcg.ready_actions(["deploy", "provision"]) == ["deploy", "provision"]
    # The Python ClampAI's docs/API.md form: no base graph, its method names.
    bare = TemporalCausalGraph()
    bare.add_temporal_dependency("b", TemporalDependency("a", "after a"))
    assert bare.wait_for_ready("b") == (False, ["a not completed"])


def test_delays_are_decided_exactly():
    dep = TemporalDependency("a", "after a", min_delay_s=0.2)
    dep.mark_completed(0.1)
    # 0.3 - 0.1 is 0.19999999999999998 in floats: the Python ClampAI says "need 0.2s".
    assert dep.is_satisfied(0.3) == (True, "")
    assert dep.is_satisfied(0.29)[0] is False


def test_a_completion_at_time_zero_is_at_time_zero():
    tcg = TemporalCausalGraph(CausalGraph())
    tcg.add_temporal_dep("b", TemporalDependency("a", "after a", min_delay_s=5.0))
    tcg.set_time(5.0)
    tcg.mark_completed("a", at_time=0.0)  # the Python ClampAI records 5.0 (0.0 is falsy)
    assert tcg.can_execute("b") == (True, [])


# --- EnvironmentReconciler ------------------------------------------------------------------

def test_environment_reconciler_as_documented():
    world = {"files": 3, "rate": 0.1}
    rec = EnvironmentReconciler()
    rec.add_probe(EnvironmentProbe("files", lambda: world["files"], "ls | wc -l"))
    rec.add_probe(EnvironmentProbe("rate", lambda: world["rate"]))
    result = rec.reconcile(State({"files": 3, "rate": 0.1, "owner": "me", "_private": 1}),
                           "after write")
    assert isinstance(result, ReconciliationResult) and result.is_consistent and result
    assert result.matches == [("files", 3, 3), ("rate", 0.1, 0.1)]
    assert (result.mismatches, result.unprobed, result.drift_severity) == ([], ["owner"], 0.0)
    world["files"] = 4
    with pytest.raises(EnvironmentDriftError) as drift:
        rec.reconcile(State({"files": 3, "rate": 0.1}), "after delete")
    assert str(drift.value) == "DRIFT (after delete): files: exp=3, got=4"
    assert drift.value.result.drift_severity == 0.5
    assert len(rec.reconciliation_history) == 2


def test_environment_reconciler_threshold_probe_errors_and_tolerance():
    def unreachable():
        raise OSError("host down")

    rec = EnvironmentReconciler(drift_threshold=0.5)
    rec.add_probe(EnvironmentProbe("a", lambda: 1))
    rec.add_probe(EnvironmentProbe("b", unreachable))
    result = rec.reconcile(State({"a": 1, "b": 1}))  # half drifted: not beyond 0.5
    assert result.mismatches == [("b", 1, "PROBE_ERROR:host down")]
    assert not result and result.drift_severity == 0.5
    quiet = EnvironmentReconciler(halt_on_drift=False)
    quiet.register_probe("a", lambda: 2)
    assert not quiet.reconcile(State({"a": 1})).is_consistent
    tolerant = EnvironmentReconciler(tolerance=0.5)
    tolerant.register_probe("load", lambda: 3.5)
    assert tolerant.reconcile(State({"load": 3})).is_consistent  # |3.5 - 3| <= 0.5, exactly
    with pytest.raises(EnvironmentDriftError):
        tolerant.reconcile(State({"load": 2.99}))  # 0.51 off
    with pytest.raises(ValueError, match="tolerance"):
        EnvironmentReconciler(tolerance=-1)


def test_reconciliation_compares_numbers_exactly():
    from decimal import Decimal

    rec = EnvironmentReconciler()
    rec.register_probe("rate", lambda: 0.1)
    # The Python ClampAI compares Decimal("0.1") == 0.1: False, so it halts on drift.
    assert rec.reconcile(State({"rate": Decimal("0.1")})).is_consistent
    assert rec.reconcile(State({"rate": 0.1})).matches == [("rate", 0.1, 0.1)]


# --- DependencyDiscovery, FailurePattern ----------------------------------------------------

def test_dependency_discovery_finds_and_injects_a_dependency():
    disc = DependencyDiscovery(significance_threshold=0.05, min_observations=5)
    known = {"deploy", "migrate", "lint"}
    for _ in range(10):
        disc.observe("deploy", False, {"lint"}, known)  # fails without migrate
        disc.observe("deploy", True, {"migrate"}, known)
    found = disc.discover()
    assert list(found) == ["deploy"] and [d for d, _, _ in found["deploy"]] == ["migrate"]
    (_, pvalue, effect), = found["deploy"]
    assert effect == 1.0 and 0 < pvalue < 0.001
    assert disc.summary().startswith("Discovered Dependencies:\n  deploy→migrate (p=0.0000")
    pattern = disc._patterns[("deploy", "migrate")]
    assert pattern == FailurePattern("deploy", "migrate", 20, 10, 0, 0, 10)
    graph = CausalGraph()
    graph.add_action("deploy", [("build", "needs the artifact")])
    assert disc.inject_into_graph(graph) == [("deploy", "migrate", pvalue)]
    graph.mark_completed("build")
    assert graph.can_execute("deploy") == (False, ["migrate"])
    assert disc.inject_into_graph(graph) == []  # already there


def test_dependency_discovery_needs_enough_evidence():
    disc = DependencyDiscovery(min_observations=5)
    for i in range(4):
        disc.observe("a", i % 2 == 0, set(), {"a", "b"})
    assert disc.discover() == {} and disc.summary() == "  (none yet)"
    table = FailurePattern("a", "b", 40, failures_with_missing=6, failures_without_missing=4,
                           successes_with_missing=14, successes_without_missing=16)
    assert DependencyDiscovery._chi2p(table) == 0.5  # chi2 = 0.48: not significant
    assert DependencyDiscovery._chi2p(FailurePattern("a", "b")) == 1.0


# --- ResourceTracker ------------------------------------------------------------------------

def test_resource_tracker_follows_the_lifecycle():
    tracker = ResourceTracker()
    db = ResourceDescriptor("postgres", "db-1",
                            permissions=frozenset({Permission.READ, Permission.WRITE}))
    tracker.register(db)
    assert tracker.transition("db-1", ResourceState.READY) == (False, "Invalid: absent→ready")
    assert tracker.transition("db-1", ResourceState.CREATING) == (True, "db-1: absent→creating")
    assert tracker.get("db-1").created_at > 0
    assert not tracker.all_ready()
    assert tracker.transition("db-1", ResourceState.READY)[0]
    assert tracker.all_ready() and tracker.all_ready(["db-1"]) and not tracker.all_ready(["x"])
    assert tracker.get("db-1").to_dict() == {"kind": "postgres", "identifier": "db-1",
                                             "state": "ready", "permissions": ["read", "write"]}
    assert tracker.transition("nope", ResourceState.READY) == (False, "nope not registered")
    assert tracker.summary() == "  [     ready] postgres:db-1"
    assert ResourceState.DEGRADED in ResourceTracker.VALID_TRANSITIONS[ResourceState.READY]
    assert tracker.get("missing") is None and db.state is ResourceState.ABSENT


# --- DataLabel, SecurityLevel, LabelledData -------------------------------------------------

def test_security_labels_form_a_lattice():
    public, pii = DataLabel(SecurityLevel.PUBLIC), DataLabel(SecurityLevel.PII)
    assert public <= pii and not pii <= public and pii >= public
    assert not DataLabel(SecurityLevel.PII, {"eu"}) <= DataLabel(SecurityLevel.SECRET)
    assert DataLabel(SecurityLevel.PII, {"eu"}) <= DataLabel(SecurityLevel.SECRET, {"eu", "hr"})
    joined = DataLabel.join(DataLabel(SecurityLevel.INTERNAL, {"a"}), DataLabel(SecurityLevel.PII,
                                                                                 {"b"}))
    assert joined == DataLabel(SecurityLevel.PII, {"a", "b"}) and repr(joined) == "Label(PII [a,b])"
    assert len({pii, DataLabel(SecurityLevel.PII)}) == 1
    assert [lv.value for lv in SecurityLevel] == [0, 1, 2, 3]
    data = LabelledData("alice@example.com", pii)
    assert (data.value, data.label) == ("alice@example.com", pii)
    with pytest.raises(AttributeError):
        data.value = "x"
    with pytest.raises(TypeError, match="SecurityLevel"):
        DataLabel("PII")


# --- The task-less ReferenceMonitor ---------------------------------------------------------

def write(var, value, name=None):
    return ActionSpec(id=f"w_{var}", name=name or f"Write {var}",
                      effects=(Effect(var, "set", value),), cost=1.0)


def test_the_readme_examples_run():
    monitor = ReferenceMonitor()
    monitor.set_ifc_label("user_email", DataLabel(SecurityLevel.PII))
    state = State({"user_email": "a@example.com", "log": ""})
    ok, reason, repaired = monitor.enforce(write("log", Expr("user_email")), state)
    assert (ok, repaired) == (False, None)
    assert reason == "IFC VIOLATION: user_email (Label(PII)) cannot flow to log (Label(PUBLIC))"
    monitor = ReferenceMonitor()
    monitor.add_cbf(h=lambda s: 1.0 - s.get("risk", 0.0), alpha=0.1)
    assert monitor.cbf_budget.alpha == 0.1


def test_information_flow_follows_the_data():
    monitor = ReferenceMonitor()
    monitor.set_ifc_label("user_email", DataLabel(SecurityLevel.PII))
    monitor.add_label("audit", DataLabel(SecurityLevel.PII))
    state = State({"user_email": "a@example.com", "count": 0, "audit": ""})
    bump = ActionSpec(id="bump", name="Bump", effects=(Effect("count", "increment", 1),), cost=1)
    # The Python ClampAI blocks this (a PII variable exists, `count` is PUBLIC): nothing flows.
    assert monitor.enforce(bump, state) == (True, "IFC: all flows permitted", None)
    assert monitor.enforce(write("audit", Expr("user_email")), state)[0]  # PII to PII
    guarded = ActionSpec(id="g", effects=(Effect("count", "increment", 1),), cost=1,
                         requires="user_email != ''")
    assert not monitor.enforce(guarded, state)[0]  # whether it runs reveals the email
    secret = LabelledData("s3cr3t", DataLabel(SecurityLevel.SECRET))
    ok, reason, _ = monitor.enforce(write("audit", secret), state)
    assert not ok and reason == ("IFC VIOLATION: payload (Label(SECRET)) cannot flow to audit "
                                 "(Label(PII))")
    public = LabelledData("hello", DataLabel(SecurityLevel.PUBLIC))
    with_barrier = ReferenceMonitor()
    with_barrier.add_cbf(lambda s: 1.0, alpha=0.5)
    assert with_barrier.enforce(write("audit", public), state)[0]  # the barrier sees "hello"
    off = ReferenceMonitor(ifc_enabled=False)
    off.set_ifc_label("user_email", DataLabel(SecurityLevel.PII))
    assert off.enforce(write("count", Expr("user_email")), state) == (True, "", None)


def test_the_control_barrier_repairs_or_rejects():
    monitor = ReferenceMonitor()
    monitor.add_cbf(h=lambda s: 1.0 - s.get("risk", 0.0), alpha=0.1)
    state = State({"risk": 0.5})
    small = ActionSpec(id="s", name="Small", effects=(Effect("risk", "increment", 0.01),), cost=1)
    ok, reason, repaired = monitor.enforce(small, state)
    assert ok and repaired is None and "CBF: h=0.500" in reason
    big = ActionSpec(id="b", name="Big", effects=(Effect("risk", "increment", 0.3),), cost=1)
    ok, reason, repaired = monitor.enforce(big, state)
    assert ok and reason.endswith("CBF: action repaired")
    assert repaired.name == "Big [repaired]"
    amount = repaired.effects[0].value
    assert 0.049 < amount <= 0.05  # h may fall by at most 0.1 * 0.5
    assert monitor.cbf_budget.evaluate(state, repaired.simulate(state))[0]
    flat = ActionSpec(id="f", name="Flat", effects=(Effect("risk", "set", 0.9),), cost=1)
    ok, reason, repaired = monitor.enforce(flat, state)
    assert (ok, repaired) == (False, None) and reason.startswith("CBF VIOLATION")


def test_capture_basins_and_contracts():
    monitor = ReferenceMonitor(cbf_enabled=False)
    monitor.add_capture_basin(CaptureBasin("overheat", lambda s: s["risk"] >= 10, max_steps=3))
    step = ActionSpec(id="up", name="Up", effects=(Effect("risk", "increment", 5),), cost=1)
    ok, reason, _ = monitor.enforce(step, State({"risk": 0}))
    assert not ok and reason == "CaptureBasin 'overheat': action 'Up' leads to bad region in 2 steps"
    assert ReferenceMonitor(cbf_enabled=False, hjb_enabled=False)
    spec = ContractSpecification(name="fetch", assume=lambda s: True, guarantee=lambda s: True)
    monitor.register_contract(spec)
    assert monitor.contracts == {"fetch": spec}


def test_the_monitor_forms_are_chosen_by_the_arguments(quickstart):
    monitor = ReferenceMonitor(False, True, False)  # positional, as the Python ClampAI's
    assert (monitor.ifc_enabled, monitor.cbf_enabled, monitor.hjb_enabled) == (False, True, False)
    assert monitor.ifc_labels == {} and monitor.capture_basins == []
    with pytest.raises(ValueError, match="cbf_binary_search_tol"):
        ReferenceMonitor(cbf_binary_search_tol=0)
    with pytest.raises(ValueError, match="cbf_max_iterations"):
        ReferenceMonitor(cbf_max_iterations=0)
    with pytest.raises(TypeError, match="enforce"):
        monitor.evaluate("process_batch")
    with pytest.raises(TypeError, match="DataLabel"):
        monitor.set_ifc_label("x", SecurityLevel.PII)
    task_monitor = ReferenceMonitor(quickstart)
    assert task_monitor.execute("process_batch").approved
    with pytest.raises(TypeError, match="task-less"):
        task_monitor.enforce(write("x", 1), State({"x": 0}))


def test_the_reference_monitor_module():
    from clampai import reference_monitor

    for name in reference_monitor.__all__:
        assert getattr(reference_monitor, name) is getattr(__import__("clampai"), name)
    assert os.path.basename(reference_monitor.__file__) == "reference_monitor.py"


# --- A task's monitor with the Python ClampAI's probes (the C++ monitor runs them) ---------

def provisioning_task():
    from clampai import TaskDefinition

    return TaskDefinition(
        goal="deploy", initial_state=State({"files": 0, "deployed": False, "note": ""}),
        available_actions=[
            ActionSpec("write", effects=(Effect("files", "increment", 1),), cost=1),
            ActionSpec("provision", effects=(Effect("note", "set", "db"),), cost=1),
            ActionSpec("deploy", effects=(Effect("deployed", "set", True),), cost=1),
            ActionSpec("halt", cost=0),
        ],
        dependencies={"deploy": ["provision"]}, emergency_actions=["halt"], budget=10,
        goal_predicate="deployed")


def test_a_task_monitor_reconciles_with_the_python_probes():
    world = {"files": 1}
    rec = EnvironmentReconciler(tolerance=0)
    rec.add_probe(EnvironmentProbe("files", lambda: world["files"], "ls | wc -l"))
    mon = ReferenceMonitor(provisioning_task(), reconciler=rec)
    first = mon.execute("write")
    assert first.approved and first.drift == [] and not mon.halted
    world["files"] = 5  # something else wrote four files
    second = mon.execute("write")
    assert second.approved  # committed, then the world disagreed
    (drift,) = second.drift
    assert (drift["variable"], drift["model"], drift["world"]) == ("files", 2, 5)
    assert mon.halted and mon.drift == second.drift
    assert mon.execute("write").decision.reason_codes == ["environment_drift"]
    assert mon.execute("halt").approved  # T8: the emergency action still runs


def test_a_probe_that_raises_is_drift_and_reconcile_runs_on_demand():
    def unreachable():
        raise OSError("host down")

    rec = EnvironmentReconciler()
    rec.register_probe("files", unreachable)
    mon = ReferenceMonitor(provisioning_task(), reconciler=rec)
    (drift,) = mon.reconcile()
    assert drift["world"] is None and "host down" in drift["detail"] and mon.halted
    with pytest.raises(ValueError, match="halts on any drift"):
        ReferenceMonitor(provisioning_task(), reconciler=EnvironmentReconciler(0.5))
    bad = EnvironmentReconciler()
    bad.register_probe("nope", lambda: 1)
    with pytest.raises(Exception, match="unknown variable `nope`"):
        ReferenceMonitor(provisioning_task(), reconciler=bad)


def test_a_task_monitor_waits_for_readiness():
    answers = iter([(False, "starting"), (True, "accepting connections")])
    probe = ReadinessProbe("db", lambda: next(answers), interval_s=0.001, max_retries=5)
    mon = ReferenceMonitor(provisioning_task(), readiness={"provision": probe})
    assert mon.execute("provision").approved
    assert mon.execute("deploy").approved  # ready at the second check
    never = ReadinessProbe("db", lambda: (False, "no route"), interval_s=0.001, max_retries=2)
    mon = ReferenceMonitor(provisioning_task(), readiness={"provision": never})
    mon.execute("provision")
    refused = mon.execute("deploy")
    assert refused.decision.reason_codes == ["dependency_not_ready"]
    assert "no route" in refused.decision.reasons[0].message and not mon.state["deployed"]
    with pytest.raises(TypeError, match="ReadinessProbe"):
        ReferenceMonitor(provisioning_task(), readiness={"provision": lambda: True})
