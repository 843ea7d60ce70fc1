"""The Python ClampAI's reasoning layer (docs/PYTHON.md): beliefs, the dependency graph, action
values, the structured prompt and the parsing of its answer, saliency, progress monitoring and
the LLM adapters. The Beta arithmetic, the cost-tier priors, the value's weights and the
sanitising of an answer are the C++ agent library's (clampai::agent); the rest is Python-shaped:
string keys and callables the C++ loop reads from a task model instead."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Set, Tuple

from . import _clampai
from ._clampai import State

__all__ = [
    "Belief", "BeliefState", "Dependency", "CausalGraph", "ActionValue", "ActionValueComputer",
    "CostAwarePriorFactory", "ReasoningRequest", "ReasoningResponse", "parse_llm_response",
    "ClampAI_SYSTEM_PROMPT", "SaliencyResult", "SaliencyEngine", "ProgressMonitor",
    "TerminationReason", "OutcomeType", "Outcome", "ReasoningOutcome", "LLMAdapter",
    "MockLLMAdapter", "CausalNode", "estimate_tokens", "compute_state_delta",
    "integral_sensitivity_filter", "should_skip_llm",
]

# z of a one-sided normal bound at the confidences the Python ClampAI names (else 95%).
_Z = {0.90: 1.28, 0.95: 1.645, 0.99: 2.326}


@dataclass
class Belief:
    """A Beta(alpha, beta) belief that a proposition holds. `observe` is Bayes' rule (a success
    adds 1 to alpha, a failure 1 to beta) after pulling the evidence toward Beta(1, 1) by
    `decay` in (0, 1] (1: none). The arithmetic is clampai::agent::Belief's."""

    alpha: float = 1.0
    beta: float = 1.0
    decay: float = 1.0

    def __post_init__(self) -> None:
        _clampai._belief(self.alpha, self.beta, 0.0)  # InvalidArgument unless both are > 0
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], not {self.decay}")

    def _stats(self, z: float = 1.645) -> Tuple[float, float, float, float, float]:
        return _clampai._belief(self.alpha, self.beta, z)

    @property
    def mean(self) -> float:
        return self._stats()[0]

    @property
    def variance(self) -> float:
        return self._stats()[1]

    @property
    def std(self) -> float:
        return math.sqrt(self.variance)

    @property
    def confidence(self) -> float:
        """1 - 1 / (1 + 0.1 n), n = alpha + beta - 2 (the evidence beyond Beta(1, 1))."""
        return self._stats()[4]

    def observe(self, success: bool) -> "Belief":
        """The posterior after one outcome (this belief is unchanged)."""
        a, b = _clampai._belief_observe(self.alpha, self.beta, bool(success), self.decay)
        return Belief(a, b, self.decay)

    def pessimistic_bound(self, confidence: float = 0.95) -> float:
        return self._stats(_Z.get(confidence, 1.645))[2]

    def optimistic_bound(self, confidence: float = 0.95) -> float:
        return self._stats(_Z.get(confidence, 1.645))[3]

    def kl_divergence_from_uniform(self) -> float:
        """KL(Beta(alpha, beta) || Beta(1, 1)), in nats."""
        a, b = self.alpha, self.beta
        kl = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
              + (a - 1) * (_digamma(a) - _digamma(a + b))
              + (b - 1) * (_digamma(b) - _digamma(a + b)))
        return max(0.0, kl)

    def __repr__(self) -> str:
        d = f", decay={self.decay}" if self.decay != 1.0 else ""
        return f"Belief(mean={self.mean:.3f}, α={self.alpha:.1f}, β={self.beta:.1f}{d})"


def _digamma(x: float) -> float:
    """psi(x) for x > 0: the recurrence up to 10, then the asymptotic series (error < 1e-13)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return result + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (
        1 / 240 - f / 132))))


class BeliefState:
    """Beliefs by string key (`action:ID:succeeds`, ...); an unseen key is Beta(1, 1)."""

    def __init__(self) -> None:
        self._beliefs: Dict[str, Belief] = {}

    def get(self, key: str) -> Belief:
        return self._beliefs.setdefault(key, Belief())

    def observe(self, key: str, success: bool) -> None:
        self._beliefs[key] = self.get(key).observe(success)

    def set_prior(self, key: str, alpha: float, beta: float) -> None:
        self._beliefs[key] = Belief(alpha, beta)

    def all_beliefs(self) -> Dict[str, Belief]:
        return dict(self._beliefs)

    def summary(self, top_n: int = 10) -> str:
        ranked = sorted(self._beliefs.items(), key=lambda kv: kv[1].variance, reverse=True)
        lines = ["Beliefs (highest uncertainty first):"]
        for key, b in ranked[:top_n]:
            lines.append(f"  {key}: {b.mean:.3f} ± {b.std:.3f} (n={b.alpha + b.beta - 2:.0f})")
        return "\n".join(lines)

    def to_llm_text(self) -> str:
        lines = []
        for key, b in sorted(self._beliefs.items()):
            c = b.confidence
            level = "high" if c > 0.8 else "medium" if c > 0.5 else "low"
            lines.append(f"  {key}: {b.mean:.1%} likely ({level} confidence)")
        return "\n".join(lines) or "  (no observations yet)"


@dataclass(frozen=True)
class Dependency:
    """`required_action_id` must complete before the action that has this dependency."""

    required_action_id: str
    reason: str


@dataclass(frozen=True)
class CausalNode:
    """An action of a CausalGraph: its dependencies and whether it has completed."""

    action_id: str
    dependencies: Tuple[Dependency, ...] = ()
    is_completed: bool = False


class CausalGraph:
    """Action dependencies by id: readiness, what blocks an action, the chain of work before
    one. An action the graph does not know has no dependencies. (A task's own graph is the C++
    one, clampai::agent::CausalGraph, which the Orchestrator uses.)"""

    def __init__(self) -> None:
        self._deps: Dict[str, Tuple[Dependency, ...]] = {}
        self._completed: Set[str] = set()

    def add_action(self, action_id: str,
                   depends_on: Optional[List[Tuple[str, str]]] = None) -> None:
        self._deps[action_id] = tuple(Dependency(d, why) for d, why in (depends_on or []))

    def mark_completed(self, action_id: str) -> None:
        self._completed.add(action_id)

    def can_execute(self, action_id: str) -> Tuple[bool, List[str]]:
        """(all dependencies completed, the ids of those that are not)."""
        unmet = [d.required_action_id for d in self._deps.get(action_id, ())
                 if d.required_action_id not in self._completed]
        return not unmet, unmet

    def ready_actions(self, available: List[str]) -> List[str]:
        return [a for a in available if self.can_execute(a)[0]]

    def critical_path(self, target: str) -> List[str]:
        """The longest chain of actions not completed, each a dependency of the next, that ends
        at `target`: the work that must run before it, in an order that works; its first action
        is ready (ties: the dependency listed first). [] when `target` has completed, or when
        the work before it loops (`has_cycle`)."""
        memo: Dict[str, Optional[List[str]]] = {}
        on_path: Set[str] = set()

        def chain(node: str) -> Optional[List[str]]:
            if node in on_path:
                return None  # a cycle: no order works
            if node not in memo:
                on_path.add(node)
                best: Optional[List[str]] = []
                for d in self.can_execute(node)[1]:
                    sub = chain(d)
                    if sub is None:
                        best = None
                        break
                    if len(sub) > len(best):  # type: ignore[arg-type]
                        best = sub
                on_path.discard(node)
                memo[node] = None if best is None else [*best, node]
            return memo[node]

        if target in self._completed:
            return []
        return chain(target) or []

    def has_cycle(self) -> bool:
        state: Dict[str, int] = {}  # 1: on the current path, 2: done

        def visit(node: str) -> bool:
            state[node] = 1
            for d in self._deps.get(node, ()):
                s = state.get(d.required_action_id, 0)
                if s == 1 or (s == 0 and d.required_action_id in self._deps
                              and visit(d.required_action_id)):
                    return True
            state[node] = 2
            return False

        return any(state.get(n, 0) == 0 and visit(n) for n in list(self._deps))

    def to_llm_text(self) -> str:
        lines = ["Action Dependencies:"]
        for node, deps in sorted(self._deps.items()):
            status = "done" if node in self._completed else "pending"
            names = ", ".join(d.required_action_id for d in deps) or "nothing"
            lines.append(f"  {node} [{status}] depends on: {names}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ActionValue:
    """An action's five dimensions and their weighted sum, for the prompt."""

    action_id: str
    expected_progress: float
    information_gain: float
    cost: float
    risk: float
    opportunity_cost: float
    value_score: float
    reasoning_hint: str

    def to_llm_text(self) -> str:
        return (f"  [{self.action_id}] value={self.value_score:.3f} "
                f"(progress={self.expected_progress:.2f}, info_gain={self.information_gain:.3f}, "
                f"cost=${self.cost:.2f}, risk={self.risk:.3f})\n    → {self.reasoning_hint}")


_RISK = {"low": 0.05, "medium": 0.15, "high": 0.35, "critical": 0.60}


class ActionValueComputer:
    """The value of an action from its success belief (`action:ID:succeeds`), its cost, its
    risk level and the progress made: value = 2·progress + 0.5·information - cost_ratio
    - risk_aversion·risk - 0.5·opportunity (clampai::agent::weighted_value)."""

    def __init__(self, risk_aversion: float = 1.0) -> None:
        self.risk_aversion = risk_aversion

    def compute(self, action: Any, state: State, beliefs: BeliefState, budget_remaining: float,
                goal_progress: float, steps_remaining: int) -> ActionValue:
        b = beliefs.get(f"action:{action.id}:succeeds")
        cost = float(action.cost)
        progress = b.mean / max(1, steps_remaining)
        info = b.variance * 4
        cost_ratio = cost / max(float(budget_remaining), 0.01)
        risk = _RISK.get(action.risk_level, 0.1) * (2.0 - b.confidence)
        opportunity = cost_ratio * (1.0 - float(goal_progress))
        value = _clampai._weighted_value(progress, info, cost_ratio, risk, opportunity,
                                         self.risk_aversion)
        hints = [h for h, on in (("high progress potential", progress > 0.3),
                                 ("high learning opportunity", info > 0.2),
                                 ("expensive relative to budget", cost_ratio > 0.3),
                                 ("elevated risk", risk > 0.25)) if on]
        return ActionValue(action.id, progress, info, cost, risk, opportunity, value,
                           "; ".join(hints) or "moderate across all dimensions")


class CostAwarePriorFactory:
    """Priors pessimistic in proportion to an action's share of the budget (K = pessimism):
    EXPLORE Beta(3, 1); CAUTIOUS (>= 3% or medium risk) Beta(2, 1 + K·r/2); GUARDED (>=
    `expensive_threshold` or high risk) Beta(1, 1 + K·r); GATED (>= `critical_threshold`, or
    irreversible and high risk) Beta(0.01, 100) until authorised, then as guarded. The priors
    are clampai::agent::tier_prior's."""

    def __init__(self, total_budget: float, pessimism_factor: float = 5.0,
                 expensive_threshold: float = 0.1, critical_threshold: float = 0.3) -> None:
        self.budget = float(total_budget)
        self.K = pessimism_factor
        self.expensive_threshold = expensive_threshold
        self.critical_threshold = critical_threshold
        self._authorized: Set[str] = set()

    def compute_prior(self, action: Any) -> Tuple[float, float, str]:
        """(alpha, beta, tier): tier is EXPLORE, CAUTIOUS, GUARDED, GATED or GATED_AUTHORIZED."""
        r = float(action.cost) / max(self.budget, 0.01)
        critical = action.risk_level in ("high", "critical")
        if (not action.reversible and critical) or r >= self.critical_threshold:
            if action.id in self._authorized:
                return (*_clampai._tier_prior("guarded", r, self.K), "GATED_AUTHORIZED")
            return (*_clampai._tier_prior("gated", r, self.K), "GATED")
        if r >= self.expensive_threshold or critical:
            return (*_clampai._tier_prior("guarded", r, self.K), "GUARDED")
        if r >= 0.03 or action.risk_level == "medium":
            return (*_clampai._tier_prior("cautious", r, self.K), "CAUTIOUS")
        return (*_clampai._tier_prior("explore", r, self.K), "EXPLORE")

    def create_prior(self, action: Any) -> Belief:
        alpha, beta, _ = self.compute_prior(action)
        return Belief(alpha, beta)

    def authorize(self, action_id: str) -> None:
        self._authorized.add(action_id)

    def initialize_beliefs(self, beliefs: BeliefState, actions: List[Any]) -> Dict[str, str]:
        tiers = {}
        for a in actions:
            alpha, beta, tiers[a.id] = self.compute_prior(a)
            beliefs.set_prior(f"action:{a.id}:succeeds", alpha, beta)
        return tiers

    def summary(self, actions: List[Any]) -> str:
        lines = ["Cost-Aware Priors:"]
        for a in actions:
            alpha, beta, tier = self.compute_prior(a)
            lines.append(f"  {a.id}: [{tier}] ${float(a.cost):.2f} → "
                         f"Beta({alpha:.1f},{beta:.1f}) μ={alpha / (alpha + beta):.3f}")
        return "\n".join(lines)


ClampAI_SYSTEM_PROMPT = """You choose the next action of an agent whose every action a safety kernel
checks before it runs. The prompt gives you the goal, the progress so far, the state, and for each
available action its computed value, its dependencies and the beliefs about its success.

The kernel enforces the budget, the invariants and the step limit: you cannot override them, and
an action it rejects does not run. Choose only an action marked READY. Prefer actions of high
value and likely success; do not spend budget on actions that make no progress. Stop when the
goal is reached or nothing left can make progress.

Answer with one JSON object and nothing else, in the form the prompt shows.
"""


class ReasoningRequest:
    """The structured prompt: goal, state, ranked actions with their analysis, beliefs,
    dependencies, history and the answer's form (`to_prompt()`)."""

    def __init__(self, goal: str, state: State, available_actions: List[Any],
                 action_values: List[ActionValue], beliefs: BeliefState,
                 causal_graph: CausalGraph, safety_kernel: Any,
                 history_summary: str = "") -> None:
        self.goal = goal
        self.state = state
        self.available_actions = available_actions
        self.action_values = action_values
        self.beliefs = beliefs
        self.causal_graph = causal_graph
        self.safety_kernel = safety_kernel
        self.history_summary = history_summary

    def to_prompt(self) -> str:
        k = self.safety_kernel
        budget = k.budget.summary() if hasattr(k.budget, "summary") else str(k.budget)
        progress = self.state.get("_progress", 0.0)
        sections = [f"## MISSION\nGoal: {self.goal}\nCurrent Progress: {float(progress):.1%}\n"
                    f"Budget: {budget}\nSteps: {k.step_count}/{k.max_steps}",
                    f"## CURRENT STATE\n{self.state.describe()}"]
        by_id = {a.id: a for a in self.available_actions}
        ready = set(self.causal_graph.ready_actions(list(by_id)))
        blocks = []
        for v in sorted(self.action_values, key=lambda v: v.value_score, reverse=True):
            a = by_id.get(v.action_id)
            if a is None:
                continue
            ok, unmet = self.causal_graph.can_execute(a.id)
            status = "READY" if a.id in ready else "BLOCKED"
            lines = [f"### [{status}] {a.name or a.id} (id={a.id})",
                     f"  {a.description}",
                     f"  Cost: ${float(a.cost):.2f} | Risk: {a.risk_level} | "
                     f"Reversible: {a.reversible}",
                     f"  Value Score: {v.value_score:.3f}",
                     f"    Progress potential: {v.expected_progress:.3f}",
                     f"    Information gain: {v.information_gain:.3f}",
                     f"    Risk: {v.risk:.3f}",
                     f"    Analysis: {v.reasoning_hint}"]
            if a.preconditions_text:
                lines.append(f"  Requires: {a.preconditions_text}")
            if not ok:
                lines.append(f"  ⚠ BLOCKED by: {', '.join(unmet)}")
            blocks.append("\n".join(lines))
        sections.append("## AVAILABLE ACTIONS (ranked by computed value)\n" + "\n\n".join(blocks))
        sections.append(f"## CURRENT BELIEFS\n{self.beliefs.to_llm_text()}")
        sections.append(f"## DEPENDENCIES\n{self.causal_graph.to_llm_text()}")
        if self.history_summary:
            sections.append(f"## RECENT HISTORY\n{self.history_summary}")
        sections.append(
            "## YOUR DECISION\nChoose the next action among the READY ones above, or stop "
            "when the goal is reached or no action can make progress.\n\nAnswer with one JSON "
            'object:\n{\n  "chosen_action_id": "<action id>",\n  "reasoning": "<why>",\n'
            '  "expected_outcome": "<what should happen>",\n'
            '  "risk_assessment": "<what could go wrong>",\n'
            '  "alternative_considered": "<the runner-up and why not>",\n'
            '  "should_stop": false,\n  "stop_reason": ""\n}\n\n'
            "The budget, the invariants and the step limit are enforced by the safety kernel; "
            "your reasoning is recorded in the audit trail.")
        return "\n\n".join(sections)


@dataclass
class ReasoningResponse:
    """A parsed answer; `is_valid` when it parsed and names an offered action or stops."""

    chosen_action_id: str
    reasoning: str
    expected_outcome: str
    risk_assessment: str
    alternative_considered: str
    should_stop: bool
    stop_reason: str
    raw_response: str = ""
    parse_errors: List[str] = field(default_factory=list)
    latency_ms: float = 0.0

    @property
    def is_valid(self) -> bool:
        return not self.parse_errors and (bool(self.chosen_action_id) or self.should_stop)


_MAX_OBJECTS = 64   # JSON objects read from one answer (clampai::agent::parse_answer's limits)
_MAX_STARTS = 256   # places where one may start
_MAX_OBJECT = 64 * 1024  # characters of one object
_TEXT_FIELDS = ("reasoning", "expected_outcome", "risk_assessment", "alternative_considered",
                "stop_reason")


def parse_llm_response(raw: str, valid_action_ids: Set[str]) -> ReasoningResponse:
    """Reads the answer's JSON object: every object in the text is read (code fences and prose
    around them ignored; as clampai::agent::parse_answer, at most 64 objects of 64 KiB from the
    first 256 places where one may start), after removing control, zero-width and bidirectional
    characters (clampai::agent::strip_invisible); those with `chosen_action_id` or `should_stop` must all
    choose the same, or the answer is refused as ambiguous. `should_stop` must be a JSON bool;
    the chosen id must be one of `valid_action_ids` unless stopping. Never raises for any text."""
    errors: List[str] = []
    text = raw if isinstance(raw, str) else str(raw)
    # A lone surrogate is no character: '?' (UTF-8 has no form for it).
    text = _clampai._strip_invisible(text.encode("utf-8", "replace").decode("utf-8"))
    decoder = json.JSONDecoder()
    choices: List[Dict[str, Any]] = []
    pos = starts = 0
    while len(choices) < _MAX_OBJECTS and starts < _MAX_STARTS:
        pos = text.find("{", pos)
        if pos < 0:
            break
        starts += 1
        try:
            obj, length = decoder.raw_decode(text[pos:pos + _MAX_OBJECT])
        except (ValueError, RecursionError):
            pos += 1
            continue
        if isinstance(obj, dict) and ("chosen_action_id" in obj or "should_stop" in obj):
            choices.append(obj)
        pos += length
    data: Dict[str, Any] = {}
    if not choices:
        errors.append("no JSON object with chosen_action_id or should_stop in the answer")
    else:
        data = choices[0]
        key = lambda o: (o.get("chosen_action_id", ""), o.get("should_stop", False))  # noqa: E731
        if any(key(o) != key(data) for o in choices[1:]):
            errors.append(f"ambiguous answer: {len(choices)} JSON objects choose differently")
    action_id = data.get("chosen_action_id", "")
    stop = data.get("should_stop", False)
    if stop is None:  # null: not given
        stop = False
    if not isinstance(stop, bool):
        errors.append(f"should_stop must be true or false, not {json.dumps(stop)}")
        stop = False
    if not isinstance(action_id, str):
        errors.append(f"chosen_action_id must be a string, not {json.dumps(action_id)}")
        action_id = ""
    if choices and not stop and action_id not in valid_action_ids:
        errors.append(f"Invalid action_id '{action_id}'. Valid: {sorted(valid_action_ids)}")
    fields = {f: str(data.get(f, "")) for f in _TEXT_FIELDS}
    if not choices:
        fields["reasoning"] = "PARSE FAILED"
    return ReasoningResponse(chosen_action_id=action_id, should_stop=stop, raw_response=raw,
                             parse_errors=errors, **fields)


@dataclass(frozen=True)
class SaliencyResult:
    kept_keys: Tuple[str, ...]
    scores: Dict[str, float]
    dropped_keys: Tuple[str, ...] = ()


class SaliencyEngine:
    """Which state keys the prompt shows: a key scores the summed |value| of the offered actions
    that write it; `_`-keys and a Jacobian's critical variables always stay; at most `max_keys`
    (the highest scores). A threshold or max_keys <= 0 keeps everything. Prompt-only: the kernel
    always sees the whole state. (A task's Orchestrator uses the C++ clampai::agent::Saliency,
    which reads the expressions.)"""

    def __init__(self, *, threshold: float = 0.05, max_keys: int = 20,
                 jacobian_fusion: Optional[Any] = None, jacobian_weight: float = 10.0) -> None:
        self.threshold = float(threshold)
        self.max_keys = int(max_keys)
        self.jacobian_fusion = jacobian_fusion
        self.jacobian_weight = float(jacobian_weight)

    def analyze(self, *, state: State, available_actions: List[Any],
                action_values: List[ActionValue]) -> SaliencyResult:
        keys = list(state.to_dict())
        if self.threshold <= 0 or self.max_keys <= 0:
            return SaliencyResult(tuple(keys), {k: math.inf for k in keys})
        scores = {k: 0.0 for k in keys}
        values = {v.action_id: abs(float(v.value_score)) for v in action_values}
        for a in available_actions:
            for k in a.affected_variables():
                if k in scores:
                    scores[k] += values.get(a.id, 0.0)
        critical = set()
        if self.jacobian_fusion is not None:
            critical = set(self.jacobian_fusion.compute_jacobian(state).critical_variables)
        for k in keys:
            if k in critical or k.startswith("_"):
                scores[k] = math.inf
        kept = [k for k in keys if scores[k] >= self.threshold]
        if len(kept) > self.max_keys:
            kept = sorted(kept, key=lambda k: scores[k], reverse=True)[:self.max_keys]
        kept_set = set(kept)
        return SaliencyResult(tuple(kept), scores, tuple(k for k in keys if k not in kept_set))

    def prune_state(self, *, state: State, saliency: SaliencyResult) -> State:
        if not saliency.kept_keys:
            return state
        d = state.to_dict()
        return State({k: d[k] for k in saliency.kept_keys if k in d})


class ProgressMonitor:
    """Goal progress by step: stuck when the last `patience` records vary by less than 0.01."""

    def __init__(self, patience: int = 5) -> None:
        self.patience = patience
        self._history: List[Tuple[int, float]] = []

    def record(self, step: int, progress: float) -> None:
        self._history.append((step, progress))

    @property
    def current_progress(self) -> float:
        return self._history[-1][1] if self._history else 0.0

    @property
    def is_stuck(self) -> bool:
        if len(self._history) < self.patience:
            return False
        recent = [p for _, p in self._history[-self.patience:]]
        return max(recent) - min(recent) < 0.01

    @property
    def progress_rate(self) -> float:
        """Progress per step over the last five records."""
        if len(self._history) < 2:
            return 0.0
        recent = self._history[-5:]
        return (recent[-1][1] - recent[0][1]) / max(recent[-1][0] - recent[0][0], 1)

    def estimated_steps_to_goal(self) -> Optional[int]:
        rate = self.progress_rate
        if rate <= 0:
            return None
        return max(1, int((1.0 - self.current_progress) / rate))

    def to_llm_text(self) -> str:
        parts = [f"Progress: {self.current_progress:.1%}"]
        if self.is_stuck:
            parts.append(f"⚠ STUCK: No progress in last {self.patience} steps")
        rate = self.progress_rate
        if rate > 0:
            parts.append(f"Rate: {rate:.3f}/step, ~{self.estimated_steps_to_goal()} steps to "
                         "completion")
        return " | ".join(parts)


class TerminationReason(enum.Enum):
    """Why a run stopped (`ExecutionResult.termination_reason`). A member also equals its name
    as a string (`TerminationReason.STUCK == "STUCK"`), this package's earlier form."""

    GOAL_ACHIEVED = "goal_achieved"
    BUDGET_EXHAUSTED = "budget_exhausted"
    STEP_LIMIT = "step_limit"
    LLM_STOP = "llm_requested_stop"
    STUCK = "stuck_detected"
    MAX_FAILURES = "max_consecutive_failures"
    ERROR = "unrecoverable_error"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self.name
        return self is other

    __hash__ = enum.Enum.__hash__


class OutcomeType(enum.Enum):
    SUCCESS = enum.auto()
    PARTIAL = enum.auto()
    FAILURE = enum.auto()
    UNEXPECTED = enum.auto()


@dataclass(frozen=True)
class ReasoningOutcome:
    """The Python ClampAI's `Outcome(action_id, outcome_type, actual_state, expected_state,
    details="")`: what an action did against what was expected (`clampai.Outcome(...)` with
    these arguments makes one)."""

    action_id: str
    outcome_type: OutcomeType
    actual_state: State
    expected_state: State
    details: str = ""

    @property
    def succeeded(self) -> bool:
        return self.outcome_type == OutcomeType.SUCCESS

    @property
    def state_matches_expected(self) -> bool:
        return self.actual_state == self.expected_state


class _OutcomeType(type):
    """`Outcome`'s metaclass: a call makes the Python ClampAI's record (`ReasoningOutcome`);
    both it and the kernel's `Outcome` (`_clampai.Outcome`, made by `execute` only) are
    instances of `Outcome`."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:
            raise TypeError("Outcome(action_id, outcome_type, actual_state, expected_state, "
                            "details='') records an observation; the kernel's outcomes are "
                            "made by SafetyKernel.execute only")
        return ReasoningOutcome(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, (_clampai.Outcome, ReasoningOutcome))

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, (_clampai.Outcome, ReasoningOutcome))


class Outcome(metaclass=_OutcomeType):
    """What an action did. The kernel's (`SafetyKernel.execute` in the task form):
    `approved`, `decision`, `receipt`, `state`. The Python ClampAI's, made by calling
    `Outcome(action_id, outcome_type, actual_state, expected_state, details="")`: a
    `ReasoningOutcome` (`succeeded`, `state_matches_expected`). `isinstance` is true for both."""


class LLMAdapter(Protocol):
    """An LLM backend: `complete` returns the model's whole answer to `prompt`;
    `stream_tokens`, when given, may be called with fragments as they arrive (the kernel only
    ever reads the whole answer). `acomplete` is the optional async form. The Orchestrator asks
    for `{"action": ID, "params": {...}}` or `{"stop": true}` and parses the answer itself."""

    def complete(self, prompt: str, system_prompt: str = "", *, temperature: float = 0.3,
                 max_tokens: int = 2000,
                 stream_tokens: Optional[Callable[[str], None]] = None) -> str: ...

    def acomplete(self, prompt: str, system_prompt: str = "", *, temperature: float = 0.3,
                  max_tokens: int = 2000,
                  stream_tokens: Optional[Callable[[str], None]] = None) -> Any: ...


class MockLLMAdapter:
    """A deterministic LLM for tests: from a `ReasoningRequest` prompt it chooses the first
    READY action it has not chosen yet (else the first READY one), and stops when the progress
    reads 100.0% or nothing is READY. Given to the `Orchestrator`, it is the C++ loop's own
    deterministic mock (clampai::agent::MockLlm), which speaks that loop's prompt."""

    def __init__(self) -> None:
        self._call_count = 0
        self._seen: Set[str] = set()

    def complete(self, prompt: str, system_prompt: str = "", *, temperature: float = 0.3,
                 max_tokens: int = 2000,
                 stream_tokens: Optional[Callable[[str], None]] = None) -> str:
        self._call_count += 1
        ready = [line.split("(id=", 1)[1].split(")", 1)[0] for line in prompt.split("\n")
                 if "[READY]" in line and "(id=" in line]
        if "100.0%" in prompt:
            return self._stop("Goal achieved")
        if not ready:
            return self._stop("No actions available")
        choice = next((a for a in ready if a not in self._seen), ready[0])
        self._seen.add(choice)
        return json.dumps({"chosen_action_id": choice, "reasoning": f"Selected action {choice}",
                           "expected_outcome": "Progress", "risk_assessment": "Acceptable",
                           "alternative_considered": ready[1] if len(ready) > 1 else "None",
                           "should_stop": False, "stop_reason": ""})

    async def acomplete(self, prompt: str, system_prompt: str = "", *, temperature: float = 0.3,
                        max_tokens: int = 2000,
                        stream_tokens: Optional[Callable[[str], None]] = None) -> str:
        return self.complete(prompt, system_prompt, temperature=temperature,
                             max_tokens=max_tokens, stream_tokens=stream_tokens)

    @staticmethod
    def _stop(reason: str) -> str:
        return json.dumps({"chosen_action_id": "", "reasoning": reason, "expected_outcome": "",
                           "risk_assessment": "", "alternative_considered": "",
                           "should_stop": True, "stop_reason": reason})


# --- Prompt helpers (the Python ClampAI's `clampai.reasoning` functions) ----------------------

def estimate_tokens(text: str) -> int:
    """A rough token count when the backend reports none: a token per four characters (at
    least one for non-empty text)."""
    return max(1, len(text) // 4) if text else 0


def compute_state_delta(prev: Any, curr: Any) -> Dict[str, Dict[str, Any]]:
    """What changed from `prev` to `curr` (States or mappings): {"added", "removed",
    "changed"}, each variable -> its value (the current one; the removed one's last)."""
    before = prev.to_dict() if hasattr(prev, "to_dict") else dict(prev or {})
    after = curr.to_dict() if hasattr(curr, "to_dict") else dict(curr or {})
    return {"added": {k: v for k, v in after.items() if k not in before},
            "removed": {k: v for k, v in before.items() if k not in after},
            "changed": {k: v for k, v in after.items() if k in before and before[k] != v}}


def should_skip_llm(action_values: List[ActionValue], min_gap: float = 0.15,
                    min_abs_value: float = 0.05) -> bool:
    """True when asking the LLM cannot change the choice: at most one option, or the best
    value is at least `min_abs_value` and leads the runner-up by `min_gap` or more."""
    if len(action_values) < 2:
        return True
    best, second = sorted((a.value_score for a in action_values), reverse=True)[:2]
    return best >= min_abs_value and best - second >= min_gap


def integral_sensitivity_filter(state: Any, action_values: List[ActionValue], *,
                                sensitivity_threshold: float = 0.05, max_state_keys: int = 20,
                                actions: Optional[List[Any]] = None
                                ) -> Tuple[State, Dict[str, float]]:
    """The state pruned for a prompt, and each variable's sensitivity
    S(k) = sum over actions a that write k of |V(a)|. Only the prompt is pruned, never the
    state the kernel decides on. Variables whose name starts with `_` are always kept (their
    score is infinite); the others are kept when S(k) >= `sensitivity_threshold`, at most
    `max_state_keys` by score, and never none (then the first `max_state_keys`).

    `actions` (this package's addition: the ActionSpecs the values are of) says which variables
    each action writes; without it no action is known to write anything, as in the Python
    ClampAI, so only the `_` variables score."""
    variables = state.to_dict() if hasattr(state, "to_dict") else dict(state)
    if not variables:
        return (state if isinstance(state, State) else State({})), {}
    writes: Dict[str, Set[str]] = {}
    for a in actions or ():
        writes[a.id] = {e.variable for e in getattr(a, "effects", ())}
    scores: Dict[str, float] = {k: (math.inf if k.startswith("_") else 0.0) for k in variables}
    for value in action_values:
        for k in writes.get(value.action_id, ()):
            if k in scores and not math.isinf(scores[k]):
                scores[k] += abs(value.value_score)
    kept = [k for k in variables if scores[k] >= sensitivity_threshold]
    if len(kept) > max_state_keys:
        kept = sorted(kept, key=lambda k: scores[k], reverse=True)[:max_state_keys]
    if not kept:
        kept = list(variables)[:max_state_keys]
    return State({k: variables[k] for k in kept}), scores
