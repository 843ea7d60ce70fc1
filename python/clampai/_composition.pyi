# Stubs of python/clampai/_composition.py (the Python ClampAI's task composition and
# contracts). test_stubs.py checks them against the module.
import enum
from typing import Callable, Dict, List, Optional, Tuple

from ._clampai import State
from ._reference_api import GuaranteeLevel
from ._task import ActionSpec, Invariant

class CompositionType(enum.Enum):
    SEQUENTIAL: str
    PARALLEL: str
    CONDITIONAL: str
    REPEAT: str

class InterfaceSignature:
    required_inputs: Tuple[str, ...]
    produced_outputs: Tuple[str, ...]
    forbidden_variables: Tuple[str, ...]
    precondition_predicates: Tuple[Callable[[State], bool], ...]
    postcondition_predicates: Tuple[Callable[[State], bool], ...]
    def __init__(self, required_inputs: Tuple[str, ...], produced_outputs: Tuple[str, ...], forbidden_variables: Tuple[str, ...] = ..., precondition_predicates: Tuple[Callable[[State], bool], ...] = ..., postcondition_predicates: Tuple[Callable[[State], bool], ...] = ...) -> None: ...
    def compatible_with(self, other: InterfaceSignature) -> bool: ...
    def check_preconditions(self, state: State) -> Tuple[bool, str]: ...
    def check_postconditions(self, state: State) -> Tuple[bool, str]: ...

class VerificationCertificate:
    task_id: str
    proof_level: GuaranteeLevel
    all_invariants_satisfied: bool
    budget_safe: bool
    no_deadlock: bool
    rollback_exact: bool
    proof_hash: str
    assumptions: Tuple[str, ...]
    def __init__(self, task_id: str, proof_level: GuaranteeLevel, all_invariants_satisfied: bool, budget_safe: bool, no_deadlock: bool, rollback_exact: bool, proof_hash: str, assumptions: Tuple[str, ...] = ...) -> None: ...
    def is_complete(self) -> bool: ...
    def is_conditionally_verified(self) -> bool: ...

class SuperTask:
    task_id: str
    name: str
    description: str
    goal: str
    available_actions: Tuple[ActionSpec, ...]
    invariants: Tuple[Invariant, ...]
    interface: InterfaceSignature
    certificate: VerificationCertificate
    composition_history: Tuple[str, ...]
    composition_type: Optional[CompositionType]
    def __init__(self, task_id: str, name: str, description: str, goal: str, available_actions: Tuple[ActionSpec, ...], invariants: Tuple[Invariant, ...], interface: InterfaceSignature, certificate: VerificationCertificate, composition_history: Tuple[str, ...] = ..., composition_type: Optional[CompositionType] = ...) -> None: ...
    def is_verified(self) -> bool: ...
    def can_compose_with(self, other: SuperTask, comp_type: CompositionType) -> Tuple[bool, str]: ...
    def compose(self, other: SuperTask, comp_type: CompositionType) -> Optional[SuperTask]: ...

class TaskComposer:
    tasks: Dict[str, SuperTask]
    def __init__(self) -> None: ...
    def register_task(self, task: SuperTask) -> bool: ...
    def is_verified(self, task_id: str) -> bool: ...
    def compose_chain(self, task_ids: List[str], comp_type: CompositionType = ...) -> Optional[SuperTask]: ...
    def get_composed_tasks(self, depth: int = ...) -> List[SuperTask]: ...

class ContractSpecification:
    name: str
    assume: Callable[[State], bool]
    guarantee: Callable[[State], bool]
    side_effects: Tuple[str, ...]
    def __init__(self, name: str, assume: Callable[[State], bool], guarantee: Callable[[State], bool], side_effects: Tuple[str, ...] = ...) -> None: ...
    def is_satisfied_by(self, state_in: State, state_out: State) -> Tuple[bool, str]: ...

class OperadicComposition:
    @staticmethod
    def compose(spec_a: ContractSpecification, spec_b: ContractSpecification, verify_interface: bool = ...) -> ContractSpecification: ...
