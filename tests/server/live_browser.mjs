// The live page of `clampai serve` in a real browser: Debian's chromium, headless, driven by
// puppeteer-core. A server on 127.0.0.1 with a token and budget pools; the page loads without
// the token, asks for it, refuses a wrong one (and asks again), then shows the decisions made
// through the API during the test: read back from the DOM and compared with the API's answers.
// No console error and no request outside the server (the wrong token's 401 aside, on its own
// page); the token survives a reload of the tab (sessionStorage); a screenshot is kept in
// ARTIFACTS. Exit 77 (ctest SKIP_RETURN_CODE) when chromium is missing, and only then.
//
// Usage: node live_browser.mjs CLAMPAI SOURCE_DIR NODE_DIR WORK_DIR ARTIFACTS_DIR
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { createInterface } from "node:readline";

const [clampai, source, nodeDir, work, artifacts] = process.argv.slice(2);
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(chromium)) {
  console.log(`chromium is missing (${chromium}): the browser test is skipped`);
  process.exit(77);
}
const require = createRequire(path.join(nodeDir, "package.json"));
const puppeteer = require("puppeteer-core");

let failures = 0;
function check(ok, what) {
  if (ok) {
    console.log(`ok: ${what}`);
  } else {
    failures++;
    console.log(`FAIL: ${what}`);
  }
}
function equal(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, a === e ? what : `${what}: got ${a}, expected ${e}`);
}

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
mkdirSync(artifacts, { recursive: true });
const at = (f) => path.join(work, f);
const token = "live-page-token-0123456789abcdef";
writeFileSync(at("token.txt"), `${token}\n`);
writeFileSync(at("pools.json"), JSON.stringify({ pools: { org: { total: 30 } } }));
const spec = JSON.parse(readFileSync(path.join(source, "examples", "autoscale.json"), "utf8"));
spec.budget.pool = "org";
writeFileSync(at("autoscale.json"), JSON.stringify(spec));

// The server, on a free port of 127.0.0.1; its first line says where.
const server = spawn(clampai, ["serve", "--host", "127.0.0.1", "--port", "0", "--token-file",
  at("token.txt"), "--pools", at("pools.json"), "--spec", at("autoscale.json")],
{ stdio: ["ignore", "pipe", "pipe"] });
let stderr = "";
server.stderr.on("data", (d) => { stderr += d; });
const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));
const url = await new Promise((resolve, reject) => {
  const lines = createInterface({ input: server.stdout });
  lines.once("line", (line) => {
    const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
    if (m) resolve(m[1]);
    else reject(new Error(`no listening line: ${line}`));
  });
  server.once("exit", () => reject(new Error(`the server exited: ${stderr}`)));
});
const task = spec.name;

async function api(method, route, body) {
  const r = await fetch(url + route, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status !== 200) throw new Error(`${method} ${route}: ${r.status} ${await r.text()}`);
  return r.json();
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions"],
});

// Opens the page: every console error or warning, and every request outside the server, is a
// problem (`allowed` says which console messages a step expects).
async function open(allowed = () => false) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 900 });
  const problems = [];
  page.on("console", (m) => {
    if ((m.type() === "error" || m.type() === "warn") && !allowed(m.text())) {
      problems.push(`console ${m.type()}: ${m.text()}`);
    }
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    if (!r.url().startsWith(`${url}/`) && !r.url().startsWith("data:")) problems.push(`request: ${r.url()}`);
  });
  page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  const response = await page.goto(`${url}/`, { waitUntil: "load" });
  return { page, problems, response };
}

const section = `section[data-task="${task}"]`;
async function enter(page, text) {
  await page.waitForSelector("#token", { visible: true });
  await page.type("#token", text);
  await page.keyboard.press("Enter");
}

try {
  // ---- a wrong token: refused, and asked for again ----
  {
    const { page, problems } = await open((text) => text.includes("401"));
    await enter(page, "not-the-token-0123456789");
    await page.waitForFunction(() => !document.getElementById("login").hidden &&
      document.getElementById("status").textContent.includes("401"));
    check(await page.$(section) === null, "a wrong token: no task shown, the token asked for again");
    equal(await page.evaluate(() => sessionStorage.length), 0, "a wrong token is not kept");
    equal(problems, [], "a wrong token: nothing but its 401");
    await page.close();
  }
  // ---- the token, then decisions made through the API appear ----
  const { page, problems, response } = await open();
  const policy = response.headers()["content-security-policy"] || "";
  check(policy.includes("default-src 'none'") && policy.includes("connect-src 'self'") &&
    !policy.includes("unsafe"), `the page is served with a strict policy: ${policy}`);
  check(!(await page.content()).includes(token), "the page holds no token");
  await enter(page, token);
  await page.waitForSelector(`${section} svg.spend`);
  equal(await page.$eval(`${section} .part-recent`, (d) => d.textContent), "No decision yet.",
    "no decision yet");
  const figures = async () => page.$$eval(`${section} [data-figure]`, (els) =>
    Object.fromEntries(els.map((e) => [e.dataset.figure, e.textContent])));
  equal((await figures()).net, "0.000", "nothing spent yet");

  const done = await api("POST", `/v1/tasks/${task}/execute`, { action: "scale_up", params: { n: 2 } });
  const refused = await api("POST", `/v1/tasks/${task}/execute`, { action: "scale_up", params: { n: 50 } });
  check(done.executed && !refused.executed, "one execute committed, one rejected");
  // The page polls: wait until it has shown both (bounded by ctest's timeout, never timed).
  await page.waitForFunction((s) => document.querySelector(s)?.dataset.events === "2", { timeout: 60000 }, section);
  const state = await api("GET", `/v1/tasks/${task}/state`);
  const rows = await page.$$eval(`${section} table.recent tbody tr`, (trs) => trs.map((tr) =>
    [tr.dataset.outcome, tr.dataset.action, tr.children[6].textContent, tr.children[8].textContent]));
  equal(rows, [["rejected", "scale_up", refused.cost, ""], ["executed", "scale_up", done.cost, String(done.sequence)]],
    "the decisions made during the test, newest first, with their cost and trace entry");
  const why = await page.$eval(`${section} table.recent tbody tr`, (tr) => tr.children[5].textContent);
  check(refused.reasons.every((r) => why.includes(r.code) && why.includes(r.message)),
    "the rejection's reasons are shown");
  const f = await figures();
  equal([f.net, f.gross, f.total, f.remaining, f.approved, f.rejected],
    [state.budget.net, state.budget.gross, state.budget.total, state.budget.remaining, "1", "1"],
    "the budget and the decisions counted are the server's");
  const spend = await page.$eval(`${section} svg.spend`, (s) => ({ ...s.dataset }));
  equal([spend.finalNet, spend.finalGross, spend.total, spend.entries],
    [state.budget.net, state.budget.gross, state.budget.total, "3"],
    "the spend chart (the report's) holds the spend, the budget (T1) and a point per decision");
  check(await page.$(`${section} svg.spend g.t1 line.budget`) !== null, "the T1 line is drawn");
  const timeline = await page.$eval(`${section} svg.timeline`, (s) => ({ ...s.dataset }));
  equal([timeline.executed, timeline.rejected], ["1", "1"], "the timeline counts the outcomes");
  const marks = await page.$$eval(`${section} svg.timeline g.mark`, (gs) =>
    gs.map((g) => [g.dataset.outcome, Number(g.dataset.first)]));
  equal(marks, [["executed", 1], ["rejected", 2]], "each decision is on the timeline, in order");
  const reasons = {};
  for (const r of refused.reasons) reasons[r.code] = (reasons[r.code] || 0) + 1;
  const drawn = await page.$$eval(`${section} svg.reasons g.reason`, (gs) =>
    gs.map((g) => [g.dataset.code, Number(g.dataset.count)]));
  equal(drawn.sort(), Object.entries(reasons).sort(), "the rejections by reason code, drawn");
  const pools = await api("GET", "/v1/pools");
  const shown = await page.$$eval("#pools table.pools tbody tr", (trs) =>
    trs.map((tr) => [tr.dataset.pool, tr.children[3].textContent]));
  equal(shown, pools.pools.map((p) => [p.name, p.net]), "the pools and their net spend");
  await page.screenshot({ path: path.join(artifacts, "live.png"), fullPage: true });

  // A reload of the tab keeps the token: nothing is asked again.
  await page.reload({ waitUntil: "load" });
  await page.waitForSelector(`${section} svg.spend`);
  check(await page.$eval("#login", (f) => f.hidden), "after a reload the token is not asked again");
  // Forgetting it asks again, and stops polling.
  await page.click("#forget");
  await page.waitForSelector("#token", { visible: true });
  equal([await page.evaluate(() => sessionStorage.length), await page.$(section)], [0, null],
    "forgotten: the token is gone from the tab, and so are the tasks");
  equal(problems, [], "no console error and no request outside the server");
  await page.close();
} finally {
  await browser.close();
  server.kill("SIGTERM");
}
const end = await exited;
equal([end.code, end.signal], [0, null], "the server stops on SIGTERM");
console.log(`screenshot in ${artifacts}`);
if (failures > 0) {
  console.log(`${failures} checks failed`);
  process.exit(1);
}
console.log("all checks passed");
