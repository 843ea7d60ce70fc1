"""The Python ClampAI's inverse effects (`InverseAlgebra`, `InverseEffect`, `RollbackRecord`,
`action_with_inverse_guarantee`), over this package's `State`, `Effect` and `ActionSpec`: the
states are the C++ kernel's, their differences `State.diff`, and every transition (the action,
its inverse) the kernel's own (`ActionSpec.simulate`). The kernel's rollback (T7) is
`SafetyKernel.rollback`; this is the Python ClampAI's record-keeping around it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from ._clampai import State
from ._task import ActionSpec, Effect

# `InverseEffect.prior_value` for a variable that was absent: its inverse deletes it.
DELETED = object()


@dataclass(frozen=True)
class InverseEffect:
    """An effect paired with the prior value it restores (`DELETED`: the variable was absent)."""

    variable: str
    mode: str
    prior_value: object

    def to_effect(self) -> Effect:
        """The `Effect` that restores the prior value (`delete` when there was none)."""
        if self.prior_value is DELETED:
            return Effect(self.variable, "delete")
        return Effect(self.variable, "set", self.prior_value)


def _restore(action_id: str, name: str, effects: Tuple[Effect, ...], state: State) -> State:
    inverse = ActionSpec(id=action_id, name=name, description="Automatic rollback to prior state",
                         effects=tuple(effects), cost=0.0, reversible=True)
    return inverse.simulate(state)


@dataclass
class RollbackRecord:
    """What undoes one transition: the state before (and its fingerprint), the fingerprint of
    the state after, and the inverse effects."""

    action_id: str
    action_name: str
    state_before_fingerprint: str
    state_before_snapshot: State
    state_after_fingerprint: str
    inverse_effects: Tuple[Effect, ...]
    timestamp: float

    def apply_rollback(self, current_state: State) -> State:
        """The state before, from the state after (T7); `ValueError` when `current_state` is
        not the recorded state after, `AssertionError` if the inverse does not restore it."""
        if current_state.fingerprint != self.state_after_fingerprint:
            raise ValueError(f"Cannot rollback: current state {current_state.fingerprint} "
                             f"!= recorded after-state {self.state_after_fingerprint}")
        restored = _restore(f"rollback_of_{self.action_id}", f"Rollback({self.action_name})",
                            self.inverse_effects, current_state)
        if restored != self.state_before_snapshot:
            raise AssertionError(f"Rollback exactness (T7) failed! Restored "
                                 f"{restored.fingerprint} != Original "
                                 f"{self.state_before_snapshot.fingerprint}")
        return restored


class InverseAlgebra:
    """Inverse effects computed from the states themselves (what changed), so they restore
    the state before whatever the effects' modes."""

    @staticmethod
    def compute_inverse_from_states(state_before: State, state_after: State,
                                    action: ActionSpec) -> Tuple[Effect, ...]:
        """The effects that lead from `state_after` back to `state_before`, one per changed
        variable in key order: `set` to the old value, `delete` of a variable that was added."""
        inverse: List[Effect] = []
        for key in sorted(state_before.diff(state_after)):
            if not state_before.has(key):
                inverse.append(Effect(key, "delete"))
            else:
                inverse.append(Effect(key, "set", state_before.get(key)))
        return tuple(inverse)

    @staticmethod
    def make_rollback_record(action: ActionSpec, state_before: State, state_after: State,
                             timestamp: float) -> RollbackRecord:
        """A `RollbackRecord` of `action` taking `state_before` to `state_after`."""
        return RollbackRecord(
            action_id=action.id, action_name=action.name,
            state_before_fingerprint=state_before.fingerprint,
            state_before_snapshot=state_before,
            state_after_fingerprint=state_after.fingerprint,
            inverse_effects=InverseAlgebra.compute_inverse_from_states(state_before, state_after,
                                                                      action),
            timestamp=timestamp)

    @staticmethod
    def verify_inverse_correctness(state_before: State, action: ActionSpec,
                                   inverse_effects: Tuple[Effect, ...]) -> Tuple[bool, str]:
        """`(True, message)` iff `inverse_effects` lead from where `action` takes
        `state_before` back to `state_before`; else `(False, the variables still different)`."""
        state_after = action.simulate(state_before)
        restored = _restore(f"verify_inverse_of_{action.id}", f"VerifyInverse({action.name})",
                            tuple(inverse_effects), state_after)
        if restored == state_before:
            return True, "Inverse correctness verified (T7 holds)"
        diffs = restored.diff(state_before)
        return False, f"Inverse failed: {len(diffs)} variables still differ: {diffs}"


def action_with_inverse_guarantee(spec: ActionSpec,
                                  state_before: State) -> Tuple[ActionSpec, Tuple[Effect, ...]]:
    """`(spec, its inverse effects from state_before)`, checked to restore it (`RuntimeError`
    if they do not)."""
    inverse = InverseAlgebra.compute_inverse_from_states(state_before,
                                                         spec.simulate(state_before), spec)
    ok, message = InverseAlgebra.verify_inverse_correctness(state_before, spec, inverse)
    if not ok:
        raise RuntimeError(f"Cannot guarantee inverse: {message}")
    return spec, inverse
