# `clampai agent` as a user meets it: the mock LLM (no network), exit codes and messages.
# Invoked by ctest with -DCLAMPAI=<binary> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(ex "${SOURCE_DIR}/examples")
set(noenv ${CMAKE_COMMAND} -E env --unset=ANTHROPIC_API_KEY --unset=OPENAI_API_KEY)

foreach(spec quickstart cloud_deploy payments autoscale agent_release)
  expect("agent ${spec}" 0 "result: goal reached" ${noenv} ${CLAMPAI} agent ${ex}/${spec}.json --llm mock)
endforeach()
expect("agent json" 0 "\"failures\": \\{[^}]*\"unknown_action\": 0.*\"termination\": \"goal_reached\"" ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --format json)
expect("agent trace" 0 "chain verified, written to" ${CLAMPAI} agent ${ex}/agent_release.json --llm mock --trace ${WORK_DIR}/release.jsonl)
expect("agent trace verifies and replays" 0 "ok: .*replays" ${CLAMPAI} trace verify ${WORK_DIR}/release.jsonl --spec ${ex}/agent_release.json)
expect("agent trace exists" 2 "exists" ${CLAMPAI} agent ${ex}/agent_release.json --llm mock --trace ${WORK_DIR}/release.jsonl)
expect("agent transcript" 0 "transcript  .*mock.jsonl" ${CLAMPAI} agent ${ex}/cloud_deploy.json --llm mock --transcript ${WORK_DIR}/mock.jsonl)
file(READ ${WORK_DIR}/mock.jsonl transcript)
if(NOT transcript MATCHES "^{\"answer\":{\"text\":\"\",\"tool_call\":{\"arguments\":{},\"name\":\"[a-z_]+\"}},\"call\":1,\"prompt\":\"GOAL: ")
  message(SEND_ERROR "agent transcript: unexpected content:\n${transcript}")
endif()
expect("agent lookahead" 0 "goal reached.*lookahead   3 steps" ${CLAMPAI} agent ${ex}/pressure_vessel.json --llm mock --lookahead 3)
expect("agent max-steps" 1 "goal NOT reached \\(step_limit: the run's limit of 1 steps\\)" ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --max-steps 1)
expect("agent quiet" 0 "" ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --quiet)

# Bad input: exit 2, before any network.
expect("agent unknown llm" 2 "--llm" ${CLAMPAI} agent ${ex}/quickstart.json --llm gpt)
expect("agent no llm" 2 "--llm" ${CLAMPAI} agent ${ex}/quickstart.json)
expect("agent missing anthropic key" 2 "ANTHROPIC_API_KEY is not set" ${noenv} ${CLAMPAI} agent ${ex}/quickstart.json --llm anthropic)
expect("agent missing openai key" 2 "OPENAI_API_KEY is not set" ${noenv} ${CLAMPAI} agent ${ex}/quickstart.json --llm openai --base-url http://127.0.0.1:9/v1)
expect("agent empty key" 2 "OPENAI_API_KEY is not set" ${CMAKE_COMMAND} -E env OPENAI_API_KEY= ${CLAMPAI} agent ${ex}/quickstart.json --llm openai)
expect("agent missing key json" 2 "\"error\"" ${noenv} ${CLAMPAI} agent ${ex}/quickstart.json --llm anthropic --format json)
# A bad base URL is refused by the adapter factory (not http(s)), with a key that is never shown.
expect("agent bad base url" 2 "" ${CMAKE_COMMAND} -E env OPENAI_API_KEY=sk-test-secret-123 ${CLAMPAI} agent ${ex}/quickstart.json --llm openai --base-url ftp://127.0.0.1/v1)
execute_process(COMMAND ${CMAKE_COMMAND} -E env OPENAI_API_KEY=sk-test-secret-123 ${CLAMPAI} agent ${ex}/quickstart.json --llm openai --base-url ftp://127.0.0.1/v1
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if("${out}${err}" MATCHES "sk-test-secret")
  message(SEND_ERROR "agent printed the API key:\n${out}${err}")
endif()
expect("agent mock with a model" 2 "mock" ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --model gpt-4o)
expect("agent missing spec" 2 "cannot read" ${CLAMPAI} agent ${WORK_DIR}/nope.json --llm mock)
file(WRITE ${WORK_DIR}/typo.json [=[{"variables": {"balance": {"type": "int", "initial": 0}},
 "actions": [{"id": "a", "cost": 1, "requires": "balnce > 0", "effects": []}],
 "budget": {"total": 1, "min_action_cost": 1}}]=])
expect("agent bad spec" 2 "unknown variable `balnce`" ${noenv} ${CLAMPAI} agent ${WORK_DIR}/typo.json --llm anthropic)
expect("agent help" 0 "--transcript" ${CLAMPAI} agent --help)

# --shadow (issue 40): the mock's sends that the kernel rejects are followed, listed and marked
# in the log; the trace replays; without --shadow they are rejected.
file(WRITE ${WORK_DIR}/sends.json [=[{"name": "sends", "goal": "sent >= 20",
  "variables": {"balance": {"type": "int", "initial": 10, "min": -1000},
                "sent": {"type": "int", "initial": 0}},
  "actions": [{"id": "send", "cost": 1, "reversible": true,
               "effects": [{"variable": "balance", "mode": "decrement", "value": 4},
                           {"variable": "sent", "mode": "increment", "value": 4}]}],
  "invariants": [{"name": "solvent", "check": "balance >= 0"}],
  "budget": {"total": 25, "min_action_cost": 1}}]=])
expect("agent shadow" 0 "goal reached.*shadow      nothing enforced; 3 steps the kernel would have rejected\n +`send` \\(entry 3\\): invariant_violated" ${CLAMPAI} agent ${WORK_DIR}/sends.json --llm mock --shadow --trace ${WORK_DIR}/sends-shadow.jsonl)
expect("agent shadow trace replays" 0 "ok: .*replays through the kernel" ${CLAMPAI} trace verify ${WORK_DIR}/sends-shadow.jsonl --spec ${WORK_DIR}/sends.json)
expect("agent shadow json" 0 "\"approved\": true,[^}]*\"shadow\": \\{\n +\"approved\": false,\n +\"reasons\": \\[\n +\\{\n +\"code\": \"invariant_violated\".*\"would_be_rejected\": 3" ${CLAMPAI} agent ${WORK_DIR}/sends.json --llm mock --shadow --format json -q)
expect("agent enforcing" 1 "goal NOT reached.*rejections  invariant_violated 5" ${CLAMPAI} agent ${WORK_DIR}/sends.json --llm mock)
expect("agent shadow with a ledger" 2 "--shadow cannot be used with --ledger" ${CLAMPAI} agent ${WORK_DIR}/sends.json --llm mock --shadow --ledger memory:)
expect("agent shadow with approvals" 2 "--approvals cannot be used with --shadow" ${CLAMPAI} agent ${WORK_DIR}/sends.json --llm mock --shadow --approvals skip)
expect("agent shadow upstream" 2 "--upstream cannot be used with --shadow" ${CLAMPAI} agent ${WORK_DIR}/sends.json --llm mock --shadow --upstream -- /bin/true)
expect("agent help shadow" 0 "--shadow" ${CLAMPAI} agent --help)

# --llm-timeout-ms: its range, and not with the mock (the timeout itself: agent_llm_timeout.py).
expect("agent llm timeout zero" 2 "--llm-timeout-ms" ${CLAMPAI} agent ${ex}/quickstart.json --llm openai --llm-timeout-ms 0)
expect("agent llm timeout too long" 2 "--llm-timeout-ms" ${CLAMPAI} agent ${ex}/quickstart.json --llm openai --llm-timeout-ms 3600001)
expect("agent llm timeout with mock" 2 "--llm-timeout-ms" ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --llm-timeout-ms 1000)
expect("agent help llm timeout" 0 "--llm-timeout-ms" ${CLAMPAI} agent --help)
