# `clampai verify` and `check` on specs with security labels and the invariant library
# (issue 18): the downward flows as findings in every format (reports validated by expect), the pattern templates loaded with
# RE2 and reported as opaque; `clampai run` enforcing a spec's hardening sections through the
# reference monitor (attestations traced, the goal's gate, drift, readiness, the allowlist).
# Invoked by ctest like cli_tests.cmake.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(hd "${SOURCE_DIR}/tests/data/hardening")

expect("verify finds the downward flows" 1
  "REFUTED information flow: `leak_if` moves `api_key` \\(SECRET\\) to `public_flag` \\(PUBLIC\\) at actions\\[0\\]\\.effects\\[0\\]\\.value: if api_key > 10 then 1 else 0\nREFUTED information flow: `publish` moves `count` \\(INTERNAL\\) to `sink:public_log` \\(PUBLIC\\) at actions\\[2\\]\\.emits\\[0\\]\\.value: count\ninformation flow: 2 downward of 3 flows of labelled data"
  ${CLAMPAI} verify ${hd}/leaky.json)
expect("verify's summary counts the refuted flows, as its exit code does" 1
  "\nsummary: [0-9]+ obligations: [^\n]*; 2 information flows refuted \\("
  ${CLAMPAI} verify ${hd}/leaky.json)
expect("verify sarif names the flow at its action" 1
  "\"ruleId\": \"information-flow-downward\""
  ${CLAMPAI} verify ${hd}/leaky.json --format sarif)
expect("verify junit fails the flow" 1 "classname=\"verify.information_flow\""
  ${CLAMPAI} verify ${hd}/leaky.json --format junit)
expect("check loads pattern templates" 0 "ok: well-formed" ${CLAMPAI} check ${hd}/sealed.json)
expect("verify: no downward flow, the pattern invariant opaque" 3
  "UNKNOWN preservation:spend:no_pii_in_notes: opaque predicate: the `pii_pattern` template matches regular expressions \\(RE2\\).*information flow: 0 downward of 1 flows of labelled data"
  ${CLAMPAI} verify ${hd}/sealed.json)

# ---- clampai run with the reference monitor ----
set(allow --allow-program /usr/bin/true --allow-program /usr/bin/printf
          --allow-program /usr/bin/test)
expect("run: a spec's program not on the allowlist is refused" 2
  "gated.json: attestor `[a-z]+`: `/usr/bin/[a-z]+` is not in the allowlist \\(allow a program with --allow-program PATH\\)"
  ${CLAMPAI} run ${hd}/gated.json)
file(READ ${hd}/gated.json gated)
string(REPLACE "[\"/usr/bin/true\"]" "[\"/usr/bin/../bin/true\"]" dotdot "${gated}")
file(WRITE ${WORK_DIR}/dotdot.json "${dotdot}")
expect("run: a program named through `..` is refused with its resolved path" 2
  "attestor `smoke`: `/usr/bin/../bin/true` resolves to `/usr/bin/true`: give the resolved path"
  ${CLAMPAI} run ${WORK_DIR}/dotdot.json ${allow})
expect("run: an allowlisted program that is missing is named" 2
  "allowlist: `/nonexistent/clampai`"
  ${CLAMPAI} run ${hd}/gated.json --allow-program /nonexistent/clampai)
expect("run: the goal holds but an attestation fails: not reached" 1
  "result: goal NOT reached \\(goal_not_attested\\).*actions     deploy\n.*why         attestation_failed: the goal holds but its attestation `approved` failed: exit status 1"
  ${CLAMPAI} run ${hd}/gated.json ${allow} --trace ${WORK_DIR}/gated.jsonl)
file(READ ${WORK_DIR}/gated.jsonl gated_trace)
# The action's attestation before its execution, the goal's after it; shell metacharacters in
# an argument are inert text.
if(NOT gated_trace MATCHES "\"kind\":\"attested\"[^\n]*\"attestor\":\"smoke\"[^\n]*\"gate\":\"action\",\"passed\":true[^\n]*\n[^\n]*\"kind\":\"executed\"[^\n]*\n[^\n]*\"detail\":\"deployed=true; \\$\\(reboot\\) `id` \\| \\*\"[^\n]*\"gate\":\"goal\",\"passed\":true[^\n]*\n[^\n]*\"attestor\":\"approved\"[^\n]*\"passed\":false[^\n]*\n[^\n]*\"kind\":\"sealed\"")
  message(SEND_ERROR "run: the attestations are not traced in order:\n${gated_trace}")
endif()
expect("trace verify: attested entries chain and replay" 0
  "ok: .*gated.jsonl: 6 entries, chain intact, sealed; replays through the kernel to the sealed state"
  ${CLAMPAI} trace verify ${WORK_DIR}/gated.jsonl --spec ${hd}/gated.json)
string(REPLACE "\"passed\":false" "\"passed\":true" forged "${gated_trace}")
file(WRITE ${WORK_DIR}/forged.jsonl "${forged}")
expect("trace verify: a forged attestation breaks the chain" 1 "entry 4"
  ${CLAMPAI} trace verify ${WORK_DIR}/forged.jsonl)
expect("run --format json: the termination and the reason" 1
  "\"termination\": \"goal_not_attested\""
  ${CLAMPAI} run ${hd}/gated.json ${allow} --format json)
expect("agent: the monitor gates the LLM's run too" 1
  "goal_not_attested.*attestation_failed: the goal holds but its attestation `approved` failed"
  ${CLAMPAI} agent ${hd}/gated.json --llm mock ${allow} --quiet)
expect("agent: a spec's program not on the allowlist is refused" 2
  "is not in the allowlist \\(allow a program with --allow-program PATH\\)"
  ${CLAMPAI} agent ${hd}/gated.json --llm mock)
expect("run --ledger: a spec the monitor must enforce is refused" 2
  "--ledger: the spec declares what the reference monitor enforces"
  ${CLAMPAI} run ${hd}/gated.json --ledger memory:)

expect("run: drift beyond the tolerance halts with environment_drift, naming the variable" 1
  "result: goal NOT reached \\(environment_drift\\).*why         environment_drift: halted: the environment drifted from the model \\(replicas\\): replicas: model 1, world 0 \\(differs by 1, tolerance 0\\)\n"
  ${CLAMPAI} run ${hd}/drift.json --allow-program /usr/bin/printf)
file(READ ${hd}/drift.json drift)
string(REPLACE "[\"/usr/bin/printf\", \"0\"]" "[\"/usr/bin/sleep\", \"100\"], \"timeout_ms\": 200" hang "${drift}")
file(WRITE ${WORK_DIR}/hang.json "${hang}")
expect("run: a probe that hangs is killed at its timeout and halts the run before acting" 1
  "environment_drift\\).*actions     \\(none\\).*replicas: model 0, world unread \\(timed out after 200 ms"
  ${CLAMPAI} run ${WORK_DIR}/hang.json --allow-program /usr/bin/printf --allow-program /usr/bin/sleep)

expect("run: a readiness probe that hangs: not ready at the deadline" 1
  "actions     provision\n.*why         dependency_not_ready: `provision` is not ready after [0-9]+ ms \\(1 checks\\): timed out after 200 ms"
  ${CLAMPAI} run ${hd}/ready.json --allow-program /usr/bin/sleep)
file(READ ${hd}/ready.json ready)
string(REPLACE "[\"/usr/bin/sleep\", \"100\"]" "[\"/usr/bin/true\"]" ready_ok "${ready}")
file(WRITE ${WORK_DIR}/ready_ok.json "${ready_ok}")
expect("run: a ready dependency lets the action run" 0
  "result: goal reached.*actions     provision, deploy"
  ${CLAMPAI} run ${WORK_DIR}/ready_ok.json --allow-program /usr/bin/true)
string(REPLACE "\"readiness\": {\n    \"provision\"" "\"readiness\": {\n    \"deploy\"" ready_bad "${ready}")
file(WRITE ${WORK_DIR}/ready_bad.json "${ready_bad}")
expect("run: a readiness probe off the dependency edges is a spec error at its place" 2
  "ready_bad.json:[0-9]+:[0-9]+: readiness.deploy: no action depends on `deploy`"
  ${CLAMPAI} run ${WORK_DIR}/ready_bad.json --allow-program /usr/bin/sleep)
string(REPLACE "\"tolerance\": 0.5" "\"tolerance\": -1" drift_bad "${drift}")
file(WRITE ${WORK_DIR}/drift_bad.json "${drift_bad}")
expect("run: a negative tolerance is a spec error at its place" 2
  "drift_bad.json:[0-9]+:[0-9]+: probes.load.tolerance: must not be negative"
  ${CLAMPAI} run ${WORK_DIR}/drift_bad.json)
expect("run: information flow is enforced" 1 "information_flow [0-9]+"
  ${CLAMPAI} run ${hd}/leaky.json)

if(DEFINED VALIDATE_JSON)
  foreach(spec gated drift ready)
    expect("${spec} matches the task spec schema" 0 ""
      ${VALIDATE_JSON} ${SOURCE_DIR}/schema/task-spec.schema.json ${hd}/${spec}.json)
  endforeach()
  foreach(spec leaky sealed)
    execute_process(COMMAND ${CLAMPAI} verify ${hd}/${spec}.json --format json
                    OUTPUT_FILE ${WORK_DIR}/${spec}.verify.json)
    expect("verify json ${spec} matches the report schema" 0 ""
      ${VALIDATE_JSON} ${SOURCE_DIR}/schema/verify-report.schema.json ${WORK_DIR}/${spec}.verify.json)
    expect("${spec} matches the task spec schema" 0 ""
      ${VALIDATE_JSON} ${SOURCE_DIR}/schema/task-spec.schema.json ${hd}/${spec}.json)
  endforeach()
endif()

# ---- the service does not run the monitor: it refuses such a spec instead of ignoring it ----
expect("serve refuses a spec the reference monitor must enforce" 2
  "task `[a-z_]+` declares what the reference monitor enforces.*which the service does not run"
  ${CLAMPAI} serve --spec ${hd}/leaky.json --insecure-no-auth --port 0)
expect("mcp refuses a spec the reference monitor must enforce" 2
  "task `[a-z_]+` declares what the reference monitor enforces.*which the service does not run"
  ${CLAMPAI} mcp ${hd}/leaky.json)
expect("run --ledger refuses a spec the reference monitor must enforce" 2
  "--ledger: the spec declares what the reference monitor enforces.*run it without --ledger"
  ${CLAMPAI} run ${hd}/leaky.json --ledger memory:)
expect("agent --ledger refuses a spec the reference monitor must enforce" 2
  "--ledger: the spec declares what the reference monitor enforces.*run it without --ledger"
  ${CLAMPAI} agent ${hd}/leaky.json --llm mock --ledger memory:)
