// `clampai mcp` driven by the official MCP TypeScript SDK's client (npm
// @modelcontextprotocol/sdk, version 1): the handshake, the tools, a whole task to its goal
// with rejections held to the spec, then malformed JSON-RPC, unknown methods and tools, and
// wrong argument types. Run by ctest: node mcp_sdk_test.mjs CLAMPAI SPEC SDK_DIR.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [clampai, spec, sdkDir] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(path.resolve(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { LATEST_PROTOCOL_VERSION, McpError } = await sdk("types.js");

const client = new Client({ name: "clampai-test", version: "1.0.0" });
const transport = new StdioClientTransport({ command: clampai, args: ["mcp", spec], stderr: "inherit" });
await client.connect(transport);
assert.equal(client.getServerVersion().name, "clampai");

// The tools: each action by its id, with its parameters' schema, and the three built-ins.
const { tools } = await client.listTools();
assert.deepEqual(tools.map((t) => t.name), ["scale_up", "set_throttle", "status", "lookahead", "repair"]);
const scaleUp = tools[0];
assert.equal(scaleUp.inputSchema.properties.n.type, "integer");
assert.equal(scaleUp.inputSchema.properties.n.maximum, 100);
assert.equal(tools[1].inputSchema.properties.fraction.type, "number");

const text = (r) => r.content.map((c) => c.text).join("\n");
const status = async () => (await client.callTool({ name: "status", arguments: {} })).structuredContent;

// A whole task: the agent asks for too much, is held to the spec, takes the closest approved
// parameters, and goes on until the goal.
let r;
for (let i = 0; i < 2; ++i) {
  r = await client.callTool({ name: "scale_up", arguments: { n: 2 } });
  assert.equal(r.isError, false, text(r));
  assert.equal(r.structuredContent.approved, true);
}
r = await client.callTool({ name: "scale_up", arguments: { n: 50 } });
assert.equal(r.isError, true);
assert.match(text(r), /rejected `scale_up`/);
assert.equal(r.structuredContent.approved, false);
const closest = r.structuredContent.closest_approved_params;
assert.ok(closest && Number.isInteger(closest.n) && closest.n < 50, JSON.stringify(r.structuredContent));
assert.equal((await status()).state.instances, 8); // the rejection changed nothing
r = await client.callTool({ name: "scale_up", arguments: closest });
assert.equal(r.isError, false, text(r));
let steps = 4;
while (!(await status()).goal_reached) {
  const look = await client.callTool({ name: "lookahead", arguments: { action: "scale_up", params: { n: 1 }, depth: 1 } });
  assert.equal(look.isError, false);
  r = await client.callTool({ name: "scale_up", arguments: { n: 1 } });
  if (r.isError) {
    const fix = await client.callTool({ name: "repair", arguments: { action: "scale_up", params: { n: 1 } } });
    assert.equal(fix.isError, false);
    assert.fail(`scale_up n=1 rejected before the goal: ${text(r)}; repair: ${text(fix)}`);
  }
  assert.ok(++steps < 40, "the goal is reached within the budget");
}
const done = await status();
assert.ok(done.state.instances >= 16);
assert.ok(Number(done.budget.remaining) >= 0); // T1
// Past the capacity invariant: rejected, nothing changes.
r = await client.callTool({ name: "scale_up", arguments: { n: 30 } });
assert.equal(r.isError, true);
assert.deepEqual((await status()).state, done.state);

// Protocol errors: an unknown tool, wrong argument types, an unknown argument.
for (const [name, args, pattern] of [
  ["no_such_tool", {}, /unknown tool `no_such_tool`/],
  ["scale_up", { n: "five" }, /must be an integer/],
  ["scale_up", { n: 1.5 }, /must be an integer/],
  ["scale_up", { m: 1 }, /unknown argument `m`/],
  ["lookahead", { action: 7 }, /must be an action id/],
]) {
  await assert.rejects(client.callTool({ name, arguments: args }), (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.equal(e.code, -32602);
    assert.match(e.message, pattern);
    return true;
  });
}
await assert.rejects(client.request({ method: "resources/list" }, (await sdk("types.js")).ListResourcesResultSchema),
  (e) => e instanceof McpError && e.code === -32601);
await client.close();

// Malformed JSON-RPC on the wire.
const proc = spawn(clampai, ["mcp", spec], { stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
const ask = async (line) => {
  proc.stdin.write(line + "\n");
  return JSON.parse((await lines.next()).value);
};
let m = await ask("{not json");
assert.equal(m.error.code, -32700);
assert.equal(m.id, null);
m = await ask(JSON.stringify({ id: 1, method: "ping" }));
assert.equal(m.error.code, -32600);
m = await ask(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
assert.equal(m.result.protocolVersion, LATEST_PROTOCOL_VERSION); // the current revision
m = await ask(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "no/such/method" }));
assert.equal(m.error.code, -32601);
m = await ask(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "scale_up", arguments: [1] } }));
assert.equal(m.error.code, -32602);
m = await ask(JSON.stringify([{ jsonrpc: "2.0", id: 5, method: "ping" }]));
assert.equal(m.error.code, -32600);
m = await ask(JSON.stringify({ jsonrpc: "2.0", id: "last", method: "ping" }));
assert.deepEqual(m, { jsonrpc: "2.0", id: "last", result: {} });
proc.stdin.end();
const code = await new Promise((resolve) => proc.on("close", resolve));
assert.equal(code, 0);
console.log(`mcp: a whole task in ${steps} calls through the SDK client; protocol errors as specified`);
