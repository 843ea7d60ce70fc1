# Installs the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk, version 1) into DIR
# for tests/server/mcp_sdk_test.mjs, once: later runs find it there (the cache).
if(EXISTS "${DIR}/node_modules/@modelcontextprotocol/sdk/package.json")
  return()
endif()
file(MAKE_DIRECTORY "${DIR}")
file(WRITE "${DIR}/package.json" "{\"name\": \"clampai-mcp-test\", \"private\": true, \"type\": \"module\"}\n")
execute_process(COMMAND "${NPM}" install --no-audit --no-fund @modelcontextprotocol/sdk@1
                WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "npm install @modelcontextprotocol/sdk@1 failed (${rc}): the registry must be reachable")
endif()
