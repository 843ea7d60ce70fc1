// The latency `clampai gateway` adds to a tools/call (issue 39): the same upstream (the tests'
// fake server, whose `note` answers at once) called directly and through the gateway, in one
// run, one call at a time, alternating in rounds so that both see the same machine.
// Usage: node benchmarks/gateway_latency.mjs CLAMPAI [CALLS] [--trace]   (prints p50 and p99 in
// µs; --trace: the gateway also writes its trace to a file, as a deployment would). From a build
// directory: `cmake --build . --target bench_gateway_latency` (2,000 calls, no trace).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const [clampai, callsArg, traceArg] = process.argv.slice(2);
if (clampai === undefined || (traceArg !== undefined && traceArg !== "--trace")) {
  console.error("usage: node benchmarks/gateway_latency.mjs CLAMPAI [CALLS] [--trace]");
  process.exit(2);
}
const calls = Number(callsArg ?? 2000);
if (!Number.isInteger(calls) || calls < 100 || calls % 100 !== 0) {
  console.error(`CALLS must be a positive multiple of 100, not \`${callsArg}\``);
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const fake = path.join(here, "../tests/server/gateway_fake_upstream.mjs");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "clampai-gateway-bench-"));

const pins = JSON.parse(spawnSync(clampai, ["gateway", "--print-bindings", "--", "node", fake],
                                  { encoding: "utf8" }).stdout).bindings.tools;
const spec = path.join(tmp, "bench.json");
fs.writeFileSync(spec, JSON.stringify({
  name: "gateway_bench",
  variables: { notes: { type: "int", initial: 0, min: 0 }, bytes: { type: "int", initial: 0, min: 0 } },
  actions: [{ id: "note", parameters: { size: { type: "int", min: 0, max: 1000 } }, cost: 1,
              effects: [{ variable: "notes", mode: "increment", value: 1 },
                        { variable: "bytes", mode: "increment", value: "size" }] }],
  invariants: [{ name: "small", check: "bytes <= 100000000" }],
  budget: { total: 100000000, min_action_cost: 1 },
  bindings: { tools: { note: { action: "note", pin: pins.note.pin, params: { size: "utf8_bytes(text)" } } } },
}));

// A JSON-RPC peer on a child's stdio: send one request, await its answer.
const peer = (command, args) => {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  createInterface({ input: child.stdout }).on("line", (l) => {
    const m = JSON.parse(l);
    if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  });
  let id = 0;
  const call = (method, params) => new Promise((resolve) => {
    waiting.set(++id, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
  return { child, call };
};

const direct = peer("node", [fake]);
const traced = traceArg === "--trace" ? ["--trace", path.join(tmp, "bench.jsonl")] : [];
const gateway = peer(clampai, ["gateway", spec, ...traced, "--", "node", fake]);
for (const p of [direct, gateway]) {
  await p.call("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } });
  p.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  await p.call("tools/list", {});
}
const times = { direct: [], gateway: [] };
const params = { name: "note", arguments: { text: "hello, world" } };
for (let round = 0; round < calls / 100; ++round) {
  for (const [name, p] of [["direct", direct], ["gateway", gateway]]) {
    for (let i = 0; i < 100; ++i) {
      const t0 = process.hrtime.bigint();
      const r = await p.call("tools/call", params);
      times[name].push(Number(process.hrtime.bigint() - t0) / 1000);
      if (!r.result || r.result.isError) throw new Error(`${name}: ${JSON.stringify(r)}`);
    }
  }
}
const pct = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
for (const p of [direct, gateway]) p.child.stdin.end();
const row = (name) => `${name}: p50 ${pct(times[name], 0.5).toFixed(0)} µs, p99 ${pct(times[name], 0.99).toFixed(0)} µs`;
console.log(`${calls} calls each, alternating in rounds of 100${traced.length ? ", the gateway writing its trace" : ""}`);
console.log(row("direct"));
console.log(row("gateway"));
console.log(`added: p50 ${(pct(times.gateway, 0.5) - pct(times.direct, 0.5)).toFixed(0)} µs, ` +
            `p99 ${(pct(times.gateway, 0.99) - pct(times.direct, 0.99)).toFixed(0)} µs`);
fs.rmSync(tmp, { recursive: true, force: true });
