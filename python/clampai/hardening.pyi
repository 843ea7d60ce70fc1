# Stubs of clampai.hardening (tests/test_stubs.py checks them against the module). The classes
# with two forms (the Python ClampAI's and this project's, chosen by the arguments given) take
# `*args, **kwargs`; their docstrings give both signatures.
import enum
from decimal import Decimal
from typing import (Any, Callable, ClassVar, Collection, Dict, FrozenSet, Iterable, List, Mapping,
                    Optional, Sequence, Set, Tuple, Union)

from ._clampai import Decision, Outcome, State
from ._reasoning import CausalGraph
from ._task import ActionSpec

class AttestationResult(enum.Enum):
    VERIFIED: int
    FAILED: int
    ERROR: int
    TIMEOUT: int
    SKIPPED: int

class Attestation:
    attestor_name: str
    result: AttestationResult
    evidence: str
    timestamp: float
    fingerprint: str
    error: str
    dimensions: Tuple[Attestation, ...]
    def __init__(self, attestor_name: Union[str, Mapping[str, Any]],
                 result: Optional[AttestationResult] = None, evidence: str = "",
                 timestamp: Optional[float] = None, fingerprint: Optional[str] = None,
                 error: str = "", dimensions: Tuple[Attestation, ...] = ()) -> None: ...
    @property
    def attestor(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    def is_positive(self) -> bool: ...
    def __bool__(self) -> bool: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Attestor:
    def __init__(self, impl: Any) -> None: ...
    @property
    def name(self) -> str: ...
    def attest(self, state: Optional[State] = None, action: str = "") -> Attestation: ...
    def verify(self, state: Any, goal_description: str = "",
               timeout_s: float = 30.0) -> Attestation: ...

class PredicateAttestor(Attestor):
    def __init__(self, name: str, check_fn: Callable[..., Any]) -> None: ...

class SubprocessAttestor(Attestor):
    MAX_OUTPUT_BYTES: ClassVar[int]
    SAFE_ENV_KEYS: ClassVar[FrozenSet[str]]
    SAFE_PATH: ClassVar[str]
    command: Tuple[str, ...]
    # (command, allowed_binaries, timeout_s=30.0, max_output_bytes=8192, *, name=None,
    #  environment=None), or the Python ClampAI's (name, command, success_pattern="",
    #  working_dir=None, command_allowlist=None).
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def verify(self, state: Any, goal_description: str = "",
               timeout_s: float = 30.0) -> Attestation: ...

class QualityDimension(enum.Enum):
    EXISTENCE: str
    COMPLETENESS: str
    CORRECTNESS: str
    QUALITY: str
    SAFETY: str
    REGRESSION: str

class QualityScore:
    dimension: QualityDimension
    score: float
    detail: str
    def __init__(self, dimension: QualityDimension, score: float, detail: str) -> None: ...

class MultiDimensionalAttestor(Attestor):
    # (dimensions, min_dimension_score=0.3, *, name="multi_dimensional", quorum=0), or the
    # Python ClampAI's (name, threshold=0.7) with add_check.
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def add_check(self, dimension: QualityDimension, weight: float,
                  check_fn: Callable[[], Tuple[float, str]]) -> None: ...
    def scores(self) -> List[QualityScore]: ...

class AttestationGate:
    quorum: int
    def __init__(self, quorum: int = 1) -> None: ...
    def add_attestor(self, attestor: Any) -> None: ...
    def verify_goal(self, state: Any, goal_description: str,
                    goal_predicate: Callable[[Any], bool],
                    timeout_per_attestor: float = 30.0) -> Tuple[bool, List[Attestation]]: ...
    @property
    def attestation_history(self) -> List[List[Attestation]]: ...

class ReadinessProbe:
    name: str
    check_fn: Callable[[], Tuple[bool, str]]
    initial_delay_s: float
    interval_s: float
    max_retries: int
    backoff_factor: float
    def __init__(self, name: str, check_fn: Callable[[], Tuple[bool, str]],
                 initial_delay_s: float = 0.0, interval_s: float = 1.0, max_retries: int = 10,
                 backoff_factor: float = 1.5) -> None: ...
    def wait_until_ready(self, simulated_time: float = 0.0,
                         use_real_time: bool = False) -> Tuple[bool, str, float]: ...

class TemporalDependency:
    required_action_id: str
    reason: str
    readiness_probe: Optional[ReadinessProbe]
    min_delay_s: float
    def __init__(self, required_action_id: str, reason: str,
                 readiness_probe: Optional[ReadinessProbe] = None,
                 min_delay_s: float = 0.0) -> None: ...
    def mark_completed(self, at_time: float) -> None: ...
    def is_satisfied(self, current_time: float,
                     use_real_time: bool = False) -> Tuple[bool, str]: ...

class TemporalCausalGraph:
    def __init__(self, base_graph: Optional[CausalGraph] = None) -> None: ...
    def add_temporal_dep(self, action_id: str, dep: TemporalDependency) -> None: ...
    def add_temporal_dependency(self, action_id: str, dep: TemporalDependency) -> None: ...
    def set_time(self, t: float) -> None: ...
    def mark_completed(self, action_id: str, at_time: Optional[float] = None) -> None: ...
    def can_execute(self, action_id: str,
                    use_real_time: bool = False) -> Tuple[bool, List[str]]: ...
    def wait_for_ready(self, action_id: str,
                       use_real_time: bool = False) -> Tuple[bool, List[str]]: ...
    def ready_actions(self, available: List[str], use_real_time: bool = False) -> List[str]: ...

class EnvironmentProbe:
    variable_name: str
    read_fn: Callable[[], Any]
    description: str
    def __init__(self, variable_name: str, read_fn: Callable[[], Any],
                 description: str = "") -> None: ...

class ReconciliationResult:
    matches: List[Tuple[str, Any, Any]]
    mismatches: List[Tuple[str, Any, Any]]
    unprobed: List[str]
    timestamp: float
    def __init__(self, matches: List[Tuple[str, Any, Any]],
                 mismatches: List[Tuple[str, Any, Any]], unprobed: List[str],
                 timestamp: float = 0.0) -> None: ...
    @property
    def is_consistent(self) -> bool: ...
    @property
    def drift_severity(self) -> float: ...
    def __bool__(self) -> bool: ...

class EnvironmentDriftError(Exception):
    result: ReconciliationResult
    def __init__(self, message: str, result: ReconciliationResult) -> None: ...

class EnvironmentReconciler:
    drift_threshold: float
    halt_on_drift: bool
    tolerance: float
    def __init__(self, drift_threshold: float = 0.0, halt_on_drift: bool = True, *,
                 tolerance: float = 0.0) -> None: ...
    def add_probe(self, probe: EnvironmentProbe) -> None: ...
    def register_probe(self, key: str, probe_fn: Callable[[], Any]) -> None: ...
    def snapshot(self) -> Dict[str, Any]: ...
    def reconcile(self, expected_state: Any, label: str = "") -> ReconciliationResult: ...
    @property
    def reconciliation_history(self) -> List[ReconciliationResult]: ...

class FailurePattern:
    action_failed: str
    action_missing: str
    observations: int
    failures_with_missing: int
    failures_without_missing: int
    successes_with_missing: int
    successes_without_missing: int
    def __init__(self, action_failed: str, action_missing: str, observations: int = 0,
                 failures_with_missing: int = 0, failures_without_missing: int = 0,
                 successes_with_missing: int = 0, successes_without_missing: int = 0) -> None: ...

class DependencyDiscovery:
    threshold: float
    min_obs: int
    def __init__(self, significance_threshold: float = 0.05,
                 min_observations: int = 5) -> None: ...
    def observe(self, action_id: str, succeeded: bool, completed_actions: Set[str],
                all_known_actions: Set[str]) -> None: ...
    def discover(self) -> Dict[str, List[Tuple[str, float, float]]]: ...
    def inject_into_graph(self, graph: CausalGraph) -> List[Tuple[str, str, float]]: ...
    def summary(self) -> str: ...

class ResourceState(enum.Enum):
    ABSENT: str
    CREATING: str
    READY: str
    DEGRADED: str
    DELETING: str
    FAILED: str

class Permission(enum.Enum):
    NONE: str
    READ: str
    WRITE: str
    EXECUTE: str
    ADMIN: str

class ResourceDescriptor:
    kind: str
    identifier: str
    state: ResourceState
    permissions: FrozenSet[Permission]
    health_endpoint: str
    created_at: float
    metadata: str
    def __init__(self, kind: str, identifier: str, state: ResourceState = ...,
                 permissions: FrozenSet[Permission] = ..., health_endpoint: str = "",
                 created_at: float = 0.0, metadata: str = "") -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...

class ResourceTracker:
    VALID_TRANSITIONS: ClassVar[Dict[ResourceState, Set[ResourceState]]]
    def __init__(self) -> None: ...
    def register(self, r: ResourceDescriptor) -> None: ...
    def transition(self, rid: str, ns: ResourceState) -> Tuple[bool, str]: ...
    def get(self, rid: str) -> Optional[ResourceDescriptor]: ...
    def all_ready(self, ids: Optional[List[str]] = None) -> bool: ...
    def summary(self) -> str: ...

class SecurityLevel(enum.Enum):
    PUBLIC: int
    INTERNAL: int
    PII: int
    SECRET: int

class DataLabel:
    level: SecurityLevel
    tags: FrozenSet[str]
    def __init__(self, level: SecurityLevel, tags: Optional[Iterable[str]] = None) -> None: ...
    def __le__(self, other: DataLabel) -> bool: ...
    def __ge__(self, other: DataLabel) -> bool: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    @staticmethod
    def join(*labels: DataLabel) -> DataLabel: ...

class LabelledData:
    def __init__(self, value: Any, label: DataLabel) -> None: ...
    @property
    def value(self) -> Any: ...
    @property
    def label(self) -> DataLabel: ...

class MonitorOutcome:
    outcome: Outcome
    attestations: List[Attestation]
    drift: List[Dict[str, Any]]
    def __init__(self, outcome: Outcome, attestations: List[Attestation],
                 drift: List[Dict[str, Any]]) -> None: ...
    @property
    def approved(self) -> bool: ...
    @property
    def decision(self) -> Decision: ...
    @property
    def state(self) -> State: ...
    def __bool__(self) -> bool: ...
    def to_dict(self) -> Dict[str, Any]: ...

class GoalCheck:
    reached: bool
    attested: bool
    success: bool
    attestations: List[Attestation]
    def __init__(self, data: Mapping[str, Any]) -> None: ...
    def __bool__(self) -> bool: ...

class ReferenceMonitor:
    ifc_enabled: bool
    cbf_enabled: bool
    hjb_enabled: bool
    cbf_binary_search_tol: float
    cbf_max_iterations: int
    ifc_labels: Dict[str, DataLabel]
    cbf_budget: Any
    capture_basins: List[Any]
    contracts: Dict[str, Any]
    # (task, *, attestors=None, allowed_programs=(), timeout_ms=5000, max_output_bytes=65536,
    #  enforce_information_flow=True, record_rejections=False, reconciler=None,
    #  readiness=None), or the Python ClampAI's
    # (ifc_enabled=True, cbf_enabled=True, hjb_enabled=True, cbf_binary_search_tol=1e-6,
    #  cbf_max_iterations=20).
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def evaluate(self, action: Any, params: Optional[Mapping[str, Any]] = None) -> Decision: ...
    def execute(self, action: Any,
                params: Optional[Mapping[str, Any]] = None) -> MonitorOutcome: ...
    def check_goal(self) -> GoalCheck: ...
    @property
    def downward_flows(self) -> List[Any]: ...
    @property
    def halted(self) -> bool: ...
    def reconcile(self) -> List[Dict[str, Any]]: ...
    @property
    def drift(self) -> List[Dict[str, Any]]: ...
    @property
    def state(self) -> State: ...
    @property
    def step_count(self) -> int: ...
    @property
    def trace(self) -> List[Any]: ...
    def set_ifc_label(self, var_name: str, label: DataLabel) -> None: ...
    def add_label(self, variable: str, label: DataLabel) -> None: ...
    def add_cbf(self, h: Callable[[Any], float], alpha: float = 0.1) -> None: ...
    def add_capture_basin(self, basin: Any) -> None: ...
    def register_contract(self, spec: Any) -> None: ...
    def enforce(self, action: ActionSpec, state: Any,
                candidate_next_actions: Optional[List[ActionSpec]] = None,
                budget_remaining: float = ...) -> Tuple[bool, str, Optional[ActionSpec]]: ...
