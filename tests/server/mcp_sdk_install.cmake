# Installs, into DIR, what the Node tests drive `clampai` with, once: later runs find it there
# (the cache): the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk, version 1) for
# tests/server/mcp_sdk_test.mjs, and puppeteer-core (version 24: Node 18 or later) for
# tests/report/report_browser.mjs, which drives Debian's chromium with it.
set(PACKAGES "@modelcontextprotocol/sdk@1" "puppeteer-core@24")
if(EXISTS "${DIR}/node_modules/@modelcontextprotocol/sdk/package.json"
   AND EXISTS "${DIR}/node_modules/puppeteer-core/package.json")
  return()
endif()
file(MAKE_DIRECTORY "${DIR}")
file(WRITE "${DIR}/package.json" "{\"name\": \"clampai-mcp-test\", \"private\": true, \"type\": \"module\"}\n")
execute_process(COMMAND "${NPM}" install --no-audit --no-fund ${PACKAGES}
                WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "npm install ${PACKAGES} failed (${rc}): the registry must be reachable")
endif()
