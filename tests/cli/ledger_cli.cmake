# `clampai run --ledger` and `trace verify` of a ledger without a database (issue 21): memory and
# file ledgers, and the errors of bad ledger URLs. The PostgreSQL side: tests/ledger/faults.sh.
# Invoked by ctest with -DCLAMPAI=<binary> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(ex "${SOURCE_DIR}/examples")

expect("run on a memory ledger" 0 "\"actions\": \\[[^]]*\"process_batch\".*\"commits\": 3,.*\"conflicts\": 0"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger memory: --format json)
# A file ledger is a trace file: the first run commits, the second finds the goal reached on the
# shared head and commits nothing; the file verifies and replays as any trace.
expect("run on a file ledger" 0 "goal reached.*ledger: .*: 3 commits by this process"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger file:${WORK_DIR}/shared.jsonl)
expect("a second run on the file ledger" 0 "\"actions\": \\[\\]"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger ${WORK_DIR}/shared.jsonl --format json)
expect("the file ledger verifies" 0 "ok: .*3 entries.*replays"
       ${CLAMPAI} trace verify ${WORK_DIR}/shared.jsonl --allow-unsealed --spec ${ex}/quickstart.json)
# `trace verify` takes the ledger's URL as `--ledger` does (issue 37): file:PATH is verified as a
# live ledger (no seal required, no --allow-unsealed); a memory: ledger has nothing to verify.
expect("trace verify file:PATH" 0 "ok: ${WORK_DIR}/shared.jsonl: 3 entries, chain intact, not sealed; replays"
       ${CLAMPAI} trace verify file:${WORK_DIR}/shared.jsonl --spec ${ex}/quickstart.json)
expect("trace verify file://PATH" 0 "ok: ${WORK_DIR}/shared.jsonl: 3 entries, chain intact, not sealed"
       ${CLAMPAI} trace verify file://${WORK_DIR}/shared.jsonl)
expect("trace verify of a missing file: ledger" 2 "cannot read `${WORK_DIR}/none.jsonl`"
       ${CLAMPAI} trace verify file:${WORK_DIR}/none.jsonl)
expect("trace verify memory:" 2 "a memory: ledger lives only in the process that opened it"
       ${CLAMPAI} trace verify memory:)
expect("a file ledger of another spec" 2 "another spec"
       ${CLAMPAI} run ${ex}/payments.json --ledger file:${WORK_DIR}/shared.jsonl)

expect("an unknown ledger" 2 "unknown ledger `bogus://x`"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger bogus://x)
expect("--ledger excludes --trace" 2 "excludes"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger memory: --trace ${WORK_DIR}/t.jsonl)
expect("an empty task fragment" 2 "empty fragment"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger "postgresql:///x#")
expect("no server" 2 "cannot connect to the ledger postgresql:///x\\?host=${WORK_DIR}/none"
       ${CLAMPAI} trace verify "postgresql:///x?host=${WORK_DIR}/none#quickstart")
expect("a password is not shown" 2 "postgresql://u:\\*\\*\\*@"
       ${CLAMPAI} trace verify "postgresql://u:secret@/x?host=${WORK_DIR}/none#t")


# Escrow mode: its URL parameters and the specs it refuses are checked before any connection.
expect("escrow mode refuses a spec whose decisions read the state" 2
       "cannot run `[a-z_]+` in escrow mode: escrow mode shares only the budget"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger "postgresql:///x?host=${WORK_DIR}/none&escrow=3")
# A task in a budget pool (issue 41): a lease reserves a slice of its own budget only.
file(WRITE ${WORK_DIR}/pooled.json
     "{\"name\": \"pooled\", \"variables\": {\"last\": {\"type\": \"int\", \"initial\": 0}},"
     " \"actions\": [{\"id\": \"call\", \"cost\": 1, \"effects\": [{\"variable\": \"last\","
     " \"mode\": \"set\", \"value\": 1}]}],"
     " \"budget\": {\"total\": 5, \"min_action_cost\": 1, \"pool\": \"team-a\"}}")
expect("escrow mode refuses a task in a pool" 2
       "cannot run `pooled` in escrow mode: .*the budget is in pool `team-a`, and a lease reserves a slice of the task's own budget only.*escrow mode does not keep budget pools.*use the shared mode"
       ${CLAMPAI} run ${WORK_DIR}/pooled.json --ledger "postgresql:///x?host=${WORK_DIR}/none&escrow=1")
expect("a bad escrow slice" 2 "escrow=ten is not a slice of budget > 0"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger "postgresql:///x?escrow=ten")
expect("a bad escrow lifetime" 2 "escrow_lease=-1 is not a lifetime in seconds > 0"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger "postgresql:///x?escrow=1&escrow_lease=-1")
expect("a bad escrow batch" 2 "escrow_batch=0 is not a whole number"
       ${CLAMPAI} run ${ex}/quickstart.json --ledger "postgresql:///x?escrow=1&escrow_batch=0")

# --record-rejections, --lookahead and --recover on a ledger: the lookahead's veto is committed
# to the shared trace, and a second process without a lookahead follows it (a guard's veto is
# replayed as recorded); recovery rolls back through the ledger.
expect("run --ledger with --lookahead --record-rejections" 0
       "\"lookahead_trap\": 1,.*\"entries\": 17"
       ${CLAMPAI} run ${ex}/pressure_vessel.json --ledger file:${WORK_DIR}/vessel.jsonl
       --lookahead 3 --record-rejections --recover --format json)
expect("a second run follows the recorded veto" 0 "goal reached.*: 0 commits by this process"
       ${CLAMPAI} run ${ex}/pressure_vessel.json --ledger file:${WORK_DIR}/vessel.jsonl)
expect("the vessel's ledger verifies" 0 "ok: .*17 entries.*replays"
       ${CLAMPAI} trace verify ${WORK_DIR}/vessel.jsonl --allow-unsealed --spec ${ex}/pressure_vessel.json)
expect("run --ledger --recover rolls back" 1 "\"recovery\": \\[\n *\"rolled back `build`\""
       ${CLAMPAI} run ${ex}/agent_release.json --ledger memory: --recover --format json)

# `agent --ledger` and `serve --ledger` without a database.
expect("agent on a file ledger" 0 "goal reached.*trace +3 entries.*chain verified.*ledger: .*: 3 commits"
       ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --ledger file:${WORK_DIR}/agent.jsonl)
expect("a second agent finds the goal reached" 0 "\"executed\": 0,.*\"commits\": 0"
       ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --ledger file:${WORK_DIR}/agent.jsonl --format json)
expect("agent --ledger excludes --trace" 2 "excludes"
       ${CLAMPAI} agent ${ex}/quickstart.json --llm mock --ledger memory: --trace ${WORK_DIR}/a.jsonl)
expect("serve --ledger takes a database" 2 "serve keeps its tasks in a postgresql://"
       ${CLAMPAI} serve --ledger memory: --insecure-no-auth)
expect("serve --ledger names tasks by their specs" 2 "drop the `#TASK` fragment"
       ${CLAMPAI} serve --ledger "postgresql:///x#t" --insecure-no-auth)
expect("serve --ledger and --data-dir" 2 "--data-dir and --ledger cannot be combined"
       ${CLAMPAI} serve --ledger "postgresql:///x" --data-dir ${WORK_DIR} --insecure-no-auth)
# Budget pools on a ledger (issue 41): the pools file is read before any connection, a ledger
# that is not PostgreSQL keeps no pools, a task in a pool needs a ledger that keeps them, and
# --pools with --ledger points at `clampai ledger pools apply`. The PostgreSQL side:
# tests/ledger/pools.sh.
file(WRITE ${WORK_DIR}/bad-pools.json "{\"pools\": {\"org\": {\"total\": 10}, \"team-a\": {\"total\": 4, \"parent\": \"orgg\"}}}\n")
file(WRITE ${WORK_DIR}/pools.json "{\"pools\": {\"team-a\": {\"total\": 4}}}\n")
file(WRITE ${WORK_DIR}/pooled.json [=[{"name": "pooled", "variables": {"n": {"type": "int", "initial": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]}],
 "budget": {"total": 10, "min_action_cost": 1, "pool": "team-a"}}
]=])
expect("ledger pools apply: a bad pools file, before connecting" 2
       "bad-pools.json:1:[0-9]+: pools.team-a.parent: unknown parent pool `orgg` \\(did you mean `org`\\?\\)"
       ${CLAMPAI} ledger pools apply ${WORK_DIR}/bad-pools.json --ledger "postgresql:///x?host=/nonexistent")
expect("ledger pools apply: an unreachable ledger" 2 "cannot connect to the ledger"
       ${CLAMPAI} ledger pools apply ${WORK_DIR}/pools.json --ledger "postgresql:///x?host=/nonexistent")
expect("ledger pools show: a file ledger keeps no pools" 2 "kept on a PostgreSQL ledger only, not `file:x`"
       ${CLAMPAI} ledger pools show --ledger file:x)
expect("run --ledger: a task in a pool on a file ledger" 2 "keeps no budget pools \\(the budget is in pool `team-a`\\)"
       ${CLAMPAI} run ${WORK_DIR}/pooled.json --ledger file:${WORK_DIR}/pooled.jsonl)
expect("run --ledger --pools" 2 "with --ledger the budget pools are the ledger's.*clampai ledger pools apply"
       ${CLAMPAI} run ${WORK_DIR}/pooled.json --ledger memory: --pools ${WORK_DIR}/pools.json)
expect("agent --ledger --pools" 2 "with --ledger the budget pools are the ledger's"
       ${CLAMPAI} agent ${WORK_DIR}/pooled.json --llm mock --ledger memory: --pools ${WORK_DIR}/pools.json)
