# `clampai report` (issue 42) as a user meets it: what it recognises, what it refuses, its exit
# codes, OUT never clobbered, and a page of bounded size for a long trace. What the pages show
# is checked in a browser by tests/report/report_browser.mjs.
# Invoked by ctest with -DCLAMPAI=<binary> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir>.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(ex "${SOURCE_DIR}/examples")
set(w "${WORK_DIR}")

execute_process(COMMAND ${CLAMPAI} run ${ex}/cloud_deploy.json --trace ${w}/cloud.jsonl --record-rejections -q OUTPUT_QUIET)
expect("report a run, replayed" 0 "^wrote ${w}/run.html: ${w}/cloud.jsonl \\(run, replayed\\)\n$"
       ${CLAMPAI} report ${w}/cloud.jsonl --spec ${ex}/cloud_deploy.json --html ${w}/run.html)
file(READ ${w}/run.html page)
foreach(needle "<!DOCTYPE html>" "Content-Security-Policy\" content=\"default-src 'none'"
               "data-figure=\"net\">13.000<" "data-total=\"20.000\"" "data-code=\"requires_failed\" data-count=\"6\""
               "data-invariant=\"instance_cap\"" "@media print")
  string(FIND "${page}" "${needle}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "the run's page lacks `${needle}`")
  endif()
endforeach()
# Self-contained: no reference to anything outside the file.
if(page MATCHES "(src|href)=\"(https?:)?//" OR page MATCHES "@import" OR page MATCHES "url\\((['\"])?https?:")
  message(SEND_ERROR "the run's page refers to something outside it")
endif()

expect("report refuses an existing OUT" 2 "cannot write the HTML report `${w}/run.html`: it exists \\(--force replaces it\\)"
       ${CLAMPAI} report ${w}/cloud.jsonl --html ${w}/run.html)
file(SIZE ${w}/run.html before)
expect("report --force replaces OUT" 0 "^wrote ${w}/run.html: ${w}/cloud.jsonl \\(run\\)\n$"
       ${CLAMPAI} report ${w}/cloud.jsonl --html ${w}/run.html --force)
file(READ ${w}/run.html page)
string(FIND "${page}" "not replayed (give <code>--spec</code>" at)
if(at EQUAL -1)
  message(SEND_ERROR "the page of a trace without --spec does not say it was not replayed")
endif()
file(CREATE_LINK ${w}/elsewhere.html ${w}/link.html SYMBOLIC)
expect("report never writes through a symbolic link" 2 "link.html.*symbolic link"
       ${CLAMPAI} report ${w}/cloud.jsonl --html ${w}/link.html --force)
if(EXISTS ${w}/elsewhere.html)
  message(SEND_ERROR "report wrote through a symbolic link")
endif()

# What an input is: by its content, never its name.
expect("report refuses a spec" 2 "quickstart.json: not a report `clampai report` draws"
       ${CLAMPAI} report ${ex}/quickstart.json --html ${w}/spec.html)
execute_process(COMMAND ${CLAMPAI} verify ${w}/nope.json --format json OUTPUT_FILE ${w}/error.json ERROR_QUIET)
expect("report refuses an error report" 2 "error.json: the error report of `clampai verify`: it holds no results to draw"
       ${CLAMPAI} report ${w}/error.json --html ${w}/error.html)
file(WRITE ${w}/notjson.txt "hello\n")
expect("report refuses what is not JSON" 2 "notjson.txt: neither a trace .* nor a JSON report"
       ${CLAMPAI} report ${w}/notjson.txt --html ${w}/notjson.html)
# Adversarial reports: the members a section reads, of the wrong type, are bad input.
file(WRITE ${w}/bad_verify.json "{\"spec\": \"x\", \"summary\": {}, \"facts\": [], \"obligations\": 5}")
expect("report: obligations not an array" 2 "bad_verify.json: `obligations` is not an array as the verify report's schema says"
       ${CLAMPAI} report ${w}/bad_verify.json --html ${w}/bad_verify.html)
file(WRITE ${w}/bad_agent.json "{\"spec\": \"x.json\", \"llm\": \"mock\", \"termination\": \"stuck\", \"log\": [{\"step\": 1, \"approved\": \"yes\"}]}")
expect("report: a log entry of the wrong type" 2 "bad_agent.json: not a well-formed agent report \\(its schema: schema/agent-report.schema.json\\): .*type must be boolean"
       ${CLAMPAI} report ${w}/bad_agent.json --html ${w}/bad_agent.html)
file(WRITE ${w}/bad_compose.json "{\"manifest\": \"m\", \"summary\": [], \"tasks\": [], \"obligations\": []}")
expect("report: a summary not an object" 2 "`summary` is not an object"
       ${CLAMPAI} report ${w}/bad_compose.json --html ${w}/bad_compose.html)
file(WRITE ${w}/garbage.jsonl "{\"seq\": 0, \"kind\": \"genesis\"}\nnot json\n")
expect("report: a trace whose lines are no entries" 1 "wrote" ${CLAMPAI} report ${w}/garbage.jsonl --html ${w}/garbage.html)
expect("report: a missing input" 2 "missing.jsonl" ${CLAMPAI} report ${w}/missing.jsonl --html ${w}/missing.html)
foreach(f spec.html error.html notjson.html missing.html bad_verify.html bad_agent.html bad_compose.html)
  if(EXISTS ${w}/${f})
    message(SEND_ERROR "report wrote ${f} for bad input")
  endif()
endforeach()
execute_process(COMMAND ${CLAMPAI} verify ${ex}/cloud_deploy.json --format json OUTPUT_FILE ${w}/verify.json)
execute_process(COMMAND ${CLAMPAI} compose ${ex}/compose/pipeline.json --format json OUTPUT_FILE ${w}/compose.json)
execute_process(COMMAND ${CLAMPAI} agent ${ex}/agent_release.json --llm mock --format json -q OUTPUT_FILE ${w}/agent.json)
expect("report several inputs, each recognised" 0
       "wrote ${w}/all.html: ${w}/verify.json \\(verify\\), ${w}/compose.json \\(compose\\), ${w}/agent.json \\(agent\\), ${w}/cloud.jsonl \\(run\\)"
       ${CLAMPAI} report ${w}/verify.json ${w}/compose.json ${w}/agent.json ${w}/cloud.jsonl --html ${w}/all.html --layout builtin)
file(READ ${w}/all.html page)
string(FIND "${page}" "data-obligation=\"preservation:scale_up:instance_cap\"><button type=\"button\" class=\"cell\" aria-expanded=\"false\"" at)
if(at EQUAL -1)
  message(SEND_ERROR "the verify grid lacks the refuted cell's button")
endif()

# A broken chain, or a replay that differs: the page is written and says where; exit 1.
file(STRINGS ${w}/cloud.jsonl lines)
list(GET lines 3 line)
string(REPLACE "\"net\":\"5.000\"" "\"net\":\"4.000\"" bad "${line}")
list(REMOVE_AT lines 3)
list(INSERT lines 3 "${bad}")
list(JOIN lines "\n" text)
file(WRITE ${w}/broken.jsonl "${text}\n")
expect("report a broken trace" 1 "wrote" ${CLAMPAI} report ${w}/broken.jsonl --html ${w}/broken.html)
file(READ ${w}/broken.html page)
if(NOT page MATCHES "✗ broken</span>: [^<]*entry 3")
  message(SEND_ERROR "the page of a broken trace does not name entry 3")
endif()
expect("report a trace replayed with another spec" 1 "wrote"
       ${CLAMPAI} report ${w}/cloud.jsonl --spec ${ex}/quickstart.json --html ${w}/other.html)
file(READ ${w}/other.html page)
if(NOT page MATCHES "✗ replay differs</span>: entry 0: replay: ")
  message(SEND_ERROR "the page of a replay that differs does not say so")
endif()

# A long trace gives a page of bounded size: 10 times the entries, about the same size.
file(WRITE ${w}/long.json [=[{"name": "long", "goal": "n >= 40000",
 "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": "1"}]}],
 "invariants": [{"name": "cap", "check": "n <= 50000"}],
 "budget": {"total": 50000, "min_action_cost": 1}}]=])
file(WRITE ${w}/short.json [=[{"name": "long", "goal": "n >= 4000",
 "variables": {"n": {"type": "int", "initial": 0, "min": 0}},
 "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": "1"}]}],
 "invariants": [{"name": "cap", "check": "n <= 50000"}],
 "budget": {"total": 50000, "min_action_cost": 1}}]=])
foreach(n long short)
  execute_process(COMMAND ${CLAMPAI} run ${w}/${n}.json --trace ${w}/${n}.jsonl -q OUTPUT_QUIET)
  expect("report ${n} run" 0 "wrote" ${CLAMPAI} report ${w}/${n}.jsonl --spec ${w}/${n}.json --html ${w}/${n}.html)
  file(SIZE ${w}/${n}.html size_${n})
endforeach()
math(EXPR limit "${size_short} * 3 / 2")
if(size_long GREATER limit OR size_long GREATER 400000)
  message(SEND_ERROR "a trace of 40,002 entries gives a page of ${size_long} bytes, 4,002 entries ${size_short}")
else()
  message(STATUS "ok: pages of ${size_short} bytes (4,002 entries) and ${size_long} bytes (40,002 entries)")
endif()
file(READ ${w}/long.html page)
if(NOT page MATCHES "data-figure=\"entries\">40002<" OR NOT page MATCHES "data-figure=\"net\">40000.000<")
  message(SEND_ERROR "the long run's page lacks its exact figures")
endif()
