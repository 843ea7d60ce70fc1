"""Approvals from `clampai run` and `clampai agent` (issue 40): `--approvals prompt` reads the
answer from standard input (a terminal or not), `deny` denies, `skip` (the default without a
terminal) leaves the ticket waiting; each records the ticket's life in the trace as `serve`
does, `trace verify --spec` replays it, and on a shared ledger the tickets live in the shared trace. Run by
ctest with CLAMPAI, CLAMPAI_SOURCE_DIR and (optionally) VALIDATE_JSON in the environment."""

import json
import os
import subprocess
import tempfile
import unittest

SOURCE = os.environ["CLAMPAI_SOURCE_DIR"]
CLAMPAI = os.environ["CLAMPAI"]
VALIDATE = os.environ.get("VALIDATE_JSON", "")

# `deploy` needs an approval; `build` comes first, once.
SPEC = {
    "name": "deploy",
    "variables": {"built": {"type": "bool", "initial": False},
                  "deployed": {"type": "bool", "initial": False}},
    "actions": [
        {"id": "build", "cost": 1, "requires": "!built",
         "effects": [{"variable": "built", "mode": "set", "value": True}]},
        {"id": "deploy", "cost": 2, "requires": "built", "approval": {"ttl_s": 300},
         "effects": [{"variable": "deployed", "mode": "set", "value": True}]}],
    "goal": "deployed",
    "budget": {"total": 10, "min_action_cost": 1},
}


def clampai(*args, stdin=""):
    return subprocess.run([CLAMPAI, *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def kinds(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class Approvals(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.spec = os.path.join(self.dir.name, "deploy.json")
        with open(self.spec, "w") as f:
            json.dump(SPEC, f)

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def run_cmd(self, command, trace, *args, stdin=""):
        extra = ["--llm", "mock"] if command == "agent" else []
        return clampai(command, self.spec, *extra, "--trace", trace, "--format", "json", *args,
                       stdin=stdin)

    def verified(self, trace):
        r = clampai("trace", "verify", trace, "--spec", self.spec)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_prompt_yes_commits_after_the_grant(self):
        for command in ("run", "agent"):
            trace = self.path(command + "-yes.jsonl")
            r = self.run_cmd(command, trace, "--approvals", "prompt", stdin="y\n")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("`deploy` needs an approval", r.stderr)
            self.assertIn("approve `deploy`? [y/N]", r.stderr)
            entries = kinds(trace)
            seq = [e["kind"] for e in entries]
            self.assertEqual(seq, ["genesis", "executed", "approval_requested",
                                   "approval_granted", "executed", "sealed"], command)
            req, grant, commit = entries[2], entries[3], entries[4]
            self.assertEqual(req["ticket"], grant["ticket"])
            self.assertRegex(req["ticket"], "^[0-9a-f]{32}$")
            self.assertTrue(grant["principal"].startswith("terminal:"))
            self.assertEqual(commit["action"], "deploy")
            self.verified(trace)
            out = json.loads(r.stdout)  # the run and the agent report alike
            self.assertEqual(out["approvals"],
                             {"granted": 1, "denied": 0, "expired": 0, "waiting": []})
            self.validated(command, r.stdout)

    def test_prompt_no_and_deny_commit_nothing(self):
        cases = (("run", "prompt", "n\n"), ("run", "deny", ""), ("agent", "deny", ""),
                 ("run", "prompt", "maybe\n"))
        for i, (command, mode, stdin) in enumerate(cases):
            trace = self.path(f"{command}-{mode}-{i}.jsonl")
            r = self.run_cmd(command, trace, "--approvals", mode, stdin=stdin)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            entries = kinds(trace)
            seq = [e["kind"] for e in entries]
            self.assertIn("approval_denied", seq, (command, mode))
            self.assertNotIn("approval_granted", seq)
            self.assertFalse(any(e["kind"] == "executed" and e["action"] == "deploy"
                                 for e in entries))
            denied = next(e for e in entries if e["kind"] == "approval_denied")
            self.assertEqual(denied["reasons"][0]["code"], "approval_denied")
            self.verified(trace)
            out = json.loads(r.stdout)
            self.assertGreaterEqual(out["approvals"]["denied"], 1)
            self.assertGreaterEqual(out["rejections_by_reason"].get("approval_denied"), 1)

    def test_skip_is_the_default_without_a_terminal(self):
        for args in ((), ("--approvals", "skip")):
            trace = self.path(f"skip{len(args)}.jsonl")
            r = self.run_cmd("run", trace, *args)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertNotIn("[y/N]", r.stderr)  # nobody was asked
            out = json.loads(r.stdout)
            waiting = out["approvals"]["waiting"]
            self.assertEqual(len(waiting), 1)
            self.assertEqual(waiting[0]["action"], "deploy")
            entries = kinds(trace)
            self.assertEqual([e["kind"] for e in entries],
                             ["genesis", "executed", "approval_requested", "sealed"])
            self.assertEqual(entries[2]["ticket"], waiting[0]["ticket"])
            self.verified(trace)
            self.validated("run", r.stdout)

    def test_agent_moves_on_from_a_waiting_ticket(self):
        trace = self.path("agent-skip.jsonl")
        r = self.run_cmd("agent", trace, "--approvals", "skip")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual([w["action"] for w in out["approvals"]["waiting"]], ["deploy"])
        requests = [e for e in kinds(trace) if e["kind"] == "approval_requested"]
        self.assertEqual(len(requests), 1)  # asked once, however often the LLM chose it
        self.assertEqual(requests[0]["principal"], "agent")
        self.validated("agent", r.stdout)
        r = clampai("agent", self.spec, "--llm", "mock", "--approvals", "skip")
        self.assertIn("approvals   0 granted, 0 denied, 0 expired, 1 waiting: ticket ", r.stdout)

    def validated(self, command, text):
        if not VALIDATE:
            return
        report = self.path(command + "-report.json")
        with open(report, "w") as f:
            f.write(text)
        schema = os.path.join(SOURCE, "schema", command + "-report.schema.json")
        v = subprocess.run([VALIDATE, schema, report], capture_output=True, text=True)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)

    def test_end_of_input_leaves_the_ticket_waiting(self):
        trace = self.path("eof.jsonl")
        r = self.run_cmd("run", trace, "--approvals", "prompt", stdin="")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("stays waiting", r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["approvals"]["waiting"]), 1)

    def test_bad_mode(self):
        r = clampai("run", self.spec, "--approvals", "always")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--approvals", r.stderr)

    def test_shared_ledger(self):
        # The tickets live in the shared chain: a run left waiting leaves its ticket there, a
        # later run on the ledger asks and is granted, and the shared trace verifies.
        path = self.path("ledger.jsonl")
        ledger = "file:" + path
        r = clampai("run", self.spec, "--ledger", ledger, "--approvals", "skip",
                    "--format", "json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["approvals"]["waiting"]), 1)
        r = clampai("run", self.spec, "--ledger", ledger, "--approvals", "prompt",
                    "--format", "json", stdin="y\n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(report["approvals"]["granted"], 1)
        self.assertEqual([e["kind"] for e in kinds(path)],
                         ["genesis", "executed", "approval_requested", "approval_requested",
                          "approval_granted", "executed"])
        r = clampai("trace", "verify", ledger, "--spec", self.spec)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
