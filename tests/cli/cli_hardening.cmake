# `clampai verify` and `check` on specs with security labels and the invariant library
# (issue 18): the downward flows as findings in every format (reports validated by expect), the pattern templates loaded with
# RE2 and reported as opaque. Invoked by ctest like cli_tests.cmake.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
set(hd "${SOURCE_DIR}/tests/data/hardening")

expect("verify finds the downward flows" 1
  "REFUTED information flow: `leak_if` moves `api_key` \\(SECRET\\) to `public_flag` \\(PUBLIC\\) at actions\\[0\\]\\.effects\\[0\\]\\.value: if api_key > 10 then 1 else 0\nREFUTED information flow: `publish` moves `count` \\(INTERNAL\\) to `sink:public_log` \\(PUBLIC\\) at actions\\[2\\]\\.emits\\[0\\]\\.value: count\ninformation flow: 2 downward of 3 flows of labelled data"
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

if(DEFINED VALIDATE_JSON)
  foreach(spec leaky sealed)
    execute_process(COMMAND ${CLAMPAI} verify ${hd}/${spec}.json --format json
                    OUTPUT_FILE ${WORK_DIR}/${spec}.verify.json)
    expect("verify json ${spec} matches the report schema" 0 ""
      ${VALIDATE_JSON} ${SOURCE_DIR}/schema/verify-report.schema.json ${WORK_DIR}/${spec}.verify.json)
    expect("${spec} matches the task spec schema" 0 ""
      ${VALIDATE_JSON} ${SOURCE_DIR}/schema/task-spec.schema.json ${hd}/${spec}.json)
  endforeach()
endif()
