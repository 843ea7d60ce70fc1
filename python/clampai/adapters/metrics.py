"""Metrics backends for the kernels' `metrics=` (the `MetricsBackend` protocol: `increment`,
`observe`, `gauge`), as in the Python ClampAI's `clampai.adapters.metrics`.

    from clampai.adapters.metrics import PrometheusMetrics
    kernel = SafetyKernel(budget=100.0, invariants=[...], metrics=PrometheusMetrics())

`PrometheusMetrics` uses Debian's python3-prometheus-client. The reference-form kernels emit the
Python ClampAI's metric names: `clampai_actions_total{status}`,
`clampai_kernel_latency_seconds{operation}`, `clampai_budget_utilization_ratio`,
`clampai_budget_remaining`, `clampai_step_count`,
`clampai_invariant_violations_total{invariant, enforcement}`, `clampai_rollbacks_total`.
Nothing a backend does (a broken registry, a label mismatch) ever reaches a decision: every
failure is swallowed. The OpenTelemetry backends are not here (Debian ships no
opentelemetry-api; docs/PYTHON.md)."""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = ["PrometheusMetrics"]


class PrometheusMetrics:
    """A MetricsBackend on prometheus_client: counters, histograms (latency buckets from 0.1 ms
    to 10 s) and gauges, each created on its first use with the label names of that use.

    `registry`: a `prometheus_client.CollectorRegistry` (default: the global `REGISTRY`).
    A metric of the same name already in the registry (another backend's) is shared rather
    than lost. `namespace` is kept for the reference's `repr`; the names come from the kernel,
    already prefixed `clampai_`."""

    _LATENCY_BUCKETS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1,
                        0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

    def __init__(self, registry: Any = None, namespace: str = "clampai") -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise ImportError("prometheus_client is required for PrometheusMetrics: install "
                              "Debian's python3-prometheus-client") from None
        self._prom = prom
        self._registry = registry if registry is not None else prom.REGISTRY
        self._ns = namespace
        self._counters: Dict[str, Any] = {}
        self._histograms: Dict[str, Any] = {}
        self._gauges: Dict[str, Any] = {}

    def increment(self, name: str, labels: Optional[Dict[str, str]] = None) -> None:
        try:
            metric = self._metric(self._counters, self._prom.Counter, name, labels, "counter")
            (metric.labels(**labels) if labels else metric).inc()
        except Exception:  # noqa: BLE001 - metrics never affect the kernel
            pass

    def observe(self, name: str, value: float,
                labels: Optional[Dict[str, str]] = None) -> None:
        try:
            metric = self._metric(self._histograms, self._prom.Histogram, name, labels,
                                  "histogram", buckets=self._LATENCY_BUCKETS)
            (metric.labels(**labels) if labels else metric).observe(float(value))
        except Exception:  # noqa: BLE001
            pass

    def gauge(self, name: str, value: float, labels: Optional[Dict[str, str]] = None) -> None:
        try:
            metric = self._metric(self._gauges, self._prom.Gauge, name, labels, "gauge")
            (metric.labels(**labels) if labels else metric).set(float(value))
        except Exception:  # noqa: BLE001
            pass

    def _metric(self, cache: Dict[str, Any], kind: Any, name: str,
                labels: Optional[Dict[str, str]], what: str, **extra: Any) -> Any:
        metric = cache.get(name)
        if metric is None:
            try:
                metric = kind(name, f"ClampAI {what}: {name}", labelnames=list(labels or {}),
                              registry=self._registry, **extra)
            except ValueError:
                # Registered already (another backend on this registry): use that one.
                known = getattr(self._registry, "_names_to_collectors", {})
                metric = known.get(name)
                if metric is None or not isinstance(metric, kind):
                    raise
            cache[name] = metric
        return metric

    def __repr__(self) -> str:
        return f"PrometheusMetrics(namespace={self._ns!r})"
