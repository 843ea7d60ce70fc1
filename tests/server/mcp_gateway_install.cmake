# Installs, into DIR, what tests/server/gateway_test.mjs drives through `clampai gateway`: the
# official MCP TypeScript SDK (version 1, its client) and the reference servers
# @modelcontextprotocol/server-filesystem and server-memory (pinned), once: later runs find
# them there (the cache).
set(SERVERS "@modelcontextprotocol/sdk@1" "@modelcontextprotocol/server-filesystem@2026.8.31"
            "@modelcontextprotocol/server-memory@2026.8.31")
if(EXISTS "${DIR}/node_modules/@modelcontextprotocol/sdk/package.json"
   AND EXISTS "${DIR}/node_modules/@modelcontextprotocol/server-filesystem/package.json"
   AND EXISTS "${DIR}/node_modules/@modelcontextprotocol/server-memory/package.json")
  return()
endif()
file(MAKE_DIRECTORY "${DIR}")
file(WRITE "${DIR}/package.json" "{\"name\": \"clampai-gateway-test\", \"private\": true, \"type\": \"module\"}\n")
execute_process(COMMAND "${NPM}" install --no-audit --no-fund ${SERVERS}
                WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "npm install ${SERVERS} failed (${rc}): the registry must be reachable")
endif()
