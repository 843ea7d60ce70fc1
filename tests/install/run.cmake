# Installs the build tree into a scratch prefix, builds tests/install against it, runs it.
# Invoked by ctest with -DBINARY_DIR -DSOURCE_DIR -DWORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "`${ARGN}` failed (${rc}):\n${out}${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DQUICKSTART=${SOURCE_DIR}/examples/cpp/quickstart.cpp)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
if(NOT last_output MATCHES "goal reached")
  message(FATAL_ERROR "the installed quick start printed: ${last_output}")
endif()
run(${WORK_DIR}/build/compose_consumer ${SOURCE_DIR}/examples/compose/pipeline.json)
if(NOT last_output MATCHES "composed: [0-9]+ proved, 0 refuted")
  message(FATAL_ERROR "the installed composition printed: ${last_output}")
endif()
run(${WORK_DIR}/build/driver_consumer ${SOURCE_DIR}/examples/quickstart.json)
if(NOT last_output MATCHES "run: goal_reached after 2 steps")
  message(FATAL_ERROR "the installed driver printed: ${last_output}")
endif()
run(${WORK_DIR}/build/report_consumer ${SOURCE_DIR}/examples/compose/pipeline.json)
if(NOT last_output MATCHES "<testsuites name=\"clampai compose\" tests=\"[0-9]+\" failures=\"0\"")
  message(FATAL_ERROR "the installed report library printed: ${last_output}")
endif()
run(${WORK_DIR}/build/service_consumer ${SOURCE_DIR}/examples/quickstart.json process_batch)
if(NOT last_output MATCHES "agent: goal_reached after [0-9]+ steps\nserver: 200 [{]\"task\":\"quickstart\",\"action\":\"process_batch\",\"approved\":true")
  message(FATAL_ERROR "the installed agent and server printed: ${last_output}")
endif()
run(${WORK_DIR}/build/extras_consumer)
if(NOT last_output MATCHES "ledger: 1 postgresql://me:[^ ]*@localhost/db#task task" OR last_output MATCHES "secret")
  message(FATAL_ERROR "the installed ledger library printed: ${last_output}")
endif()

# Installed like a tool: schemas, pkg-config file, completions, man page, release notes.
# The install directories are the build's (GNUInstallDirs), passed in by ctest.
set(prefix ${WORK_DIR}/prefix)
foreach(f
    ${CMAKE_INSTALL_DATADIR}/clampai/schema/task-spec.schema.json
    ${CMAKE_INSTALL_DATADIR}/clampai/schema/verify-report.schema.json
    ${CMAKE_INSTALL_DATADIR}/clampai/schema/error-report.schema.json
    ${CMAKE_INSTALL_LIBDIR}/pkgconfig/clampai.pc
    ${CMAKE_INSTALL_DATADIR}/bash-completion/completions/clampai
    ${CMAKE_INSTALL_DATADIR}/zsh/site-functions/_clampai
    ${CMAKE_INSTALL_MANDIR}/man1/clampai.1
    ${CMAKE_INSTALL_DOCDIR}/CHANGELOG.md
    ${CMAKE_INSTALL_INCLUDEDIR}/clampai/report/format.hpp
    ${CMAKE_INSTALL_INCLUDEDIR}/clampai/server/service.hpp
    ${CMAKE_INSTALL_INCLUDEDIR}/clampai/agent/orchestrator.hpp
    ${CMAKE_INSTALL_INCLUDEDIR}/clampai/hardening/monitor.hpp
    ${CMAKE_INSTALL_INCLUDEDIR}/clampai/ledger/ledger.hpp)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
run(${prefix}/${CMAKE_INSTALL_BINDIR}/clampai --version)
if(NOT last_output MATCHES "^clampai [0-9]+\\.[0-9]+\\.[0-9]+\ntoolkit: clampai [0-9.]+ \\(sources [0-9a-f]+\\)")
  message(FATAL_ERROR "clampai --version printed: ${last_output}")
endif()

# pkg-config --cflags --libs clampai builds the quick start against the installed tree.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${prefix}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  run(${PKG_CONFIG} --cflags --libs clampai)
  string(STRIP "${last_output}" flags)
  if(NOT flags MATCHES "-I${prefix}/[^ ]*include" AND NOT flags MATCHES "/include")
    message(FATAL_ERROR "pkg-config --cflags names no include directory: ${flags}")
  endif()
  run(${PKG_CONFIG} --variable=schemadir clampai)
  string(STRIP "${last_output}" schemadir)
  if(NOT EXISTS ${schemadir}/task-spec.schema.json)
    message(FATAL_ERROR "pkg-config's schemadir ${schemadir} has no task-spec.schema.json")
  endif()
  separate_arguments(flag_list UNIX_COMMAND "${flags}")
  run(${CXX} ${SOURCE_DIR}/examples/cpp/quickstart.cpp ${flag_list} -o ${WORK_DIR}/pc_consumer)
  run(${WORK_DIR}/pc_consumer)
  if(NOT last_output MATCHES "goal reached")
    message(FATAL_ERROR "the quick start built with pkg-config printed: ${last_output}")
  endif()
endif()

# The man page renders without warnings.
find_program(GROFF groff)
if(GROFF)
  execute_process(COMMAND ${GROFF} -man -Tutf8 -P-cbou -ww ${prefix}/${CMAKE_INSTALL_MANDIR}/man1/clampai.1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE page ERROR_VARIABLE warnings)
  if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "" OR NOT page MATCHES "EXIT STATUS")
    message(FATAL_ERROR "the man page does not render cleanly (${rc}):\n${warnings}")
  endif()
endif()

# The bash completion sources cleanly and completes subcommands and option values.
find_program(BASH bash)
if(BASH)
  set(completion ${prefix}/${CMAKE_INSTALL_DATADIR}/bash-completion/completions/clampai)
  file(WRITE ${WORK_DIR}/complete.sh [=[
set -eu
source "$1"
complete -p clampai
COMP_WORDS=(clampai comp); COMP_CWORD=1; _clampai; echo "A:${COMPREPLY[*]}"
COMP_WORDS=(clampai verify x.json --format ''); COMP_CWORD=4; _clampai; echo "B:${COMPREPLY[*]}"
]=])
  run(${BASH} ${WORK_DIR}/complete.sh ${completion})
  if(NOT last_output MATCHES "-F _clampai clampai\nA:compose\nB:text json sarif junit")
    message(FATAL_ERROR "the bash completion printed: ${last_output}")
  endif()
endif()
find_program(ZSH zsh)
if(ZSH)
  run(${ZSH} -n ${prefix}/${CMAKE_INSTALL_DATADIR}/zsh/site-functions/_clampai)
endif()
