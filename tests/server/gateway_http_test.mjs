// `clampai gateway --port 0 --token-file F` (issue 39) between the official MCP TypeScript SDK's
// client over Streamable HTTP (StreamableHTTPClientTransport) and a fake upstream
// (gateway_fake_upstream.mjs): initialize, tools/list, an approved call that reaches the
// upstream, a rejected one that does not, a client without the token refused, the session ended
// by the client (DELETE), and the gateway stopped by SIGTERM with its trace sealed. Run by ctest:
// node gateway_http_test.mjs CLAMPAI SOURCE_DIR NODE_DIR (the packages installed by
// mcp_gateway_install.cmake).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [clampai, source, dir] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(path.resolve(dir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const fake = path.join(source, "tests/server/gateway_fake_upstream.mjs");
const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "clampai-gateway-http-")));
const text = (r) => r.content.map((c) => c.text).join("\n");

const r = spawnSync(clampai, ["gateway", "--print-bindings", "--", "node", fake], { encoding: "utf8" });
assert.equal(r.status, 0, r.stderr);
const pins = JSON.parse(r.stdout).bindings.tools;
const specFile = path.join(tmp, "notes.json");
fs.writeFileSync(specFile, JSON.stringify({
  name: "gateway_http_notes",
  variables: { bytes: { type: "int", initial: 0, min: 0 } },
  actions: [{ id: "note", parameters: { size: { type: "int", min: 0, max: 1000 } }, cost: 1,
              effects: [{ variable: "bytes", mode: "increment", value: "size" }] }],
  invariants: [{ name: "few_bytes", check: "bytes <= 20" }],
  budget: { total: 5, min_action_cost: 1 },
  bindings: { tools: { note: { action: "note", pin: pins.note.pin, params: { size: "utf8_bytes(text)" } } } },
}));
const token = "a-token-of-the-http-gateway-test";
const tokenFile = path.join(tmp, "token");
fs.writeFileSync(tokenFile, token + "\n");
const calls = path.join(tmp, "calls.log");
const trace = path.join(tmp, "notes.jsonl");

const child = spawn(clampai, ["gateway", specFile, "--port", "0", "--token-file", tokenFile, "--trace", trace,
                              "--", "node", fake],
                    { env: { ...process.env, FAKE_LOG: calls }, stdio: ["ignore", "pipe", "pipe"] });
let log = "";
child.stderr.on("data", (d) => { log += d; });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
const first = await new Promise((resolve, reject) => {
  createInterface({ input: child.stdout }).once("line", resolve);
  child.on("exit", () => reject(new Error("the gateway exited: " + log)));
});
const m = /^listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/.exec(first);
assert.ok(m, first);
const url = new URL(m[1]);

try {
  // Without the token: refused before anything reaches the upstream.
  {
    const client = new Client({ name: "no-token", version: "1.0.0" });
    await assert.rejects(client.connect(new StreamableHTTPClientTransport(url)), /401|unauthorized/i);
  }
  const client = new Client({ name: "clampai-gateway-http-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
  assert.match(client.getServerVersion().name, /^clampai-gateway\(fake\)$/);
  const tools = (await client.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name), ["note"]);
  let res = await client.callTool({ name: "note", arguments: { text: "hello" } });
  assert.equal(text(res), "noted");
  res = await client.callTool({ name: "note", arguments: { text: "x".repeat(16) } });  // 5 + 16 > 20
  assert.equal(res.isError, true);
  assert.equal(res._meta["clampai/decision"].closest_approved_params.size, 15);
  const upstream = fs.readFileSync(calls, "utf8");
  assert.match(upstream, /hello/);
  assert.ok(!upstream.includes("x".repeat(16)), "a rejected call never reaches the upstream");
  // The session ends (DELETE); a request in it afterwards is refused (404).
  const session = transport.sessionId;
  await transport.terminateSession();
  const after = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${token}`,
    "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "Mcp-Session-Id": session }, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }) });
  assert.equal(after.status, 404);
  await client.close();
} finally {
  child.kill("SIGTERM");
}
const { code } = await exited;
assert.equal(code, 0, log);
const v = spawnSync(clampai, ["trace", "verify", trace, "--spec", specFile], { encoding: "utf8" });
assert.equal(v.status, 0, v.stdout + v.stderr);
const entries = fs.readFileSync(trace, "utf8").trim().split("\n").map((l) => JSON.parse(l));
assert.equal(entries.filter((e) => e.kind === "executed").length, 1);
assert.equal(entries.at(-1).kind, "sealed");
fs.rmSync(tmp, { recursive: true, force: true });
console.log("gateway_http: ok");
