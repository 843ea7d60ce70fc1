# Replays every seed corpus through its entry (as scripts/fuzz.sh seeds the fuzzers).
# Invoked by ctest with -DREPLAY (fuzz_replay) and -DSOURCE_DIR.
function(replay target)
  execute_process(COMMAND ${REPLAY} --target ${target} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ${target} seeds: ${out}${err}")
  endif()
  message(STATUS "${target}: ${out}")
endfunction()
file(GLOB spec_seeds ${SOURCE_DIR}/examples/*.json ${SOURCE_DIR}/examples/compose/*.json
     ${SOURCE_DIR}/tests/data/*.json)
file(GLOB manifest_seeds ${SOURCE_DIR}/examples/compose/*.json
     ${SOURCE_DIR}/tests/data/compose/*/*.json)
replay(expression ${SOURCE_DIR}/fuzz/seeds/expression)
replay(spec ${spec_seeds})
replay(trace ${SOURCE_DIR}/fuzz/seeds/trace)
replay(manifest ${manifest_seeds})
replay(params ${SOURCE_DIR}/fuzz/seeds/params)
replay(service ${SOURCE_DIR}/fuzz/seeds/service)
replay(mcp ${SOURCE_DIR}/fuzz/seeds/mcp)
replay(bindings ${SOURCE_DIR}/fuzz/seeds/bindings)
replay(principals ${SOURCE_DIR}/fuzz/seeds/principals)
replay(pools ${SOURCE_DIR}/fuzz/seeds/pools)
