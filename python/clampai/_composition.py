"""The Python ClampAI's task composition (`CompositionType`, `InterfaceSignature`,
`VerificationCertificate`, `SuperTask`, `TaskComposer`) and its contracts
(`ContractSpecification`, `OperadicComposition`): metadata over this package's `ActionSpec` and
`Invariant`, checked in Python. Proving a composition of tasks' specs is `clampai.compose`
(the C++ composition library, docs/COMPOSITION.md)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Callable, Dict, List, Optional, Tuple

from ._clampai import State
from ._reference_api import GuaranteeLevel
from ._task import ActionSpec, Invariant


class CompositionType(Enum):
    """How two tasks compose."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    CONDITIONAL = "conditional"
    REPEAT = "repeat"


def _union(*groups) -> tuple:
    """The items of `groups` in order, each once (by equality)."""
    out: list = []
    for group in groups:
        for item in group:
            if item not in out:
                out.append(item)
    return tuple(out)


def _check(predicates, state: State, what: str) -> Tuple[bool, str]:
    for i, predicate in enumerate(predicates):
        try:
            if not predicate(state):
                return False, f"{what} {i} not satisfied"
        except Exception as e:  # a predicate's error is its failure, with the message
            return False, f"{what} {i} raised exception: {e}"
    return True, f"All {what.lower()}s satisfied"


@dataclass(frozen=True)
class InterfaceSignature:
    """What a task reads (`required_inputs`), writes (`produced_outputs`) and must not find
    (`forbidden_variables`), with optional predicates on its input and output states."""

    required_inputs: Tuple[str, ...]
    produced_outputs: Tuple[str, ...]
    forbidden_variables: Tuple[str, ...] = ()
    precondition_predicates: Tuple[Callable[[State], bool], ...] = ()
    postcondition_predicates: Tuple[Callable[[State], bool], ...] = ()

    def compatible_with(self, other: InterfaceSignature) -> bool:
        """True iff `other` can run after this: every input of `other` is an output of this,
        and this produces nothing `other` forbids (names only; the predicates are checked on
        states)."""
        if not set(other.required_inputs) <= set(self.produced_outputs):
            return False
        return not set(self.produced_outputs) & set(other.forbidden_variables)

    def check_preconditions(self, state: State) -> Tuple[bool, str]:
        """`(True, ...)` iff every precondition holds in `state` (a raise is a failure)."""
        return _check(self.precondition_predicates, state, "Precondition")

    def check_postconditions(self, state: State) -> Tuple[bool, str]:
        """`(True, ...)` iff every postcondition holds in `state` (a raise is a failure)."""
        return _check(self.postcondition_predicates, state, "Postcondition")


@dataclass(frozen=True)
class VerificationCertificate:
    """What is known of a task: its proof level and which of T3, T1, deadlock freedom and T7
    hold, with the assumptions a CONDITIONAL level rests on."""

    task_id: str
    proof_level: GuaranteeLevel
    all_invariants_satisfied: bool
    budget_safe: bool
    no_deadlock: bool
    rollback_exact: bool
    proof_hash: str
    assumptions: Tuple[str, ...] = ()

    def is_complete(self) -> bool:
        """PROVEN, and every property holds."""
        return self.proof_level == GuaranteeLevel.PROVEN and all(
            [self.all_invariants_satisfied, self.budget_safe, self.no_deadlock,
             self.rollback_exact])

    def is_conditionally_verified(self) -> bool:
        """PROVEN or CONDITIONAL."""
        return self.proof_level in (GuaranteeLevel.PROVEN, GuaranteeLevel.CONDITIONAL)


def _total_cost(actions) -> Decimal:
    total = Decimal(0)
    for a in actions:
        if isinstance(a.cost, (int, float, Decimal)) and not isinstance(a.cost, bool):
            total += Decimal(repr(a.cost)) if isinstance(a.cost, float) else Decimal(a.cost)
    return total


@dataclass
class SuperTask:
    """A task with its interface and certificate, and how it was composed."""

    task_id: str
    name: str
    description: str
    goal: str
    available_actions: Tuple[ActionSpec, ...]
    invariants: Tuple[Invariant, ...]
    interface: InterfaceSignature
    certificate: VerificationCertificate
    composition_history: Tuple[str, ...] = ()
    composition_type: Optional[CompositionType] = None

    def is_verified(self) -> bool:
        """The certificate is complete (PROVEN)."""
        return self.certificate.is_complete()

    def _composable(self) -> bool:
        # A task is composable if verified, or if it is a composition of verified tasks
        # (CONDITIONAL on its recorded assumptions): a chain goes on.
        return self.is_verified() or (bool(self.composition_history)
                                      and self.certificate.is_conditionally_verified())

    def can_compose_with(self, other: SuperTask,
                         comp_type: CompositionType) -> Tuple[bool, str]:
        """`(True, "Composition allowed")`, or False with the reason."""
        if not self._composable():
            return False, f"Source task '{self.task_id}' is not fully verified"
        if not other._composable():
            return False, f"Target task '{other.task_id}' is not fully verified"
        if comp_type == CompositionType.PARALLEL:
            shared = sorted(set(self.interface.produced_outputs)
                            & set(other.interface.produced_outputs))
            if shared:
                return False, f"Variable conflict in parallel composition: {set(shared)}"
        elif (comp_type == CompositionType.SEQUENTIAL
              and not self.interface.compatible_with(other.interface)):
            return False, f"Interface mismatch: {self.task_id} → {other.task_id}"
        return True, "Composition allowed"

    def compose(self, other: SuperTask, comp_type: CompositionType) -> Optional[SuperTask]:
        """The composed task, CONDITIONAL on the assumptions its certificate lists (shared
        invariants, the total cost, shared actions), or None (with a `RuntimeWarning`) when
        `can_compose_with` refuses."""
        ok, reason = self.can_compose_with(other, comp_type)
        if not ok:
            warnings.warn(f"Cannot compose: {reason}", RuntimeWarning, stacklevel=2)
            return None
        assumptions = list(_union(self.certificate.assumptions, other.certificate.assumptions))
        shared = sorted({i.name for i in self.invariants} & {i.name for i in other.invariants})
        if shared:
            assumptions.append(f"Shared invariants: {set(shared)}")
        total = _total_cost(self.available_actions) + _total_cost(other.available_actions)
        assumptions.append(f"Total estimated cost: {total:.2f} (must fit in kernel budget)")
        overlap = sorted({a.id for a in self.available_actions}
                         & {a.id for a in other.available_actions})
        if overlap:
            assumptions.append(f"Overlapping actions: {set(overlap)}")
        mine, theirs = self.interface, other.interface
        outputs = _union(mine.produced_outputs, theirs.produced_outputs)
        if comp_type == CompositionType.PARALLEL:
            inputs = _union(mine.required_inputs, theirs.required_inputs)
        else:
            inputs = tuple(mine.required_inputs)
        interface = InterfaceSignature(
            required_inputs=inputs, produced_outputs=outputs,
            forbidden_variables=_union(mine.forbidden_variables, theirs.forbidden_variables))
        certificate = VerificationCertificate(
            task_id=f"{self.task_id}_{other.task_id}",
            proof_level=GuaranteeLevel.CONDITIONAL,
            all_invariants_satisfied=True, budget_safe=True, no_deadlock=True,
            rollback_exact=True,
            proof_hash=(f"composed_{self.certificate.proof_hash[:8]}_"
                        f"{other.certificate.proof_hash[:8]}"),
            assumptions=_union(assumptions))
        return SuperTask(
            task_id=certificate.task_id,
            name=f"{self.name} ∘ {other.name}",
            description=f"Composed (conditional): {self.description}; then {other.description}",
            goal=other.goal,
            available_actions=_union(self.available_actions, other.available_actions),
            invariants=_union(self.invariants, other.invariants),
            interface=interface,
            certificate=certificate,
            composition_history=(self.task_id, other.task_id),
            composition_type=comp_type)


class TaskComposer:
    """A library of verified `SuperTask`s (`tasks`, by id) and their compositions."""

    def __init__(self) -> None:
        self.tasks: Dict[str, SuperTask] = {}

    def register_task(self, task: SuperTask) -> bool:
        """Adds a verified task; False (with a `RuntimeWarning`) for a known id or a task
        that is not verified."""
        if task.task_id in self.tasks:
            warnings.warn(f"Task '{task.task_id}' already registered", RuntimeWarning,
                          stacklevel=2)
            return False
        if not task.is_verified():
            warnings.warn(f"Cannot register unverified task '{task.task_id}'", RuntimeWarning,
                          stacklevel=2)
            return False
        self.tasks[task.task_id] = task
        return True

    def is_verified(self, task_id: str) -> bool:
        """True iff `task_id` is registered (only verified tasks are)."""
        task = self.tasks.get(task_id)
        return task is not None and task.is_verified()

    def compose_chain(self, task_ids: List[str],
                      comp_type: CompositionType = CompositionType.SEQUENTIAL
                      ) -> Optional[SuperTask]:
        """T1 ∘ T2 ∘ ... ∘ Tn, or None if a task is unknown or a step does not compose."""
        if not task_ids:
            return None
        result = self.tasks.get(task_ids[0])
        if result is None:
            warnings.warn(f"Task '{task_ids[0]}' not found", RuntimeWarning, stacklevel=2)
            return None
        for task_id in task_ids[1:]:
            other = self.tasks.get(task_id)
            if other is None:
                warnings.warn(f"Task '{task_id}' not found", RuntimeWarning, stacklevel=2)
                return None
            result = result.compose(other, comp_type)
            if result is None:
                return None
        return result

    def get_composed_tasks(self, depth: int = 2) -> List[SuperTask]:
        """The registered tasks (depth 0 or 1), or every sequential composition of two
        different ones that composes (depth 2 and more)."""
        tasks = list(self.tasks.values())
        if depth <= 1:
            return tasks
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for i, a in enumerate(tasks):
                for j, b in enumerate(tasks):
                    if i != j:
                        composed = a.compose(b, CompositionType.SEQUENTIAL)
                        if composed is not None:
                            out.append(composed)
        return out


@dataclass(frozen=True)
class ContractSpecification:
    """An assume-guarantee contract: `assume` on the state in, `guarantee` on the state out,
    `side_effects` the variables it writes."""

    name: str
    assume: Callable[[State], bool]
    guarantee: Callable[[State], bool]
    side_effects: Tuple[str, ...] = ()

    def is_satisfied_by(self, state_in: State, state_out: State) -> Tuple[bool, str]:
        """`(True, ...)` iff `assume(state_in)` and `guarantee(state_out)`."""
        if not self.assume(state_in):
            return False, f"Contract '{self.name}': Assume violated"
        if not self.guarantee(state_out):
            return False, f"Contract '{self.name}': Guarantee violated"
        return True, f"Contract '{self.name}': satisfied"


class OperadicComposition:
    """Sequential composition of contracts: A;B assumes A's assumption and guarantees B's."""

    @staticmethod
    def compose(spec_a: ContractSpecification, spec_b: ContractSpecification,
                verify_interface: bool = True) -> ContractSpecification:
        """The contract `(A;B)`: assume A's, guarantee B's, side effects both's (A's first)."""
        del verify_interface  # names only: there is nothing to check without states
        return ContractSpecification(
            name=f"({spec_a.name};{spec_b.name})",
            assume=lambda s: spec_a.assume(s),
            guarantee=lambda s: spec_b.guarantee(s),
            side_effects=_union(spec_a.side_effects, spec_b.side_effects))
