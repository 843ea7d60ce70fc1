"""The Python ClampAI's reasoning layer in its own documented style (issue 38): its docstrings'
and docs/API.md's uses of these names, unchanged but for the import line, then where this
package answers differently (docs/PYTHON.md, "Where the reasoning layer differs")."""

import asyncio
import json
import math

import pytest

import clampai
from clampai import (ActionSpec, ActionValue, ActionValueComputer, Belief, BeliefState,
                     CausalGraph, ClampAI_SYSTEM_PROMPT, CostAwarePriorFactory, Dependency,
                     Effect, MockLLMAdapter, Orchestrator, Outcome, OutcomeType,
                     ProgressMonitor, ReasoningRequest, ReasoningResponse, SafetyKernel,
                     SaliencyEngine, SaliencyResult, State, TerminationReason,
                     parse_llm_response)
from conftest import quickstart_task


def action(id, cost, risk_level="low", reversible=True, affects=("n",)):
    return ActionSpec(id=id, name=id.title(), description=f"does {id}", cost=cost,
                      effects=tuple(Effect(k, "increment", 1) for k in affects),
                      risk_level=risk_level, reversible=reversible)


# --- Beliefs ---------------------------------------------------------------------------------

def test_belief_is_a_beta_posterior_updated_by_bayes_rule():
    b = Belief()
    assert (b.alpha, b.beta, b.decay) == (1.0, 1.0, 1.0) and b.mean == 0.5
    after = b.observe(True).observe(True).observe(False)
    assert (after.alpha, after.beta) == (3.0, 2.0) and (b.alpha, b.beta) == (1.0, 1.0)
    assert after.mean == pytest.approx(0.6)
    assert after.variance == pytest.approx(3 * 2 / (25 * 6))
    assert after.std == pytest.approx(math.sqrt(after.variance))
    assert after.confidence == pytest.approx(1 - 1 / 1.3)
    assert after.pessimistic_bound() == pytest.approx(0.6 - 1.645 * after.std)
    assert after.optimistic_bound(0.90) == pytest.approx(0.6 + 1.28 * after.std)
    assert after.optimistic_bound(0.99) == 1.0  # clamped
    assert Belief(1, 1000).pessimistic_bound() == 0.0 and Belief(1000, 1).optimistic_bound() == 1
    assert repr(after) == "Belief(mean=0.600, α=3.0, β=2.0)"


def test_decay_pulls_old_evidence_toward_the_uniform_prior():
    b = Belief(11.0, 1.0, decay=0.5).observe(False)
    assert (b.alpha, b.beta, b.decay) == (6.0, 2.0, 0.5)  # 1 + 10 * 0.5, then the failure
    assert repr(b) == "Belief(mean=0.750, α=6.0, β=2.0, decay=0.5)"


def test_kl_divergence_from_uniform():
    # The Python ClampAI imports math.digamma, which does not exist: ImportError there.
    assert Belief().kl_divergence_from_uniform() == 0.0
    # KL(Beta(5, 2) || U) = ln 30 - 4 (1/5 + 1/6) - (1/2 + 1/3 + 1/4 + 1/5 + 1/6)
    exact = math.log(30) - 4 * (1 / 5 + 1 / 6) - (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6)
    assert Belief(5, 2).kl_divergence_from_uniform() == pytest.approx(exact, abs=1e-12)


def test_a_belief_needs_positive_parameters_and_a_decay_in_0_1():
    for alpha, beta in ((0, 1), (1, -1), (math.nan, 1), (1, math.inf)):
        with pytest.raises(ValueError, match="positive, finite"):
            Belief(alpha, beta)
    for decay in (0.0, 1.5, -1):
        with pytest.raises(ValueError, match="decay"):
            Belief(1, 1, decay)


def test_belief_state_tracks_propositions_by_key():
    beliefs = BeliefState()
    assert beliefs.to_llm_text() == "  (no observations yet)"
    assert beliefs.get("resource:db:available").mean == 0.5  # uniform prior
    for ok in (True, True, True, False):
        beliefs.observe("action:deploy:succeeds", ok)
    beliefs.set_prior("goal:website_built", 1.0, 19.0)
    all_ = beliefs.all_beliefs()
    assert set(all_) == {"resource:db:available", "action:deploy:succeeds", "goal:website_built"}
    assert (all_["action:deploy:succeeds"].alpha, all_["action:deploy:succeeds"].beta) == (4, 2)
    summary = beliefs.summary(top_n=2).splitlines()
    assert summary[0] == "Beliefs (highest uncertainty first):"
    assert summary[1] == "  resource:db:available: 0.500 ± 0.289 (n=0)" and len(summary) == 3
    assert "  goal:website_built: 5.0% likely (medium confidence)" in beliefs.to_llm_text()


# --- The dependency graph ----------------------------------------------------------------------

def test_causal_graph_orders_actions():
    g = CausalGraph()
    g.add_action("provision")
    g.add_action("configure", depends_on=[("provision", "needs a server")])
    g.add_action("deploy", depends_on=[("configure", "needs config"), ("provision", "host")])
    assert g.can_execute("deploy") == (False, ["configure", "provision"])
    assert g.can_execute("unknown") == (True, [])
    assert g.ready_actions(["deploy", "configure", "provision"]) == ["provision"]
    assert not g.has_cycle()
    assert Dependency("provision", "needs a server") == Dependency("provision", "needs a server")
    g.mark_completed("provision")
    assert g.ready_actions(["deploy", "configure"]) == ["configure"]
    assert g.to_llm_text().splitlines() == [
        "Action Dependencies:",
        "  configure [pending] depends on: provision",
        "  deploy [pending] depends on: configure, provision",
        "  provision [done] depends on: nothing"]


def test_the_critical_path_is_the_chain_to_run():
    # The Python ClampAI's BFS never returns the path it finds: [] for every target. Here: the
    # longest chain, whose order runs (the direct a -> d would leave c undone).
    g = CausalGraph()
    g.add_action("a")
    g.add_action("b", [("a", "")])
    g.add_action("c", [("b", "")])
    g.add_action("d", [("c", ""), ("a", "")])
    assert g.critical_path("d") == ["a", "b", "c", "d"]
    assert g.critical_path("a") == ["a"]
    g.mark_completed("a")
    g.mark_completed("b")
    assert g.critical_path("d") == ["c", "d"]
    g.mark_completed("d")
    assert g.critical_path("d") == []


def test_a_cycle_is_found():
    g = CausalGraph()
    g.add_action("x", [("y", "")])
    g.add_action("y", [("z", "")])
    g.add_action("z", [("x", "")])
    assert g.has_cycle()
    assert g.critical_path("x") == []  # no chain starts with a ready action


# --- Values and priors ---------------------------------------------------------------------------

def test_action_value_computer():
    beliefs = BeliefState()
    a = action("deploy", 10.0, risk_level="medium")
    v = ActionValueComputer(risk_aversion=2.0).compute(
        a, State({"n": 0}), beliefs, budget_remaining=20.0, goal_progress=0.5, steps_remaining=2)
    assert isinstance(v, ActionValue) and v.action_id == "deploy" and v.cost == 10.0
    assert v.expected_progress == pytest.approx(0.25)
    assert v.information_gain == pytest.approx(4 / 12)
    assert v.risk == pytest.approx(0.15 * 2.0)
    assert v.opportunity_cost == pytest.approx(0.25)
    assert v.value_score == pytest.approx(0.5 + 0.5 * 4 / 12 - 0.5 - 2.0 * 0.3 - 0.125)
    assert v.reasoning_hint == "high learning opportunity; expensive relative to budget; " \
                               "elevated risk"
    assert v.to_llm_text().startswith("  [deploy] value=")
    cheap = ActionValueComputer().compute(action("x", 0.01), State({}), BeliefState(), 100, 0, 10)
    from decimal import Decimal  # this project's kernel reads amounts back as Decimals
    exact = ActionValueComputer(risk_aversion=2.0).compute(
        a, State({"n": 0}), beliefs, Decimal("20.000"), Decimal("0.5"), 2)
    assert exact.value_score == pytest.approx(v.value_score)
    assert cheap.reasoning_hint == "high learning opportunity"


def test_cost_aware_priors():
    f = CostAwarePriorFactory(100.0)
    cheap, moderate = action("ls", 1.0), action("build", 5.0)
    expensive, huge = action("deploy", 20.0), action("migrate", 50.0)
    wipe = action("wipe", 1.0, risk_level="critical", reversible=False)
    assert f.compute_prior(cheap) == (3.0, 1.0, "EXPLORE")
    assert f.compute_prior(moderate) == (2.0, pytest.approx(1.125), "CAUTIOUS")
    assert f.compute_prior(expensive) == (1.0, pytest.approx(2.0), "GUARDED")
    assert f.compute_prior(huge) == (0.01, 100.0, "GATED")
    assert f.compute_prior(wipe)[2] == "GATED"
    f.authorize("migrate")
    assert f.compute_prior(huge) == (1.0, pytest.approx(3.5), "GATED_AUTHORIZED")
    prior = f.create_prior(expensive)  # docs/API.md: .create_prior(action) -> Belief
    assert isinstance(prior, Belief) and prior.mean == pytest.approx(1 / 3)
    beliefs = BeliefState()
    tiers = f.initialize_beliefs(beliefs, [cheap, wipe])
    assert tiers == {"ls": "EXPLORE", "wipe": "GATED"}
    assert beliefs.get("action:wipe:succeeds").mean < 0.001
    assert "  ls: [EXPLORE] $1.00 → Beta(3.0,1.0) μ=0.750" in f.summary([cheap])


# --- The prompt and its answer ---------------------------------------------------------------

def request(history=""):
    kernel = SafetyKernel(budget=50.0, invariants=[])
    actions = [action("fetch", 1.0), action("publish", 5.0, affects=("published",))]
    graph = CausalGraph()
    graph.add_action("fetch")
    graph.add_action("publish", [("fetch", "needs the data")])
    beliefs = BeliefState()
    values = [ActionValueComputer().compute(a, State({}), beliefs, 50.0, 0.0, 5) for a in actions]
    return ReasoningRequest("publish the data", State({"n": 0, "published": 0}), actions, values,
                            beliefs, graph, kernel, history_summary=history)


def test_reasoning_request_prompt():
    prompt = request("step 1: nothing").to_prompt()
    assert prompt.startswith("## MISSION\nGoal: publish the data\nCurrent Progress: 0.0%\n")
    assert "Steps: 0/" in prompt
    assert "### [READY] Fetch (id=fetch)" in prompt
    assert "### [BLOCKED] Publish (id=publish)" in prompt and "⚠ BLOCKED by: fetch" in prompt
    assert prompt.index("(id=fetch)") < prompt.index("(id=publish)")  # ranked by value
    assert "## RECENT HISTORY\nstep 1: nothing" in prompt
    assert '"chosen_action_id"' in prompt and '"should_stop"' in prompt
    assert "## RECENT HISTORY" not in request().to_prompt()


def test_the_prompt_of_this_projects_kernel():
    kernel = SafetyKernel(quickstart_task())
    req = request()
    prompt = ReasoningRequest(req.goal, kernel.state, req.available_actions, req.action_values,
                              req.beliefs, req.causal_graph, kernel).to_prompt()
    assert f"Steps: 0/{kernel.max_steps}" in prompt and "processed" in prompt


def test_the_mock_adapter_chooses_novel_ready_actions():
    llm = MockLLMAdapter()
    prompt = request().to_prompt()
    first = parse_llm_response(llm.complete(prompt), {"fetch", "publish"})
    assert first.is_valid and first.chosen_action_id == "fetch" and not first.should_stop
    again = parse_llm_response(llm.complete(prompt, "sys", temperature=0.0), {"fetch"})
    assert again.chosen_action_id == "fetch"  # no other READY action
    stop = parse_llm_response(llm.complete("Current Progress: 100.0%"), set())
    assert stop.should_stop and stop.stop_reason == "Goal achieved" and stop.is_valid
    none = json.loads(asyncio.run(llm.acomplete("nothing ready")))
    assert none["should_stop"] and none["stop_reason"] == "No actions available"
    assert "JSON" in ClampAI_SYSTEM_PROMPT and "READY" in ClampAI_SYSTEM_PROMPT


def test_the_mock_adapter_drives_the_orchestrator():
    # The loop's own deterministic mock: no LLM failures, the goal reached.
    result = Orchestrator(quickstart_task(), llm=MockLLMAdapter()).run()
    assert result.goal_achieved and result.errors == []
    assert result.termination_reason is TerminationReason.GOAL_ACHIEVED
    assert result.termination_reason == "GOAL_ACHIEVED"  # this package's earlier form
    assert result.to_dict()["termination_reason"] == "GOAL_ACHIEVED"


def test_parse_llm_response():
    raw = ('Here is my answer:\n```json\n{"chosen_action_id": "fetch", "reasoning": "cheap",'
           ' "expected_outcome": "data", "risk_assessment": "none", '
           '"alternative_considered": "publish", "should_stop": false, "stop_reason": ""}\n```')
    r = parse_llm_response(raw, {"fetch", "publish"})
    assert isinstance(r, ReasoningResponse) and r.is_valid and r.raw_response == raw
    assert (r.chosen_action_id, r.reasoning, r.alternative_considered) == \
        ("fetch", "cheap", "publish")
    bad = parse_llm_response('{"chosen_action_id": "rm_rf"}', {"fetch"})
    assert not bad.is_valid and bad.parse_errors == ["Invalid action_id 'rm_rf'. Valid: ['fetch']"]
    junk = parse_llm_response("I think we should fetch.", {"fetch"})
    assert not junk.is_valid and junk.reasoning == "PARSE FAILED" and junk.parse_errors


@pytest.mark.parametrize("raw, error", [
    # The Python ClampAI reads bool("false"), which is True: a stop nobody asked for.
    ('{"chosen_action_id": "fetch", "should_stop": "false"}', "should_stop must be true or false"),
    # Two choices (one injected in a quoted document): refused, not the outermost braces' guess.
    ('{"chosen_action_id": "fetch"} and {"chosen_action_id": "publish"}', "ambiguous"),
    ('[1, 2]', "no JSON object"),  # the Python ClampAI raises AttributeError
    ('{"chosen_action_id": 7}', "must be a string"),
    ('{' * 100_000, "no JSON object"),
    ('{"a": ' * 100_000, "no JSON object"),  # too deep for any parser: refused, not raised
    ('{"chosen_action_id": "fetch", "reasoning": "' + "x" * 70_000 + '"}', "no JSON object"),
    ('', "no JSON object"),
])
def test_parse_llm_response_refuses_what_is_not_one_clear_choice(raw, error):
    r = parse_llm_response(raw, {"fetch", "publish"})
    assert not r.is_valid and any(error in e for e in r.parse_errors), r.parse_errors


def test_parse_llm_response_ignores_invisible_characters():
    raw = '{"chosen_action_id": "fe\u200btch\u202e", "should_stop": false}\x00'
    r = parse_llm_response(raw, {"fetch"})
    assert r.is_valid and r.chosen_action_id == "fetch"
    lone = parse_llm_response('\ud800{"chosen_action_id": "fetch", "should_stop": null}',
                              {"fetch"})
    assert lone.is_valid and lone.chosen_action_id == "fetch"  # no UnicodeEncodeError
    same = parse_llm_response('{"chosen_action_id": "fetch"} {"chosen_action_id": "fetch"}',
                              {"fetch"})
    assert same.is_valid  # repeated, not conflicting


# --- Saliency, progress, outcomes ------------------------------------------------------------

def test_saliency_engine_keeps_what_offered_actions_write():
    state = State({"n": 0, "published": 0, "unrelated": 1, "_meta": 2})
    actions = [action("a", 1.0, affects=("n",)), action("b", 1.0, affects=("published",))]
    values = [ActionValue("a", 0, 0, 1, 0, 0, 0.5, ""), ActionValue("b", 0, 0, 1, 0, 0, -0.01, "")]
    engine = SaliencyEngine(threshold=0.05, max_keys=20)
    res = engine.analyze(state=state, available_actions=actions, action_values=values)
    assert isinstance(res, SaliencyResult)
    assert res.kept_keys == ("_meta", "n") and res.dropped_keys == ("published", "unrelated")
    assert res.scores["n"] == 0.5 and res.scores["_meta"] == math.inf
    assert engine.prune_state(state=state, saliency=res) == State({"n": 0, "_meta": 2})
    everything = SaliencyEngine(threshold=0).analyze(state=state, available_actions=actions,
                                                    action_values=values)
    assert everything.kept_keys == ("_meta", "n", "published", "unrelated")

    class Jacobian:
        def compute_jacobian(self, s):
            return type("Report", (), {"critical_variables": ["unrelated"]})()

    forced = SaliencyEngine(max_keys=2, jacobian_fusion=Jacobian()).analyze(
        state=state, available_actions=actions, action_values=values)
    assert set(forced.kept_keys) == {"unrelated", "_meta"}


def test_progress_monitor_detects_stuck():
    m = ProgressMonitor(patience=3)
    assert m.current_progress == 0.0 and not m.is_stuck and m.estimated_steps_to_goal() is None
    for step, p in enumerate([0.0, 0.125, 0.25]):
        m.record(step, p)
    assert m.progress_rate == 0.125 and m.estimated_steps_to_goal() == 6
    assert m.to_llm_text() == "Progress: 25.0% | Rate: 0.125/step, ~6 steps to completion"
    for step in (3, 4, 5):
        m.record(step, 0.25)
    assert m.is_stuck
    # The Python ClampAI prints the braces: "No progress in last {self.patience} steps".
    assert m.to_llm_text() == ("Progress: 25.0% | ⚠ STUCK: No progress in last 3 steps | "
                               "Rate: 0.031/step, ~24 steps to completion")


def test_termination_reasons_and_outcomes():
    assert TerminationReason.LLM_STOP.value == "llm_requested_stop"
    assert [t.name for t in TerminationReason] == [
        "GOAL_ACHIEVED", "BUDGET_EXHAUSTED", "STEP_LIMIT", "LLM_STOP", "STUCK", "MAX_FAILURES",
        "ERROR"]
    assert [t.name for t in OutcomeType] == ["SUCCESS", "PARTIAL", "FAILURE", "UNEXPECTED"]
    s = State({"n": 1})
    o = Outcome("inc", OutcomeType.SUCCESS, actual_state=s, expected_state=State({"n": 1}))
    assert o.succeeded and o.state_matches_expected and o.details == ""
    assert isinstance(o, Outcome)
    p = Outcome("inc", OutcomeType.PARTIAL, s, State({"n": 2}), "half")
    assert not p.succeeded and not p.state_matches_expected
    with pytest.raises(Exception):
        o.details = "changed"  # frozen
    # The kernel's outcome is an Outcome too.
    kernel = SafetyKernel(quickstart_task())
    out = kernel.execute("process_batch")
    assert isinstance(out, Outcome) and out.approved
    with pytest.raises(TypeError):
        Outcome()


def test_llm_adapter_is_a_protocol():
    class Echo:
        def complete(self, prompt, system_prompt="", *, temperature=0.3, max_tokens=2000,
                     stream_tokens=None):
            return prompt

    class Mine(clampai.LLMAdapter):
        def complete(self, prompt, system_prompt="", *, temperature=0.3, max_tokens=2000,
                     stream_tokens=None):
            return '{"stop": true}'

    assert Echo().complete("x") == "x"
    result = Orchestrator(quickstart_task(), llm=Mine()).run()
    assert result.termination_reason is TerminationReason.LLM_STOP


def test_the_reasoning_modules_prompt_helpers():
    from clampai.reasoning import (ActionValue, CausalNode, Dependency, compute_state_delta,
                                   estimate_tokens, integral_sensitivity_filter,
                                   should_skip_llm)
    from clampai import ActionSpec, Effect, State

    assert estimate_tokens("") == 0 and estimate_tokens("abc") == 1
    assert estimate_tokens("x" * 400) == 100
    delta = compute_state_delta(State({"a": 1, "b": 2, "c": 3}), State({"a": 1, "b": 5, "d": 4}))
    assert delta == {"added": {"d": 4}, "removed": {"c": 3}, "changed": {"b": 5}}

    def value(aid, v):
        return ActionValue(aid, 0.0, 0.0, 0.0, 0.0, 0.0, v, "")

    assert should_skip_llm([]) and should_skip_llm([value("a", 0.0)])
    assert should_skip_llm([value("a", 0.5), value("b", 0.3)])       # leads by 0.2
    assert not should_skip_llm([value("a", 0.5), value("b", 0.4)])   # by 0.1 only
    assert not should_skip_llm([value("a", 0.04), value("b", -0.5)])  # too small to trust

    state = State({"_meta": 1, "files": 0, "noise": 7, "cost": 0})
    actions = [ActionSpec(id="write", effects=(Effect("files", "increment", 1),), cost=1),
               ActionSpec(id="pay", effects=(Effect("cost", "increment", 1),), cost=1)]
    pruned, scores = integral_sensitivity_filter(
        state, [value("write", 0.5), value("pay", -0.01)], actions=actions)
    assert set(pruned.keys()) == {"_meta", "files"}
    assert scores["files"] == 0.5 and scores["cost"] == 0.01 and scores["noise"] == 0.0
    # Without the actions, as in the Python ClampAI: only `_` variables score.
    pruned, _ = integral_sensitivity_filter(state, [value("write", 0.5)])
    assert set(pruned.keys()) == {"_meta"}
    pruned, _ = integral_sensitivity_filter(State({"a": 1, "b": 2}), [], max_state_keys=1)
    assert set(pruned.keys()) == {"a"}  # never pruned to nothing

    node = CausalNode("deploy", (Dependency("test", "tests first"),))
    assert node.dependencies[0].required_action_id == "test" and not node.is_completed
