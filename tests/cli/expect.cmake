if(NOT DEFINED report_n)
  set(report_n 0)
endif()
# Every report a test sees in a CI format is checked against its format's schema: JUnit XML
# against tests/data/junit.xsd (xmllint), SARIF against the SARIF 2.1.0 schema (validate_json).
function(check_report name args out)
  list(FIND args "--format" at)
  if(at EQUAL -1)
    return()
  endif()
  math(EXPR at "${at} + 1")
  list(GET args ${at} format)
  math(EXPR n "${report_n} + 1")
  set(report_n ${n} PARENT_SCOPE)
  set(file "${WORK_DIR}/report_${n}.${format}")
  file(WRITE "${file}" "${out}")
  if(format STREQUAL "junit" AND DEFINED XMLLINT)
    execute_process(COMMAND ${XMLLINT} --noout --schema ${SOURCE_DIR}/tests/data/junit.xsd ${file}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    if(NOT rc EQUAL 0)
      message(SEND_ERROR "${name}: the JUnit report does not validate against junit.xsd:\n${o}${e}\n${out}")
    endif()
  elseif(format STREQUAL "sarif" AND DEFINED VALIDATE_JSON)
    execute_process(COMMAND ${VALIDATE_JSON} ${SOURCE_DIR}/tests/data/sarif-2.1.0.schema.json ${file}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    if(NOT rc EQUAL 0)
      message(SEND_ERROR "${name}: the SARIF report does not validate against SARIF 2.1.0:\n${o}${e}")
    endif()
  endif()
endfunction()

# expect(NAME RC PATTERN COMMAND...): runs COMMAND (at most 300 s, so that a read that blocks
# fails instead of hanging) and checks its exit code and that stdout+stderr match PATTERN; a
# report in a CI format is validated against its schema.
function(expect name expected_rc pattern)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 300)
  set(all "${out}${err}")
  if(NOT rc STREQUAL expected_rc)
    message(SEND_ERROR "${name}: exit code ${rc}, expected ${expected_rc}\n${all}")
  elseif(NOT "${pattern}" STREQUAL "" AND NOT all MATCHES "${pattern}")
    message(SEND_ERROR "${name}: output does not match `${pattern}`:\n${all}")
  else()
    message(STATUS "ok: ${name}")
  endif()
  check_report("${name}" "${ARGN}" "${out}")
  set(report_n ${report_n} PARENT_SCOPE)
endfunction()
