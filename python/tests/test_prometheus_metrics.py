"""clampai.adapters.metrics.PrometheusMetrics (the Python ClampAI's, issue 38) on Debian's
python3-prometheus-client: a reference-form kernel's decisions appear under the Python
ClampAI's metric names, and a broken backend never reaches a decision."""

import pytest

prometheus_client = pytest.importorskip("prometheus_client")

from clampai import Invariant, SafetyKernel, SafetyViolation, make_action, make_state  # noqa: E402
from clampai.adapters.metrics import PrometheusMetrics  # noqa: E402


def sample(registry, name, **labels):
    return registry.get_sample_value(name, labels or None)


def test_a_kernel_reports_under_the_reference_names():
    registry = prometheus_client.CollectorRegistry()
    kernel = SafetyKernel(budget=10.0, invariants=[Invariant("cap", "n <= 2")],
                          metrics=PrometheusMetrics(registry=registry))
    state = make_state(n=0)
    state, _ = kernel.execute(state, make_action("one", cost=2.5, n=1))
    state, _ = kernel.execute(state, make_action("two", cost=2.5, n=2))
    with pytest.raises(SafetyViolation):
        kernel.execute(state, make_action("three", cost=2.5, n=3))
    kernel.evaluate(state, make_action("noop", cost=1.0))

    assert sample(registry, "clampai_actions_total", status="approved") == 3
    assert sample(registry, "clampai_actions_total", status="rejected") == 1
    assert sample(registry, "clampai_invariant_violations_total", invariant="cap",
                  enforcement="blocking") == 1
    assert sample(registry, "clampai_kernel_latency_seconds_count", operation="execute") == 3
    assert sample(registry, "clampai_kernel_latency_seconds_count", operation="evaluate") == 1
    assert sample(registry, "clampai_budget_remaining") == 5.0
    assert sample(registry, "clampai_budget_utilization_ratio") == 0.5
    assert sample(registry, "clampai_step_count") == 2.0
    text = prometheus_client.generate_latest(registry).decode()
    assert 'clampai_actions_total{status="approved"} 3.0' in text


def test_the_methods_and_two_backends_on_one_registry():
    registry = prometheus_client.CollectorRegistry()
    a, b = PrometheusMetrics(registry=registry), PrometheusMetrics(registry=registry)
    a.increment("clampai_rollbacks_total")
    b.increment("clampai_rollbacks_total")  # the same counter, not a lost one
    a.observe("clampai_kernel_latency_seconds", 0.00015, labels={"operation": "evaluate"})
    a.gauge("clampai_step_count", 7)
    assert sample(registry, "clampai_rollbacks_total") == 2
    assert sample(registry, "clampai_kernel_latency_seconds_bucket", operation="evaluate",
                  le="0.0002") == 1
    assert sample(registry, "clampai_step_count") == 7
    assert repr(a) == "PrometheusMetrics(namespace='clampai')"


def test_a_failing_backend_changes_nothing():
    registry = prometheus_client.CollectorRegistry()
    metrics = PrometheusMetrics(registry=registry)
    metrics.increment("clampai_actions_total", labels={"status": "approved"})
    # Other label names than the counter's, a name Prometheus refuses: swallowed.
    metrics.increment("clampai_actions_total", labels={"other": "x"})
    metrics.gauge("not a name!", 1.0)
    metrics.observe("clampai_x", "not a number")
    assert sample(registry, "clampai_actions_total", status="approved") == 1
    kernel = SafetyKernel(budget=1.0, invariants=[], metrics=metrics)
    new_state, entry = kernel.execute(make_state(n=0), make_action("a", cost=1.0, n=1))
    assert new_state["n"] == 1 and entry.approved
