# expect(NAME RC PATTERN COMMAND...): runs COMMAND (at most 60 s, so that a read that blocks
# fails instead of hanging) and checks its exit code and that stdout+stderr match PATTERN.
function(expect name expected_rc pattern)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 60)
  set(all "${out}${err}")
  if(NOT rc STREQUAL expected_rc)
    message(SEND_ERROR "${name}: exit code ${rc}, expected ${expected_rc}\n${all}")
  elseif(NOT "${pattern}" STREQUAL "" AND NOT all MATCHES "${pattern}")
    message(SEND_ERROR "${name}: output does not match `${pattern}`:\n${all}")
  else()
    message(STATUS "ok: ${name}")
  endif()
endfunction()
