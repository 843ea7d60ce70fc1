# The quick start of the Python ClampAI's README, unchanged but for the import line (`constrai`
# -> `clampai`). python/tests/test_orchestrator.py runs it and checks that it is that text.
from clampai import TaskDefinition, State, ActionSpec, Effect, Invariant, Orchestrator

task = TaskDefinition(
    goal="Process 10 records",
    initial_state=State({"processed": 0, "errors": 0}),
    available_actions=[
        ActionSpec(
            id="process_batch",
            name="Process Batch",
            description="Process the next 5 records",
            effects=(
                Effect("processed", "increment", 5),
            ),
            cost=2.0,
            reversible=True,
        ),
    ],
    invariants=[
        Invariant(
            "max_errors",
            lambda s: s.get("errors", 0) <= 3,
            description="Abort if error rate is too high",
            enforcement="blocking",
        ),
    ],
    budget=20.0,
    goal_predicate=lambda s: s.get("processed", 0) >= 10,
)

engine = Orchestrator(task)
result = engine.run()
print(result.summary())
