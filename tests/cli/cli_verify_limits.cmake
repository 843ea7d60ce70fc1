# `clampai verify`'s limits and determinism (issues 34 and 35): every solver call within its
# time limit, a whole-run limit (`--timeout`), a query Z3 cannot interrupt that spoils nothing
# else, and output that does not depend on `--jobs`. Nothing here is timed: the ctest TIMEOUT
# only bounds the process.
# Invoked by ctest with -DCLAMPAI=<binary> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

set(data "${SOURCE_DIR}/tests/data/verify")
set(ex "${SOURCE_DIR}/examples")

# The JSON report of `verify ARGS...` without its wall-clock time, in VAR.
function(report_of var)
  execute_process(COMMAND ${CLAMPAI} verify ${ARGN} --format json --quiet
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc MATCHES "^[013]$")
    message(SEND_ERROR "verify ${ARGN}: exit code ${rc}\n${err}")
  endif()
  string(REGEX REPLACE "\"seconds\": [0-9.e+-]+" "\"seconds\": 0" out "${out}")
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# The same report, byte for byte, with 1, 2 and 3 jobs: counterexample values included (the
# autoscale example's differed with 2 jobs when a worker's context kept earlier obligations).
foreach(spec ${ex}/autoscale.json ${ex}/cloud_deploy.json ${ex}/payments.json)
  report_of(one ${spec} --jobs 1)
  if(NOT one MATCHES "\"counterexample\"")
    message(SEND_ERROR "verify ${spec}: no counterexample to compare")
  endif()
  foreach(jobs 2 3)
    report_of(other ${spec} --jobs ${jobs})
    if(NOT one STREQUAL other)
      file(WRITE ${WORK_DIR}/jobs1.json "${one}")
      file(WRITE ${WORK_DIR}/jobs${jobs}.json "${other}")
      message(SEND_ERROR "verify ${spec}: the report with --jobs ${jobs} differs from --jobs 1 "
                         "(${WORK_DIR}/jobs1.json, ${WORK_DIR}/jobs${jobs}.json)")
    else()
      message(STATUS "ok: verify ${spec} --jobs ${jobs} is --jobs 1's report")
    endif()
  endforeach()
endforeach()

# A guard Z3's sequence theory does not interrupt (it used to run for 20 s, take 3.6 GB and
# make later obligations fail with "Overflow encountered when expanding vector"): its
# obligations are unknown, everything else is decided, with any number of jobs.
foreach(jobs 1 2)
  expect("nested contains --jobs ${jobs}" 3
         "UNKNOWN preservation:push:short: [^\n]*\n.*summary: 6 obligations: 4 proved, 0 refuted, 2 unknown; 2 lint warnings"
         ${CLAMPAI} verify ${data}/nested_contains.json --timeout-ms 200 --jobs ${jobs})
endforeach()
execute_process(COMMAND ${CLAMPAI} verify ${data}/nested_contains.json --timeout-ms 200
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
if("${out}${err}" MATCHES "Overflow encountered|lint:consistent|bump")
  message(SEND_ERROR "nested contains: a failure spread to other obligations:\n${out}${err}")
endif()

# The whole-run limit: a deep search (50 steps of 10 actions, all obligations proved) under a
# small `--timeout` ends unknown, exit 3; what was not finished says so.
expect("verify --timeout" 3 "not checked: the run's time limit|the search is incomplete"
       ${CLAMPAI} verify ${data}/ten_actions.json --depth 50 --timeout-ms 1000 --timeout 0.05)
expect("verify --timeout --fail-on-unknown" 1 ""
       ${CLAMPAI} verify ${data}/ten_actions.json --depth 50 --timeout 0.05 --fail-on-unknown)
expect("verify --timeout json" 3 "\"verdict\": \"unknown\"|\"complete\": false"
       ${CLAMPAI} verify ${data}/ten_actions.json --depth 50 --timeout 0.05 --format json)
expect("verify --timeout 0 is no limit" 0 "summary: 2 obligations: 2 proved"
       ${CLAMPAI} verify ${ex}/quickstart.json --timeout 0)
expect("verify --timeout negative" 2 "--timeout"
       ${CLAMPAI} verify ${ex}/quickstart.json --timeout -1)
expect("verify --timeout not a number" 2 "--timeout"
       ${CLAMPAI} verify ${ex}/quickstart.json --timeout soon)
expect("verify --help names --timeout" 0 "--timeout FLOAT[^\n]*\n *Wall-time limit of the whole run"
       ${CLAMPAI} verify --help)
