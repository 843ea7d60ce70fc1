# Stubs of python/clampai/_inverse.py (the Python ClampAI's inverse effects). test_stubs.py
# checks them against the module.
from typing import Tuple

from ._clampai import State
from ._task import ActionSpec, Effect

DELETED: object

class InverseEffect:
    variable: str
    mode: str
    prior_value: object
    def __init__(self, variable: str, mode: str, prior_value: object) -> None: ...
    def to_effect(self) -> Effect: ...

class RollbackRecord:
    action_id: str
    action_name: str
    state_before_fingerprint: str
    state_before_snapshot: State
    state_after_fingerprint: str
    inverse_effects: Tuple[Effect, ...]
    timestamp: float
    def __init__(self, action_id: str, action_name: str, state_before_fingerprint: str, state_before_snapshot: State, state_after_fingerprint: str, inverse_effects: Tuple[Effect, ...], timestamp: float) -> None: ...
    def apply_rollback(self, current_state: State) -> State: ...

class InverseAlgebra:
    @staticmethod
    def compute_inverse_from_states(state_before: State, state_after: State, action: ActionSpec) -> Tuple[Effect, ...]: ...
    @staticmethod
    def make_rollback_record(action: ActionSpec, state_before: State, state_after: State, timestamp: float) -> RollbackRecord: ...
    @staticmethod
    def verify_inverse_correctness(state_before: State, action: ActionSpec, inverse_effects: Tuple[Effect, ...]) -> Tuple[bool, str]: ...

def action_with_inverse_guarantee(spec: ActionSpec, state_before: State) -> Tuple[ActionSpec, Tuple[Effect, ...]]: ...
