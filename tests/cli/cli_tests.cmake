# The `clampai` command as a user meets it: exit codes (DESIGN §4) and messages.
# Invoked by ctest with -DCLAMPAI=<binary> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(failures 0)

include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

set(ex "${SOURCE_DIR}/examples")
foreach(spec quickstart cloud_deploy payments)
  expect("check ${spec}" 0 "ok: well-formed" ${CLAMPAI} check ${ex}/${spec}.json)
  expect("run ${spec}" 0 "goal reached" ${CLAMPAI} run ${ex}/${spec}.json --trace ${WORK_DIR}/${spec}.jsonl)
  expect("trace verify ${spec}" 0 "ok: .*replays" ${CLAMPAI} trace verify ${WORK_DIR}/${spec}.jsonl --spec ${ex}/${spec}.json)
endforeach()
expect("check json" 0 "\"step_limit\": 200" ${CLAMPAI} check ${ex}/quickstart.json --format json)
expect("run json" 0 "\"termination\": \"goal_reached\"" ${CLAMPAI} run ${ex}/quickstart.json --format json)
expect("run fsync" 0 "written to" ${CLAMPAI} run ${ex}/quickstart.json --trace ${WORK_DIR}/fsync.jsonl --flush fsync)
expect("run capped" 1 "max_steps" ${CLAMPAI} run ${ex}/quickstart.json --max-steps 1)
# One rejection with two reasons: the counts by reason add up to 2, and the summary says why.
file(WRITE ${WORK_DIR}/two_reasons.json [=[{"goal": "x >= 1",
 "variables": {"x": {"type": "int", "initial": 0}},
 "actions": [{"id": "dear", "cost": 100, "requires": "x > 5", "effects": []},
             {"id": "step", "cost": 1, "effects": [{"variable": "x", "mode": "set", "value": 1}]}],
 "budget": {"total": 10, "min_action_cost": 1}}]=])
expect("run: rejections by reason, and why they add up to more" 0
  "attempted   2, rejected 1 \\(budget_exceeded 1, requires_failed 1; 2 reasons for 1 rejection: one rejection can have several\\)\n"
  ${CLAMPAI} run ${WORK_DIR}/two_reasons.json)

# A spec with a mistake: exit 2 and the message names the place.
file(WRITE ${WORK_DIR}/typo.json [=[{"variables": {"balance": {"type": "int", "initial": 0}},
 "actions": [{"id": "a", "cost": 1, "requires": "balnce > 0", "effects": []}],
 "budget": {"total": 1, "min_action_cost": 1}}]=])
expect("bad spec" 2 "actions\\[0\\]\\.requires:1:1: unknown variable `balnce` \\(did you mean `balance`\\?\\)" ${CLAMPAI} check ${WORK_DIR}/typo.json)
file(WRITE ${WORK_DIR}/malformed.json "{\"variables\": {,}}")
expect("malformed JSON" 2 "1:16: malformed JSON" ${CLAMPAI} check ${WORK_DIR}/malformed.json)
expect("missing file" 2 "cannot read" ${CLAMPAI} check ${WORK_DIR}/nope.json)
expect("usage" 2 "" ${CLAMPAI} run)
expect("unknown option" 2 "" ${CLAMPAI} check ${ex}/quickstart.json --frobnicate)
expect("help" 0 "trace" ${CLAMPAI} --help)
expect("run help" 0 "--max-steps" ${CLAMPAI} run --help)

# A tampered trace: exit 1 naming the first bad entry.
file(READ ${WORK_DIR}/quickstart.jsonl trace)
string(REPLACE "\"cost\":\"2.000\"" "\"cost\":\"0.000\"" tampered "${trace}")
file(WRITE ${WORK_DIR}/tampered.jsonl "${tampered}")
expect("tampered trace" 1 "BROKEN: .*entry 1: hash mismatch" ${CLAMPAI} trace verify ${WORK_DIR}/tampered.jsonl)
expect("trace for another spec" 1 "another spec" ${CLAMPAI} trace verify ${WORK_DIR}/quickstart.jsonl --spec ${ex}/payments.json)

# clampai verify: exit 0 all proved, 1 refuted, 3 unknown; text, JSON and SARIF.
expect("verify quickstart" 0 "by construction \\(facts of the kernel, not counted\\): budget:t1, budget:t2, budget:t4\nsummary: 2 obligations: 2 proved, 0 refuted, 0 unknown; 1 lint warning" ${CLAMPAI} verify ${ex}/quickstart.json)
expect("verify cloud" 1 "REFUTED preservation:scale_up:instance_cap.*instances +[0-9]+ +(9|1[0-9]) +\\(changed\\)" ${CLAMPAI} verify ${ex}/cloud_deploy.json)
expect("verify payments" 1 "REFUTED preservation:pay_rent:balance_never_negative" ${CLAMPAI} verify ${ex}/payments.json --jobs 2)
expect("verify json" 1 "\"verdict\": \"refuted\"" ${CLAMPAI} verify ${ex}/cloud_deploy.json --format json)
expect("verify sarif" 1 "\"startLine\": 49.*\"ruleId\": \"invariant-not-preserved\"" ${CLAMPAI} verify ${ex}/cloud_deploy.json --format sarif)
expect("verify bad jobs" 2 "" ${CLAMPAI} verify ${ex}/quickstart.json --jobs 0)
expect("verify bad spec" 2 "unknown variable" ${CLAMPAI} verify ${WORK_DIR}/typo.json)

# clampai verify --format json matches schema/verify-report.schema.json (when valijson is there).
if(DEFINED VALIDATE_JSON)
  set(report_schema "${SOURCE_DIR}/schema/verify-report.schema.json")
  foreach(spec quickstart cloud_deploy payments)
    execute_process(COMMAND ${CLAMPAI} verify ${ex}/${spec}.json --format json
                    RESULT_VARIABLE rc OUTPUT_FILE ${WORK_DIR}/${spec}.verify.json ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
      message(SEND_ERROR "verify json ${spec}: exit code ${rc}, expected 0 or 1\n${err}")
    endif()
    expect("verify json ${spec} matches the report schema" 0 "" ${VALIDATE_JSON} ${report_schema} ${WORK_DIR}/${spec}.verify.json)
  endforeach()
  execute_process(COMMAND ${CLAMPAI} verify ${ex}/cloud_deploy.json --format json --depth 6
                  OUTPUT_FILE ${WORK_DIR}/depth.verify.json)
  expect("verify json with --depth matches the report schema" 0 "" ${VALIDATE_JSON} ${report_schema} ${WORK_DIR}/depth.verify.json)
  # A report with a verdict the verifier never gives is rejected, naming the field.
  file(WRITE ${WORK_DIR}/maybe.verify.json [=[{"spec": "x.json",
 "summary": {"proved": 0, "refuted": 0, "unknown": 1, "warnings": 0, "seconds": 0.1},
 "obligations": [{"id": "budget:t1", "kind": "budget", "verdict": "maybe", "reason": "?"}]}]=])
  expect("verify json schema rejects a bad verdict" 1 "\\[verdict\\]" ${VALIDATE_JSON} ${report_schema} ${WORK_DIR}/maybe.verify.json)
endif()
# clampai evaluate: one decision, nothing committed (0 approved, 1 rejected, 2 bad input).
expect("evaluate approved" 0 "APPROVED `process_batch` \\(cost 2.000\\).*processed = 5.*nothing was committed"
       ${CLAMPAI} evaluate ${ex}/quickstart.json --action process_batch)
expect("evaluate json" 0 "\"approved\":true,\"cost\":\"2.000\",\"emergency\":false,\"reasons\":\\[\\],\"warnings\":\\[\\],\"changes\":{\"processed\":5}"
       ${CLAMPAI} evaluate ${ex}/quickstart.json --action process_batch --format json)
expect("evaluate rejected on a state" 1 "REJECTED.*invariant_violated \\(max_errors\\)"
       ${CLAMPAI} evaluate ${ex}/quickstart.json --action process_batch --state "{\"processed\": 0, \"errors\": 7}")
expect("evaluate unknown action" 2 "did you mean `process_batch`"
       ${CLAMPAI} evaluate ${ex}/quickstart.json --action process_btach)
expect("evaluate unknown variable in --state" 2 "--state"
       ${CLAMPAI} evaluate ${ex}/quickstart.json --action process_batch --state "{\"nope\": 1}")
# Every report's JSON matches its schema (schema/*-report.schema.json).
if(DEFINED VALIDATE_JSON)
  foreach(kind run evaluate)
    set(args ${ex}/quickstart.json --format json)
    if(kind STREQUAL "evaluate")
      list(APPEND args --action process_batch)
    endif()
    execute_process(COMMAND ${CLAMPAI} ${kind} ${args} OUTPUT_FILE ${WORK_DIR}/${kind}.report.json)
    expect("${kind} json matches its schema" 0 "" ${VALIDATE_JSON}
           ${SOURCE_DIR}/schema/${kind}-report.schema.json ${WORK_DIR}/${kind}.report.json)
  endforeach()
  execute_process(COMMAND ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --format json -q
                  OUTPUT_FILE ${WORK_DIR}/agent.report.json)
  expect("agent json matches its schema" 0 "" ${VALIDATE_JSON}
         ${SOURCE_DIR}/schema/agent-report.schema.json ${WORK_DIR}/agent.report.json)
  # The members a run adds in a pool (--pools) or on a ledger are in the schemas too.
  file(WRITE ${WORK_DIR}/report-pools.json "{\"pools\": {\"org\": {\"total\": 9}, \"team\": {\"total\": 4, \"parent\": \"org\"}}}\n")
  file(WRITE ${WORK_DIR}/report-pooled.json [=[{"name": "pooled", "variables": {"n": {"type": "int", "initial": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "goal": "n >= 3", "budget": {"total": 10, "min_action_cost": 1, "pool": "team"}}
]=])
  foreach(cmd run agent)
    set(llm "")
    if(cmd STREQUAL "agent")
      set(llm --llm mock)
    endif()
    execute_process(COMMAND ${CLAMPAI} ${cmd} ${WORK_DIR}/report-pooled.json ${llm} --pools
                            ${WORK_DIR}/report-pools.json --format json -q
                    OUTPUT_FILE ${WORK_DIR}/${cmd}.pools.json)
    expect("${cmd} json in a pool matches its schema" 0 "" ${VALIDATE_JSON}
           ${SOURCE_DIR}/schema/${cmd}-report.schema.json ${WORK_DIR}/${cmd}.pools.json)
    execute_process(COMMAND ${CLAMPAI} ${cmd} ${ex}/quickstart.json ${llm} --ledger memory:
                            --format json -q
                    OUTPUT_FILE ${WORK_DIR}/${cmd}.ledger.json)
    expect("${cmd} json on a ledger matches its schema" 0 "" ${VALIDATE_JSON}
           ${SOURCE_DIR}/schema/${cmd}-report.schema.json ${WORK_DIR}/${cmd}.ledger.json)
  endforeach()
  execute_process(COMMAND ${CLAMPAI} run ${WORK_DIR}/typo.json --format json OUTPUT_FILE ${WORK_DIR}/run.error.json)
  expect("run's error json matches its schema" 0 "" ${VALIDATE_JSON}
         ${SOURCE_DIR}/schema/run-report.schema.json ${WORK_DIR}/run.error.json)
endif()
expect("verify smtlib" 1 "REFUTED" ${CLAMPAI} verify ${ex}/cloud_deploy.json --smtlib ${WORK_DIR}/smt)
file(GLOB smt_files ${WORK_DIR}/smt/*.smt2)
list(LENGTH smt_files smt_count)
if(NOT smt_count EQUAL 15)
  message(SEND_ERROR "verify --smtlib wrote ${smt_count} files, expected 15")
endif()
expect("verify depth" 1 "reachable in [0-9]+ steps from the initial state: build, test, (safe_hover, )?deploy" ${CLAMPAI} verify ${ex}/cloud_deploy.json --depth 6)
expect("verify depth json" 1 "\"status\": \"reachable\"" ${CLAMPAI} verify ${ex}/cloud_deploy.json --depth 6 --format json)

# clampai bench: measures the spec (no timing is asserted), text and JSON.
expect("bench quickstart" 0 "decisions/s.*evaluate.*execute" ${CLAMPAI} bench ${ex}/quickstart.json --seconds 0.2)
expect("bench json" 0 "\"p99\"" ${CLAMPAI} bench ${ex}/quickstart.json --seconds 0.2 --format json)
expect("bench bad seconds" 2 "" ${CLAMPAI} bench ${ex}/quickstart.json --seconds 0)
expect("bench bad spec" 2 "unknown variable" ${CLAMPAI} bench ${WORK_DIR}/typo.json --seconds 0.2)

# clampai compose: the example pipeline composes, the broken one fails with the gap named,
# certificates are reused, and every format is what CI tools read.
set(cx "${ex}/compose")
expect("compose pipeline" 0 "19 obligations: 19 proved, 0 refuted, 0 unknown; 6 tasks, 0 certificates reused" ${CLAMPAI} compose ${cx}/pipeline.json)
expect("compose nightly (repeat of a nested manifest)" 0 "43 obligations: 43 proved, 0 refuted" ${CLAMPAI} compose ${cx}/nightly.json)
foreach(spec provision deploy dns smoke_test notify page_oncall teardown)
  expect("compose example ${spec} runs on its own" 0 "goal reached" ${CLAMPAI} run ${cx}/${spec}.json)
endforeach()
expect("compose broken" 1 "REFUTED sequential:provision->smoke_test: the assumes of `smoke_test` \\(deployed && dns_ready\\)" ${CLAMPAI} compose ${cx}/broken.json)
expect("compose cache cold" 0 "0 certificates reused" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/certs --jobs 2)
expect("compose cache warm" 0 "6 certificates reused" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/certs)
file(WRITE ${WORK_DIR}/ci.key "0123456789abcdef0123456789abcdef\n")
file(WRITE ${WORK_DIR}/short.key "tooshort\n")
expect("compose keyed cold" 0 "0 certificates reused" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/keyed --cache-key-file ${WORK_DIR}/ci.key)
expect("compose keyed warm" 0 "6 certificates reused" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/keyed --cache-key-file ${WORK_DIR}/ci.key)
expect("compose keyed certificates need the key" 0 "certificate not reused: it is sealed with a key and no cache key is set" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/keyed)
expect("compose short cache key" 2 "the cache key file `[^`]*short.key` holds 8 bytes; a cache key needs at least 16" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/keyed --cache-key-file ${WORK_DIR}/short.key)
expect("compose missing cache key file" 2 "cannot read" ${CLAMPAI} compose ${cx}/pipeline.json --cache ${WORK_DIR}/keyed --cache-key-file ${WORK_DIR}/nokey)
expect("compose cache key without a cache" 2 "--cache-key-file requires --cache" ${CLAMPAI} compose ${cx}/pipeline.json --cache-key-file ${WORK_DIR}/ci.key)
expect("compose show proved" 0 "PROVED parallel:deploy\\|\\|dns: independent" ${CLAMPAI} compose ${cx}/pipeline.json --show-proved)
expect("compose json" 1 "\"kind\": \"sequential\"" ${CLAMPAI} compose ${cx}/broken.json --format json)
expect("compose sarif" 1 "\"ruleId\": \"composition-sequential\"" ${CLAMPAI} compose ${cx}/broken.json --format sarif)
expect("compose junit" 1 "<testcase classname=\"compose.sequential\" name=\"sequential:provision-&gt;smoke_test\"[^>]*>\n *<failure message=" ${CLAMPAI} compose ${cx}/broken.json --format junit)
expect("compose junit all pass" 0 "failures=\"0\" errors=\"0\"" ${CLAMPAI} compose ${cx}/pipeline.json --format junit)
expect("compose too many obligations" 2 "the composition has 32 solver obligations, more than the limit of 5 \\(--max-obligations\\)" ${CLAMPAI} compose ${cx}/nightly.json --max-obligations 5)
expect("compose bad timeout" 2 "--timeout" ${CLAMPAI} compose ${cx}/pipeline.json --timeout -1)
expect("compose with a generous run timeout" 0 "19 obligations: 19 proved" ${CLAMPAI} compose ${cx}/pipeline.json --timeout 600)
expect("compose graph" 0 "digraph.*label=\"provision\".*label=\"if healthy\"" ${CLAMPAI} compose ${cx}/pipeline.json --graph dot)
expect("compose missing manifest" 2 "cannot read" ${CLAMPAI} compose ${WORK_DIR}/nope.json)
file(WRITE ${WORK_DIR}/cycle.json "{\"name\": \"c\", \"tasks\": {\"p\": \"${cx}/provision.json\"},
 \"composites\": {\"x\": {\"sequential\": [\"p\", \"y\"]}, \"y\": {\"parallel\": [\"x\", \"p\"]}}, \"compose\": \"x\"}")
file(WRITE ${WORK_DIR}/one_branch.json "{\"name\": \"o\", \"tasks\": {\"p\": \"${cx}/provision.json\"}, \"compose\": {\"parallel\": [\"p\"]}}")
expect("compose one-branch parallel" 2 "compose.parallel: `parallel` needs at least 2 items" ${CLAMPAI} compose ${WORK_DIR}/one_branch.json)
expect("compose cycle" 2 "a cycle of references .*composite `x`.*composite `y`" ${CLAMPAI} compose ${WORK_DIR}/cycle.json)
expect("compose bad format" 2 "" ${CLAMPAI} compose ${cx}/pipeline.json --format xml)
# A task whose own verification fails: every finding, located, with its counterexample, also
# from a reused certificate.
file(WRITE ${WORK_DIR}/tbad.json [=[{"name": "tbad", "variables": {"x": {"type": "int", "initial": 0, "min": 0, "max": 10}},
 "actions": [{"id": "bump", "cost": 1, "effects": [{"variable": "x", "mode": "increment", "value": "4"}]}],
 "invariants": [{"name": "small", "check": "x <= 5"}, {"name": "tiny", "check": "x <= 3"}],
 "budget": {"total": 5, "min_action_cost": 1}}]=])
file(WRITE ${WORK_DIR}/mbad.json "{\"name\": \"m\", \"tasks\": {\"tbad\": \"tbad.json\"}, \"compose\": \"tbad\"}")
foreach(run cold warm)
  expect("compose task findings (${run})" 1 "REFUTED preservation:bump:small: [^\n]*\n    at [^\n]*tbad.json:3:[0-9]+\n    variable +before +after\n    x +[0-9]+ +[0-9]+   \\(changed\\)\n    REFUTED preservation:bump:tiny" ${CLAMPAI} compose ${WORK_DIR}/mbad.json --cache ${WORK_DIR}/badcerts)
endforeach()
expect("compose junit lists every task finding" 1 "&quot;preservation:bump:small&quot;.*&quot;preservation:bump:tiny&quot;.*<system-out>certificate reused" ${CLAMPAI} compose ${WORK_DIR}/mbad.json --cache ${WORK_DIR}/badcerts --format junit)
if(DEFINED VALIDATE_JSON)
  foreach(spec provision deploy dns smoke_test notify page_oncall teardown)
    expect("compose example ${spec} matches the task spec schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/task-spec.schema.json ${cx}/${spec}.json)
  endforeach()
  foreach(m pipeline broken nightly)
    expect("manifest ${m} matches the manifest schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/compose-manifest.schema.json ${cx}/${m}.json)
  endforeach()
  expect("manifest schema rejects a one-branch parallel" 1 "\\[compose\\]\\[parallel\\]" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/compose-manifest.schema.json ${WORK_DIR}/one_branch.json)
endif()
if(DEFINED VALIDATE_JSON)
  execute_process(COMMAND ${CLAMPAI} compose ${WORK_DIR}/mbad.json --format json
                  OUTPUT_FILE ${WORK_DIR}/mbad.compose.json RESULT_VARIABLE rc)
  expect("compose json with task findings matches the report schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/compose-report.schema.json ${WORK_DIR}/mbad.compose.json)
  foreach(m pipeline broken nightly)
    execute_process(COMMAND ${CLAMPAI} compose ${cx}/${m}.json --format json
                    OUTPUT_FILE ${WORK_DIR}/${m}.compose.json RESULT_VARIABLE rc)
    expect("compose json ${m} matches the report schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/compose-report.schema.json ${WORK_DIR}/${m}.compose.json)
  endforeach()
endif()

# clampai lookahead: the example's depth-3 trap, which a one-step check misses.
set(pv "${ex}/pressure_vessel.json")
expect("lookahead trap" 1 "TRAP open_valve.*`overflow` in 3 steps: fill, fill, fill" ${CLAMPAI} lookahead ${pv} --action open_valve --depth 3)
expect("lookahead shallow" 0 "basin reachable +none within 2 steps" ${CLAMPAI} lookahead ${pv} --action open_valve --depth 2)
expect("lookahead rejected" 1 "REJECTED fill.*requires_failed" ${CLAMPAI} lookahead ${pv} --action fill)
expect("lookahead json" 0 "\"goal_reachable\": true" ${CLAMPAI} lookahead ${pv} --action top_up --depth 3 --format json)
file(WRITE ${WORK_DIR}/vessel_state.json "{\"level\": 4, \"valve_open\": true}")
expect("lookahead from a state" 0 "goal +reachable: the cheapest plan costs 4.000: top_up, top_up" ${CLAMPAI} lookahead ${pv} --state ${WORK_DIR}/vessel_state.json --action close_valve --depth 2)
expect("lookahead unknown action" 2 "--action: unknown action `nope`" ${CLAMPAI} lookahead ${pv} --action nope)
expect("lookahead bad params" 2 "--params: malformed JSON" ${CLAMPAI} lookahead ${pv} --action open_valve --params "{")
expect("lookahead symbolic" 1 "TRAP open_valve.*`overflow` in 3 steps: fill, fill, fill.*symbolically" ${CLAMPAI} lookahead ${pv} --action open_valve --depth 3 --engine symbolic)
expect("lookahead symbolic json" 0 "\"engine\": \"symbolic\"" ${CLAMPAI} lookahead ${pv} --action top_up --depth 2 --engine symbolic --format json)
expect("lookahead bad engine" 2 "--engine" ${CLAMPAI} lookahead ${pv} --action top_up --engine magic)
# An incomplete search names the option that would complete it, and that option does.
expect("lookahead incomplete: the option that completes it" 3
  "incomplete: the parameters of `scale_up` span more than 64 values; rerun with --max-param-values 101 or --engine symbolic\\)"
  ${CLAMPAI} lookahead ${ex}/autoscale.json --action scale_up --depth 1)
expect("lookahead completed by that option" 0 "searched +[0-9]+ situations\n"
  ${CLAMPAI} lookahead ${ex}/autoscale.json --action scale_up --depth 1 --max-param-values 101)
file(WRITE ${WORK_DIR}/unbounded.json [=[{"variables": {"x": {"type": "int", "initial": 0}},
 "actions": [{"id": "a", "cost": 1, "parameters": {"n": {"type": "int", "default": 0}},
              "effects": [{"variable": "x", "mode": "set", "value": "n"}]}],
 "budget": {"total": 5, "min_action_cost": 1}}]=])
expect("lookahead incomplete: an unbounded parameter" 3
  "has no bounds: its values cannot be enumerated; rerun with --engine symbolic"
  ${CLAMPAI} lookahead ${WORK_DIR}/unbounded.json --action a --depth 1)
# clampai run --lookahead K / --recover: the trap is avoided, or recovered from by rollback.
expect("run trapped" 1 "goal NOT reached \\(no_approvable_action\\)" ${CLAMPAI} run ${pv})
expect("run lookahead" 0 "goal reached.*lookahead_trap 1.*actions +top_up, top_up, top_up, top_up" ${CLAMPAI} run ${pv} --lookahead 3)
expect("run recover" 0 "goal reached.*recovery +3 rollbacks, 0 emergency actions: rolled back `fill`" ${CLAMPAI} run ${pv} --recover)
expect("run recover json" 0 "\"rollbacks\": 3" ${CLAMPAI} run ${pv} --recover --format json)
expect("run lookahead range" 2 "--lookahead" ${CLAMPAI} run ${pv} --lookahead 100)
# --shadow (issue 40): where the enforcing run is trapped, the first ready action the kernel
# rejects is followed (its entry `enforced: false`), listed, and the trace replays.
expect("run shadow" 1 "goal NOT reached \\(step_limit\\).*shadow      nothing enforced; 7 steps the kernel would have rejected\n +`open_valve` \\(entry 6\\): requires_failed" ${CLAMPAI} run ${pv} --shadow --trace ${WORK_DIR}/pv-shadow.jsonl)
expect("run shadow trace replays" 0 "ok: .*replays through the kernel" ${CLAMPAI} trace verify ${WORK_DIR}/pv-shadow.jsonl --spec ${pv})
file(READ ${WORK_DIR}/pv-shadow.jsonl pv_shadow)
string(REGEX MATCHALL "\"enforced\":false" pv_unenforced "${pv_shadow}")
list(LENGTH pv_unenforced pv_unenforced_n)
if(NOT pv_unenforced_n EQUAL 12)
  message(SEND_ERROR "run shadow: ${pv_unenforced_n} entries say `enforced: false`, expected 12:\n${pv_shadow}")
endif()
expect("run shadow json" 1 "\"shadow\": \\{\n +\"rejections\": \\[\n +\\{\n +\"action\": \"open_valve\",.*\"sequence\": 6\n.*\"would_be_rejected\": 7" ${CLAMPAI} run ${pv} --shadow --format json)
expect("run shadow with a ledger" 2 "--shadow cannot be used with --ledger: a task on a shared ledger" ${CLAMPAI} run ${pv} --shadow --ledger memory:)
expect("run shadow with approvals" 2 "--approvals cannot be used with --shadow: in shadow mode nothing waits" ${CLAMPAI} run ${pv} --shadow --approvals deny)
expect("run shadow recording rejections" 2 "--record-rejections cannot be used with --shadow" ${CLAMPAI} run ${pv} --shadow --record-rejections --trace ${WORK_DIR}/pv-refused.jsonl)
if(EXISTS ${WORK_DIR}/pv-refused.jsonl)
  message(SEND_ERROR "run shadow recording rejections: the refused run wrote its trace")
endif()
# Parameters at the int64 edge (max = 2^63 - 1, min = -2^63) are enumerated by count: the
# explicit lookahead ends (it used to step past the bound, wrap around and exhaust memory).
file(WRITE ${WORK_DIR}/int64_edge.json [=[{"name": "int64_edge", "goal": "x == 9223372036854775807",
 "variables": {"x": {"type": "int", "initial": 0}, "y": {"type": "int", "initial": 0}},
 "actions": [
  {"id": "jump", "cost": 1, "parameters": {"n": {"type": "int", "min": 9223372036854775805, "max": 9223372036854775807, "default": 9223372036854775807}},
   "effects": [{"variable": "x", "mode": "set", "value": "n"}]},
  {"id": "dip", "cost": 1, "parameters": {"m": {"type": "int", "min": -9223372036854775808, "max": -9223372036854775806}},
   "effects": [{"variable": "y", "mode": "set", "value": "m"}]}],
 "capture_basins": [{"name": "never", "check": "x == 1"}],
 "budget": {"total": 10, "min_action_cost": 1}}]=])
expect("lookahead int64 edge" 0 "goal +reachable: the cheapest plan costs 1.000: jump n=9223372036854775807" ${CLAMPAI} lookahead ${WORK_DIR}/int64_edge.json --action dip --params "{\"m\": -9223372036854775808}" --depth 2)
expect("verify --depth int64 edge" 0 "goal: reachable within 2 steps.*jump n=9223372036854775807" ${CLAMPAI} verify ${WORK_DIR}/int64_edge.json --depth 2)
expect("run --lookahead int64 edge" 0 "goal reached.*actions +jump" ${CLAMPAI} run ${WORK_DIR}/int64_edge.json --lookahead 2)

# clampai repair: the oversized request is cut to the largest safe one; a decimal is projected.
set(as "${ex}/autoscale.json")
expect("repair scale_up" 0 "REPAIRED scale_up: n = 50  ->  n = 14.*binding +barrier of `spend_cap`" ${CLAMPAI} repair ${as} --action scale_up --params "{\"n\": 50}")
expect("repair l2" 0 "fraction = 0.9  ->  fraction = 0.60.*KKT +invariant `slo`: multiplier 0.6" ${CLAMPAI} repair ${as} --action set_throttle --params "{\"fraction\": 0.9}")
expect("repair json" 0 "\"status\": \"repaired\"" ${CLAMPAI} repair ${as} --action scale_up --params "{\"n\": 50}" --format json)
expect("repair approved" 0 "APPROVED scale_up as proposed" ${CLAMPAI} repair ${as} --action scale_up --params "{\"n\": 2}")
file(WRITE ${WORK_DIR}/full.json [=[{"instances": 20, "hourly_spend": "30.00", "throttle": "0.60"}]=])
expect("repair impossible" 1 "NO REPAIR.*conflict +parameter `n` >= 1.*conflict +invariant `capacity`" ${CLAMPAI} repair ${as} --state ${WORK_DIR}/full.json --action scale_up --params "{\"n\": 3}")
expect("repair unknown action" 2 "--action: unknown action `grow`" ${CLAMPAI} repair ${as} --action grow --params "{}")
expect("repair unknown param" 2 "--params.m: action `scale_up` has no parameter `m`" ${CLAMPAI} repair ${as} --action scale_up --params "{\"m\": 1}")
expect("repair bad weight" 2 "--weights.n: a weight must be positive" ${CLAMPAI} repair ${as} --action scale_up --params "{\"n\": 1}" --weights "{\"n\": 0}")
expect("repair bad norm" 2 "--norm" ${CLAMPAI} repair ${as} --action scale_up --params "{\"n\": 1}" --norm l3)
expect("repair malformed params" 2 "--params: malformed JSON" ${CLAMPAI} repair ${as} --action scale_up --params "{n")
file(WRITE ${WORK_DIR}/optional.json [=[{"variables": {"x": {"type": "int", "initial": 0},
   "limit": {"type": "int", "initial": 5, "optional": true}},
 "actions": [{"id": "set", "cost": 1, "parameters": {"n": {"type": "int", "min": 0, "max": 100}},
              "effects": [{"variable": "x", "mode": "set", "value": "n"}]}],
 "invariants": [{"name": "under", "check": "defined(limit) -> x <= limit"}],
 "budget": {"total": 5, "min_action_cost": 1}}]=])
expect("repair undecided" 3 "UNKNOWN set: outside what the repair models: .*optional variable `limit`" ${CLAMPAI} repair ${WORK_DIR}/optional.json --action set --params "{\"n\": 50}")

# The JSON of lookahead and repair matches schema/lookahead-report and schema/repair-report.
if(DEFINED VALIDATE_JSON)
  set(n 0)
  foreach(args
      "lookahead;${pv};--action;open_valve;--depth;3"
      "lookahead;${pv};--action;open_valve;--depth;3;--engine;symbolic"
      "lookahead;${pv};--action;top_up;--depth;2"
      "lookahead;${pv};--action;fill"
      "repair;${as};--action;scale_up;--params;{\"n\": 50}"
      "repair;${as};--action;set_throttle;--params;{\"fraction\": 0.9}"
      "repair;${as};--action;scale_up;--params;{\"n\": 2}"
      "repair;${as};--state;${WORK_DIR}/full.json;--action;scale_up;--params;{\"n\": 3}")
    math(EXPR n "${n} + 1")
    list(GET args 0 command)
    execute_process(COMMAND ${CLAMPAI} ${args} --format json OUTPUT_FILE ${WORK_DIR}/report${n}.json
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(rc GREATER 1)
      message(SEND_ERROR "${command} json ${n}: exit code ${rc}\n${err}")
    endif()
    expect("${command} json ${n} matches its schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/${command}-report.schema.json ${WORK_DIR}/report${n}.json)
  endforeach()
  file(WRITE ${WORK_DIR}/bad-repair.json [=[{"spec": "x", "action": "a", "status": "repaired", "norm": "l2", "proposed": {}, "rejected_because": []}]=])
  expect("a repaired report without its certificate is rejected" 1 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/repair-report.schema.json ${WORK_DIR}/bad-repair.json)
endif()
# clampai verify --depth K: the cheapest plan to the goal, or a proof that there is none.
expect("verify goal plan" 0 "goal: reachable within 5 steps: the cheapest plan costs 7.000 of the budget 12.000: open_valve, fill, close_valve, top_up, top_up" ${CLAMPAI} verify ${pv} --depth 5)
expect("verify goal infeasible" 1 "REFUTED goal: this task cannot complete: the cheapest plan costs 24.000, the budget is 20.000" ${CLAMPAI} verify ${SOURCE_DIR}/tests/data/costly.json --depth 3)
if(DEFINED VALIDATE_JSON)
  execute_process(COMMAND ${CLAMPAI} verify ${SOURCE_DIR}/tests/data/costly.json --depth 3 --format json OUTPUT_FILE ${WORK_DIR}/costly.verify.json)
  expect("verify json with a goal matches the report schema" 0 "" ${VALIDATE_JSON} ${report_schema} ${WORK_DIR}/costly.verify.json)
endif()

# CI reports on failure: with --format json, sarif or junit, bad input still gives a report that
# carries the error (and exit code 2), so CI shows it instead of an empty file.
file(WRITE ${WORK_DIR}/broken_json.json "{\"variables\": {,}}")
expect("verify sarif on a missing spec" 2 "\"executionSuccessful\": false.*\"level\": \"error\".*cannot read" ${CLAMPAI} verify ${WORK_DIR}/nope.json --format sarif)
expect("verify sarif on malformed JSON locates it" 2 "toolExecutionNotifications.*\"startColumn\": 16,[^}]*\"startLine\": 1" ${CLAMPAI} verify ${WORK_DIR}/broken_json.json --format sarif)
expect("verify junit on a bad spec" 2 "<error message=\"[^\"]*unknown variable `balnce`[^\"]*\" type=\"bad_input\">" ${CLAMPAI} verify ${WORK_DIR}/typo.json --format junit)
expect("verify junit on a bad option" 2 "<error message=\"--jobs: " ${CLAMPAI} verify ${ex}/quickstart.json --format junit --jobs 0)
expect("compose junit on a missing manifest" 2 "errors=\"1\".*<error message=\"cannot read" ${CLAMPAI} compose ${WORK_DIR}/nope.json --format junit)
expect("compose sarif on a short cache key" 2 "\"executionSuccessful\": false.*holds 8 bytes" ${CLAMPAI} compose ${cx}/pipeline.json --format sarif --cache ${WORK_DIR}/keyed --cache-key-file ${WORK_DIR}/short.key)
expect("check json on a bad spec" 2 "\"command\": \"check\".*\"message\": \"[^\"]*unknown variable `balnce`" ${CLAMPAI} check ${WORK_DIR}/typo.json --format json)
expect("a format the command lacks is a usage error, reported in that format" 2 "<testcase classname=\"clampai.check\" name=\"check\">\n *<error message=\"[^\"]*--format[^\"]*junit" ${CLAMPAI} check ${WORK_DIR}/typo.json --format junit)
expect("trace verify json on a missing trace" 2 "\"command\": \"trace verify\"" ${CLAMPAI} trace verify ${WORK_DIR}/nope.jsonl --format json)
expect("text errors print no report" 2 "^clampai: error: cannot read [^\n]*nope.json" ${CLAMPAI} verify ${WORK_DIR}/nope.json)
if(DEFINED VALIDATE_JSON)
  set(n 0)
  foreach(args
      "verify;${WORK_DIR}/nope.json;verify"
      "verify;${WORK_DIR}/broken_json.json;verify"
      "verify;${ex}/quickstart.json;--jobs;0;verify"
      "compose;${WORK_DIR}/nope.json;compose"
      "lookahead;${pv};--action;nope;lookahead"
      "lookahead;${pv};--action;fill;--params;{;lookahead"
      "repair;${as};--action;grow;--params;{};repair"
      "check;${WORK_DIR}/typo.json;error"
      "run;${WORK_DIR}/typo.json;error"
      "bench;${WORK_DIR}/typo.json;error")
    math(EXPR n "${n} + 1")
    list(POP_BACK args schema)
    execute_process(COMMAND ${CLAMPAI} ${args} --format json OUTPUT_FILE ${WORK_DIR}/error${n}.json
                    RESULT_VARIABLE rc ERROR_QUIET)
    if(NOT rc EQUAL 2)
      message(SEND_ERROR "error report ${n} (${args}): exit code ${rc}, expected 2")
    endif()
    expect("error report ${n} matches the ${schema} report schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/${schema}-report.schema.json ${WORK_DIR}/error${n}.json)
    expect("error report ${n} matches the error report schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/error-report.schema.json ${WORK_DIR}/error${n}.json)
  endforeach()
  file(READ ${WORK_DIR}/error2.json error2)
  if(NOT error2 MATCHES "\"line\": 1" OR NOT error2 MATCHES "\"column\": 16")
    message(SEND_ERROR "the JSON error report of malformed JSON has no line and column:\n${error2}")
  endif()
endif()

# SARIF results carry the counterexample (values and the replayed steps) and line:column regions;
# JUnit reports validate (the checks in `expect` above) and the validators reject broken ones.
expect("verify sarif counterexample and replay" 1 "\"codeFlows\".*\"text\": \"step 1: build\".*\"startLine\": 15.*\"counterexample\": \\{.*\"params\": \\{.*\"post\": \\{.*\"replay\": \\[" ${CLAMPAI} verify ${ex}/cloud_deploy.json --depth 6 --format sarif)
expect("verify sarif invocation" 1 "\"invocations\": \\[[^]]*\"executionSuccessful\": true" ${CLAMPAI} verify ${ex}/cloud_deploy.json --format sarif)
expect("verify sarif lint warning" 0 "\"level\": \"warning\"" ${CLAMPAI} verify ${ex}/quickstart.json --format sarif)
expect("verify junit" 1 "<testcase classname=\"verify.preservation\" name=\"preservation:scale_up:instance_cap\">\n *<failure message=\"[^\"]*\" type=\"refuted\">at [^\n]*cloud_deploy.json:49:5" ${CLAMPAI} verify ${ex}/cloud_deploy.json --format junit)
expect("verify junit goal" 1 "name=\"goal:depth 3\">\n *<failure message=\"this task cannot complete" ${CLAMPAI} verify ${SOURCE_DIR}/tests/data/costly.json --depth 3 --format junit)
expect("compose sarif counterexample" 1 "\"ruleId\": \"task-not-verified\"" ${CLAMPAI} compose ${WORK_DIR}/mbad.json --format sarif)
expect("compose junit task findings" 1 "<failure message=" ${CLAMPAI} compose ${WORK_DIR}/mbad.json --format junit)
if(DEFINED XMLLINT)
  file(WRITE ${WORK_DIR}/old.junit.xml [=[<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="x" tests="1" failures="0" errors="0" time="1.2e-05">
  <testsuite name="x" tests="1" failures="0" errors="0" time="1.2e-05">
    <testcase classname="compose.task" name="task:a" file="a.json" line="3"/>
  </testsuite>
</testsuites>
]=])
  expect("junit.xsd rejects exponent times and file/line attributes" 3 "time.*1.2e-05|file" ${XMLLINT} --noout --schema ${SOURCE_DIR}/tests/data/junit.xsd ${WORK_DIR}/old.junit.xml)
endif()
if(DEFINED VALIDATE_JSON)
  execute_process(COMMAND ${CLAMPAI} verify ${ex}/cloud_deploy.json --format sarif OUTPUT_VARIABLE sarif ERROR_QUIET)
  string(REPLACE "\"level\": \"error\"" "\"level\": \"fatal\"" sarif "${sarif}")
  file(WRITE ${WORK_DIR}/bad.sarif "${sarif}")
  expect("the SARIF schema rejects a bad level" 1 "level" ${VALIDATE_JSON} ${SOURCE_DIR}/tests/data/sarif-2.1.0.schema.json ${WORK_DIR}/bad.sarif)
endif()

# Progress on stderr: nothing with --quiet; plain lines when stderr is not a terminal (here with
# CLAMPAI_PROGRESS_INTERVAL_MS=0: a line at every phase and count, so nothing depends on timing).
function(expect_stderr name expected_rc pattern)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env CLAMPAI_PROGRESS_INTERVAL_MS=0 ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(SEND_ERROR "${name}: exit code ${rc}, expected ${expected_rc}\n${err}")
  elseif("${pattern}" STREQUAL "" AND NOT "${err}" STREQUAL "")
    message(SEND_ERROR "${name}: expected nothing on stderr, got:\n${err}")
  elseif(NOT "${pattern}" STREQUAL "" AND NOT err MATCHES "${pattern}")
    message(SEND_ERROR "${name}: stderr does not match `${pattern}`:\n${err}")
  elseif(err MATCHES "\r")
    message(SEND_ERROR "${name}: a carriage return on stderr that is not a terminal:\n${err}")
  else()
    message(STATUS "ok: ${name}")
  endif()
endfunction()
expect_stderr("verify progress" 0 "clampai verify: preservation obligations [0-9]+/[0-9]+, [0-9.]+ s\nclampai verify: preservation obligations [0-9]+/[0-9]+.*clampai verify: goal search within 5 steps, [0-9.]+ s\n" ${CLAMPAI} verify ${pv} --depth 5)
expect_stderr("verify --quiet" 0 "" ${CLAMPAI} verify ${pv} --depth 5 --quiet)
expect_stderr("compose progress" 0 "clampai compose: verifying the tasks and the composition obligations, [0-9.]+ s\n" ${CLAMPAI} compose ${cx}/pipeline.json)
expect_stderr("compose --quiet" 0 "" ${CLAMPAI} compose ${cx}/pipeline.json --quiet)
expect_stderr("lookahead progress" 1 "clampai lookahead: searching 3 steps ahead \\(explicit\\)" ${CLAMPAI} lookahead ${pv} --action open_valve --depth 3)
expect_stderr("lookahead --quiet" 1 "" ${CLAMPAI} lookahead ${pv} --action open_valve --depth 3 -q)
expect_stderr("run progress" 0 "clampai run: running" ${CLAMPAI} run ${ex}/quickstart.json)
foreach(cmd "check;${ex}/quickstart.json" "run;${ex}/quickstart.json" "trace;verify;${WORK_DIR}/quickstart.jsonl"
            "repair;${as};--action;scale_up;--params;{\"n\": 50}" "bench;${ex}/quickstart.json;--seconds;0.1")
  list(GET cmd 0 name)
  expect_stderr("${name} --quiet" 0 "" ${CLAMPAI} ${cmd} --quiet)
endforeach()

# The bash and zsh completions and the man page know every option of every command.
file(READ ${SOURCE_DIR}/cli/completions/clampai.bash bash_completion)
file(READ ${SOURCE_DIR}/cli/completions/_clampai zsh_completion)
file(READ ${SOURCE_DIR}/docs/clampai.1.in man_page)
string(REPLACE "\\-" "-" man_page "${man_page}")
foreach(cmd check evaluate run "trace;verify" verify bench compose lookahead repair report agent serve mcp gateway
            "ledger;pools;apply" "ledger;pools;show")
  execute_process(COMMAND ${CLAMPAI} ${cmd} --help OUTPUT_VARIABLE help)
  string(REGEX MATCHALL "--[a-z][a-z-]+" options "${help}")
  list(REMOVE_DUPLICATES options)
  foreach(option ${options})
    foreach(doc bash_completion zsh_completion man_page)
      string(FIND "${${doc}}" "${option}" at)
      if(at EQUAL -1)
        message(SEND_ERROR "`clampai ${cmd} ${option}` is missing from ${doc}")
      endif()
    endforeach()
  endforeach()
endforeach()
# Every command's --help ends with its exit codes, one example and the page that documents it.
foreach(cmd check evaluate run "trace;verify" verify bench compose lookahead repair report agent serve mcp
            "ledger;pools;apply" "ledger;pools;show")
  execute_process(COMMAND ${CLAMPAI} ${cmd} --help OUTPUT_VARIABLE help)
  list(JOIN cmd " " name)
  if(NOT help MATCHES "\nExit codes: 0 [^\n]*, 2 [^\n]+\nExample: clampai ${name} [^\n]+\nDocumentation: ([A-Za-z/_]+\\.md)")
    message(SEND_ERROR "`clampai ${name} --help` lacks its exit codes, an example or its page:\n${help}")
  elseif(NOT EXISTS ${SOURCE_DIR}/${CMAKE_MATCH_1})
    message(SEND_ERROR "`clampai ${name} --help` names ${CMAKE_MATCH_1}, which does not exist")
  else()
    message(STATUS "ok: ${name} --help: exit codes, example, ${CMAKE_MATCH_1}")
  endif()
endforeach()
expect("version" 0 "^clampai [0-9]+\\.[0-9]+\\.[0-9]+\ntoolkit: clampai [0-9.]+ \\(sources [0-9a-f]+\\)\n$" ${CLAMPAI} --version)

# A file name that is not UTF-8 gives valid JSON, SARIF and JUnit reports (bytes replaced).
file(WRITE ${WORK_DIR}/nonutf8.sh [=[
set -e
name="$2/q$(printf '\377').json"
cp "$1" "$name"
for format in json sarif junit; do "$3" verify "$name" --format $format > "$2/nonutf8.$format"; done
"$3" verify "$2/missing$(printf '\377').json" --format junit > "$2/nonutf8-missing.junit" || test $? = 2
]=])
expect("reports for a non-UTF-8 file name" 0 "" sh ${WORK_DIR}/nonutf8.sh ${ex}/quickstart.json ${WORK_DIR} ${CLAMPAI})
if(DEFINED VALIDATE_JSON)
  expect("non-UTF-8 json report matches the schema" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/schema/verify-report.schema.json ${WORK_DIR}/nonutf8.json)
  expect("non-UTF-8 sarif report matches SARIF 2.1.0" 0 "" ${VALIDATE_JSON} ${SOURCE_DIR}/tests/data/sarif-2.1.0.schema.json ${WORK_DIR}/nonutf8.sarif)
endif()
if(DEFINED XMLLINT)
  foreach(f nonutf8.junit nonutf8-missing.junit)
    expect("non-UTF-8 ${f} validates" 0 "" ${XMLLINT} --noout --schema ${SOURCE_DIR}/tests/data/junit.xsd ${WORK_DIR}/${f})
  endforeach()
endif()

# run --lookahead-timeout-ms: accepted with --lookahead (the guard still rejects the trap), and
# its range is checked.
expect("run lookahead timeout" 0 "lookahead_trap" ${CLAMPAI} run ${pv} --lookahead 3 --lookahead-timeout-ms 60000)
expect("run lookahead timeout range" 2 "lookahead-timeout-ms" ${CLAMPAI} run ${pv} --lookahead 3 --lookahead-timeout-ms 0)

# A run longer than the kernel's in-memory trace window (4,096 entries): the report counts every
# entry, the chain it keeps verifies, and the file holds the whole trace, which replays.
file(WRITE ${WORK_DIR}/long.json [=[{"name": "long", "goal": "n >= 5000",
 "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": "1"}]}],
 "budget": {"total": 6000, "min_action_cost": 1}}]=])
file(REMOVE ${WORK_DIR}/long.jsonl)
expect("run beyond the trace window" 0 "\"entries\": 5002,[^}]*\"verified\": true" ${CLAMPAI} run ${WORK_DIR}/long.json --trace ${WORK_DIR}/long.jsonl --format json)
expect("trace beyond the window verifies and replays" 0 "ok: .*5002 entries.*replays" ${CLAMPAI} trace verify ${WORK_DIR}/long.jsonl --spec ${WORK_DIR}/long.json)
