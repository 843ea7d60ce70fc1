"""Shared fixtures: the source tree, the CLI, and the seed's quick-start task."""

import os
import sys
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("CLAMPAI_SOURCE_DIR", Path(__file__).resolve().parents[2]))
EXAMPLES = SOURCE_DIR / "examples"


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


def quickstart_task(**overrides):
    from clampai import ActionSpec, Effect, Invariant, State, TaskDefinition

    fields = dict(
        goal="Process 10 records",
        initial_state=State({"processed": 0, "errors": 0}),
        available_actions=[
            ActionSpec(id="process_batch", name="Process Batch",
                       description="Process the next 5 records",
                       effects=(Effect("processed", "increment", 5),), cost=2.0, reversible=True),
            ActionSpec(id="fail", effects=(Effect("errors", "increment", 2),), cost=1.0),
        ],
        invariants=[
            Invariant("max_errors", lambda s: s.get("errors", 0) <= 3,
                      description="Abort if error rate is too high", enforcement="blocking"),
        ],
        budget=20.0,
        goal_predicate=lambda s: s.get("processed", 0) >= 10,
    )
    fields.update(overrides)
    return TaskDefinition(**fields)


@pytest.fixture
def quickstart():
    return quickstart_task()
