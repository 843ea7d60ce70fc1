"""The seed's Orchestrator over the C++ agent loop: the seed README's quick start, unchanged
but for its import line, and the `llm=` protocol with Python adapters."""

import json
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

import clampai
from clampai import Orchestrator
from conftest import SOURCE_DIR, quickstart_task

QUICKSTART = SOURCE_DIR / "examples" / "python" / "quickstart.py"
SEED = Path("/work/shared/seeds/002_ad6ed3d676b23206.txt")


def test_the_seed_quickstart_is_the_seed_text_but_for_the_import():
    code = QUICKSTART.read_text()
    body = "".join(line for line in code.splitlines(keepends=True) if not line.startswith("# "))
    assert body.startswith("from clampai import TaskDefinition, State, ActionSpec, Effect, "
                           "Invariant, Orchestrator\n")
    if SEED.exists():  # the seed documents live beside the repository on this machine
        seed = SEED.read_text()
        block = re.search(r"## Quick start\n\n```python\n(.*?)```", seed, re.S).group(1)
        assert body == block.replace("from constrai import", "from clampai import", 1)


def test_the_seed_quickstart_runs_and_reaches_its_goal():
    result = subprocess.run([sys.executable, str(QUICKSTART)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Goal achieved: yes (GOAL_ACHIEVED" in result.stdout
    assert "'processed': 10" in result.stdout and "Cost: 4.000 of 20.000" in result.stdout


def test_the_mock_is_used_without_an_llm():
    result = Orchestrator(quickstart_task()).run()
    assert result.goal_achieved and result.termination_reason == "GOAL_ACHIEVED"
    assert result.final_state["processed"] == 10 and result.final_state["errors"] <= 3
    assert result.total_steps == result.actions_succeeded >= 2 and result.errors == []
    assert result.total_cost == 2 * Decimal("2.000") + result.final_state["errors"] // 2
    assert json.loads(json.dumps(result.to_dict()))["final_state"] == result.final_state.to_dict()
    assert "GOAL_ACHIEVED" in repr(result) and "Goal achieved: yes" in result.summary()


class ScriptedLLM:
    """The seed's protocol: complete(prompt, system_prompt, temperature, max_tokens) -> str."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.prompts = []

    def complete(self, prompt, system_prompt="", temperature=0.3, max_tokens=2000):
        self.prompts.append((prompt, system_prompt, temperature, max_tokens))
        answer = self.answers.pop(0) if self.answers else '{"action": "process_batch"}'
        if isinstance(answer, BaseException):
            raise answer
        return answer


def many_actions_task():
    # Two comparable actions, so that the LLM is asked (no dominant choice).
    from clampai import ActionSpec, Effect
    return quickstart_task(available_actions=[
        ActionSpec(id="process_batch", effects=(Effect("processed", "increment", 5),), cost=2.0),
        ActionSpec(id="process_small", effects=(Effect("processed", "increment", 4),), cost=2.0),
        ActionSpec(id="fail", effects=(Effect("errors", "increment", 4),), cost=1.0),
    ])


def test_a_python_adapter_is_asked_and_its_failures_fall_back():
    llm = ScriptedLLM([ValueError("rate limited"), "no json here", '{"action": "nope"}',
                       '{"action": "fail"}'])
    result = Orchestrator(many_actions_task(), llm=llm).run()
    assert result.llm_calls == len(llm.prompts) >= 1
    prompt, system, temperature, max_tokens = llm.prompts[0]
    assert "process_batch" in prompt and "JSON" in system and max_tokens > 0
    assert result.goal_achieved
    # `fail` would break the invariant: never committed, whatever the LLM says.
    assert result.final_state["errors"] == 0
    assert any("rate limited" in e for e in result.errors)


def test_an_llm_can_stop_the_run_and_a_bad_adapter_is_refused():
    result = Orchestrator(many_actions_task(), llm=ScriptedLLM(['{"stop": true}'])).run()
    assert result.termination_reason == "LLM_STOP" and not result.goal_achieved
    with pytest.raises(TypeError, match="complete"):
        Orchestrator(quickstart_task(), llm=object())
