// `clampai report` in a real browser: Debian's chromium, headless, driven by puppeteer-core.
// Each page (a run replayed with --spec, a long run drawn in buckets, verify, compose, agent)
// must load with no console error and no request but the file itself; the figures read back
// from the page must be the trace's and the reports'; a screenshot of each is kept in
// ARTIFACTS. Exit 77 (ctest SKIP_RETURN_CODE) when chromium is missing, and only then.
//
// Usage: node report_browser.mjs CLAMPAI SOURCE_DIR NODE_DIR WORK_DIR ARTIFACTS_DIR
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

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
const ex = path.join(source, "examples");
const at = (f) => path.join(work, f);
function run(args, codes = [0]) {
  const r = spawnSync(clampai, args, { encoding: "utf8", cwd: work });
  if (!codes.includes(r.status)) {
    throw new Error(`clampai ${args.join(" ")}: exit ${r.status}\n${r.stdout}${r.stderr}`);
  }
  return r.stdout;
}
const traceOf = (file) =>
  readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line));

// The inputs and their pages.
const cloud = path.join(ex, "cloud_deploy.json");
run(["run", cloud, "--trace", at("cloud.jsonl"), "--record-rejections", "-q"]);
run(["report", at("cloud.jsonl"), "--spec", cloud, "--html", at("run.html")]);
// A run longer than the page draws point by point: 5,002 entries in buckets.
writeFileSync(at("long.json"), JSON.stringify({
  name: "long", goal: "n >= 5000",
  variables: { n: { type: "int", initial: 0, min: 0 } },
  actions: [{ id: "inc", cost: 1, effects: [{ variable: "n", mode: "increment", value: "1" }] }],
  invariants: [{ name: "cap", check: "n <= 6000" }],
  budget: { total: 6000, min_action_cost: 1 },
}));
run(["run", at("long.json"), "--trace", at("long.jsonl"), "-q"]);
run(["report", at("long.jsonl"), "--spec", at("long.json"), "--html", at("long.html")]);
writeFileSync(at("verify.json"), run(["verify", cloud, "--format", "json", "-q"], [1]));
run(["report", at("verify.json"), "--html", at("verify.html")]);
writeFileSync(at("compose.json"),
  run(["compose", path.join(ex, "compose", "pipeline.json"), "--format", "json", "-q"]));
run(["report", at("compose.json"), "--html", at("compose.html")]);
writeFileSync(at("agent.json"),
  run(["agent", path.join(ex, "agent_release.json"), "--llm", "mock", "--format", "json", "-q"]));
run(["report", at("agent.json"), "--html", at("agent.html")]);

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions"],
});

// Opens `file`: every console error and every request but the file itself is a failure.
async function open(file) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 900 });
  const url = pathToFileURL(file).href;
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warn") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    if (r.url() !== url) problems.push(`request: ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    if (r.url() === url) problems.push(`failed: ${r.url()}`);
  });
  await page.goto(url, { waitUntil: "load" });
  const name = path.basename(file, ".html");
  return {
    page,
    async done() {
      await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
      equal(problems, [], `${name}: no console error and no request outside the file`);
      await page.close();
    },
  };
}

try {
  // ---- a run, replayed with its spec ----
  {
    const trace = traceOf(at("cloud.jsonl"));
    const last = trace[trace.length - 1];
    const { page, done } = await open(at("run.html"));
    const rows = await page.$$eval("table.buckets tr[data-first]", (trs) =>
      trs.map((tr) => [Number(tr.dataset.first), Number(tr.dataset.last), tr.dataset.net, tr.dataset.gross]));
    equal(rows, trace.map((e) => [e.seq, e.seq, e.net, e.gross]),
      "run: each entry's net and gross spend in the page are the trace's");
    const figures = await page.$$eval("[data-figure]", (els) =>
      Object.fromEntries(els.map((e) => [e.dataset.figure, e.textContent])));
    equal([figures.net, figures.gross, figures.entries, figures.steps],
      [last.net, last.gross, String(trace.length), String(last.step)],
      "run: the final net and gross spend, entries and steps");
    const count = (kind) => String(trace.filter((e) => e.kind === kind).length);
    equal([figures.executed, figures.rejected, figures.rolled_back],
      [count("executed"), count("rejected"), count("rolled_back")], "run: the decisions counted");
    const spec = JSON.parse(readFileSync(cloud, "utf8"));
    const spend = await page.$eval("svg.spend", (s) => ({ ...s.dataset }));
    equal([spend.finalNet, spend.finalGross, Number(spend.total), Number(spend.points)],
      [last.net, last.gross, Number(spec.budget.total), trace.length],
      "run: the spend chart holds the final figures, the budget (T1) and a point per entry");
    check(await page.$eval("svg.spend g.t1 line.budget", (l) => l !== null), "run: the T1 line is drawn");
    const reasons = {};
    for (const e of trace) for (const r of e.reasons) reasons[r.code] = (reasons[r.code] || 0) + 1;
    const drawn = await page.$$eval("svg.reasons g.reason", (gs) =>
      Object.fromEntries(gs.map((g) => [g.dataset.code, Number(g.dataset.count)])));
    equal(drawn, reasons, "run: rejections by reason code, drawn");
    const marks = await page.$$eval("svg.timeline g.mark", (gs) =>
      gs.map((g) => [g.dataset.outcome, Number(g.dataset.first)]));
    equal(marks.filter((m) => m[0] === "rejected").map((m) => m[1]),
      trace.filter((e) => e.kind === "rejected").map((e) => e.seq),
      "run: each rejection is on the timeline at its entry");
    const margins = await page.$$eval("table.margins tr[data-invariant]", (trs) =>
      trs.map((tr) => tr.dataset.invariant));
    check(margins.includes("instance_cap"), `run: the margin of instance_cap is tabled (${margins})`);
    const chain = await page.$eval("section[data-kind=run] table.facts", (t) => t.textContent);
    check(chain.includes("verified") && chain.includes("sealed"), "run: chain verified and sealed");
    await done();
  }
  // ---- a long run, in buckets ----
  {
    const trace = traceOf(at("long.jsonl"));
    const last = trace[trace.length - 1];
    const { page, done } = await open(at("long.html"));
    const rows = await page.$$eval("table.buckets tr[data-first]", (trs) =>
      trs.map((tr) => [Number(tr.dataset.first), Number(tr.dataset.last), tr.dataset.net, tr.dataset.gross,
        Number(tr.children[4].textContent)]));
    check(rows.length > 1 && rows.length <= 240, `long: ${trace.length} entries in ${rows.length} buckets`);
    let next = 0;
    let exact = true;
    let executed = 0;
    for (const [first, lastSeq, net, gross, n] of rows) {
      exact &&= first === next && trace[lastSeq].net === net && trace[lastSeq].gross === gross;
      next = lastSeq + 1;
      executed += n;
    }
    check(exact && next === trace.length,
      "long: the buckets cover every entry once, each with the exact spend after its last entry");
    equal(executed, trace.filter((e) => e.kind === "executed").length, "long: executed actions add up");
    const figures = await page.$$eval("[data-figure]", (els) =>
      Object.fromEntries(els.map((e) => [e.dataset.figure, e.textContent])));
    equal([figures.net, figures.entries], [last.net, String(trace.length)], "long: the final figures");
    const least = await page.$eval("svg.margin", (s) => s.dataset.least);
    equal(least, "1000", "long: the least margin of `n <= 6000` (after n reached 5000)");
    await done();
  }
  // ---- verify ----
  {
    const report = JSON.parse(readFileSync(at("verify.json"), "utf8"));
    const { page, done } = await open(at("verify.html"));
    const cells = await page.$$eval("table.grid td[data-obligation]", (tds) =>
      tds.map((td) => [td.dataset.obligation, td.dataset.verdict]));
    equal(cells.sort(), report.obligations
      .filter((o) => o.kind === "preservation" || o.kind === "base_case")
      .map((o) => [o.id, o.verdict]).sort(), "verify: the grid holds every obligation's verdict");
    const refuted = report.obligations.find((o) => o.verdict === "refuted");
    const button = `td[data-obligation="${refuted.id}"] button`;
    const panel = await page.$eval(button, (b) => b.getAttribute("aria-controls"));
    check(await page.$eval(`#${panel}`, (p) => p.hidden), "verify: the counterexample starts closed");
    await page.click(button);
    const shown = await page.$eval(`#${panel}`, (p) => ({ hidden: p.hidden, text: p.textContent }));
    check(!shown.hidden && Object.entries(refuted.counterexample.post)
      .every(([k, v]) => shown.text.includes(k) && shown.text.includes(v)),
    "verify: a refuted cell opens its counterexample, with the values of the report");
    // Printed, every counterexample shows, opened or not (the print stylesheet).
    await page.click(button);  // closed again
    check(await page.$eval(`#${panel}`, (p) => p.hidden), "verify: the cell closes its counterexample");
    await page.emulateMediaType("print");
    check(await page.$eval(`#${panel}`, (p) => getComputedStyle(p).display !== "none"),
      "verify: printed, a closed counterexample shows");
    await page.emulateMediaType("screen");
    // Keyboard: the arrow keys move between the grid's cells.
    await page.focus("table.grid td[data-obligation] button");
    const before = await page.evaluate(() => document.activeElement.closest("td").dataset.obligation);
    await page.keyboard.press("ArrowDown");
    const after = await page.evaluate(() => document.activeElement.closest("td").dataset.obligation);
    check(before !== after && after !== undefined, `verify: ArrowDown moves from ${before} to ${after}`);
    await done();
  }
  // ---- compose ----
  {
    const report = JSON.parse(readFileSync(at("compose.json"), "utf8"));
    const { page, done } = await open(at("compose.html"));
    const tasks = await page.$$eval("section[data-kind=compose] table.tasks tbody tr", (trs) =>
      trs.map((tr) => tr.children[0].textContent));
    equal(tasks, report.tasks.map((t) => t.name), "compose: every task is tabled");
    const graph = await page.$eval("section[data-kind=compose] .graph svg", (s) => s.textContent);
    check(report.tasks.every((t) => graph.includes(t.name)), "compose: the pipeline graph names every task");
    await done();
  }
  // ---- agent ----
  {
    const report = JSON.parse(readFileSync(at("agent.json"), "utf8"));
    const { page, done } = await open(at("agent.html"));
    const marks = await page.$$eval("svg.choices g.mark", (gs) =>
      gs.map((g) => [Number(g.dataset.step), g.dataset.approved === "true"]));
    equal(marks, report.log.map((s) => [s.step, s.approved]), "agent: each choice and the kernel's answer");
    const graph = await page.$eval("section[data-kind=agent] .graph svg", (s) => s.textContent);
    check(report.log.every((s) => graph.includes(s.action)), "agent: the causal graph names the chosen actions");
    await done();
  }
} finally {
  await browser.close();
}
console.log(`screenshots in ${artifacts}`);
if (failures > 0) {
  console.log(`${failures} checks failed`);
  process.exit(1);
}
console.log("all checks passed");
