"""kill -9 during an approval (issue 40): the served task (approval_crash_agent: the server's
own code on a data directory) is killed between the `approval_granted` entry and the commit,
and after the commit but before the answer; the restart is consistent either way: the ticket
is answered (not pending), answering it again is refused, and `pay` is committed (and charged)
at most once. Run by ctest with AGENT and CLAMPAI in the environment. No timing is asserted:
the wait for the pause is a bounded poll."""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

AGENT = os.environ["AGENT"]
CLAMPAI = os.environ["CLAMPAI"]


def agent(*args):
    r = subprocess.run([AGENT, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
    return r.stdout.strip()


class KillDuringApproval(unittest.TestCase):
    def crash_at(self, window):
        with tempfile.TemporaryDirectory() as d:
            ticket = agent("ask", d)
            self.assertRegex(ticket, "^[0-9a-f]{32}$")
            p = subprocess.Popen([AGENT, "grant", d, ticket, window],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while not os.path.exists(os.path.join(d, "paused")):
                    self.assertIsNone(p.poll(), "the agent ended before its pause")
                    self.assertLess(time.monotonic(), deadline, "the agent never paused")
                    time.sleep(0.01)
                os.kill(p.pid, signal.SIGKILL)
            finally:
                p.wait(timeout=60)
            self.assertEqual(p.returncode, -signal.SIGKILL)
            with open(os.path.join(d, "pay.jsonl")) as f:
                kinds = [json.loads(line)["kind"] for line in f if line.strip()]
            # The file as the kill left it: the grant, and the commit only past its window.
            self.assertEqual(kinds[-1], "approval_granted" if window == "granted" else "executed")
            r = subprocess.run([CLAMPAI, "trace", "verify", os.path.join(d, "pay.jsonl"),
                                "--allow-unsealed"], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            return json.loads(agent("check", d, ticket))

    def test_killed_between_the_grant_and_the_commit(self):
        out = self.crash_at("granted")
        self.assertEqual(out["pending"]["tickets"], [])  # answered: not pending again
        self.assertEqual(out["again_status"], 404)
        self.assertEqual(out["again"]["error"]["code"], "unknown_ticket")
        self.assertIn("approved by `bob`", out["again"]["error"]["message"])
        self.assertEqual(out["state"]["state"]["balance"], 10)  # nothing committed, nor charged
        self.assertEqual(out["state"]["budget"]["net"], "0.000")
        self.assertNotIn("executed:pay", out["trace"])

    def test_killed_after_the_commit(self):
        out = self.crash_at("committed")
        self.assertEqual(out["pending"]["tickets"], [])
        self.assertEqual(out["again_status"], 404)
        self.assertEqual(out["again"]["error"]["code"], "unknown_ticket")
        self.assertEqual(out["state"]["state"]["balance"], 7)  # committed once, charged once
        self.assertEqual(out["state"]["budget"]["net"], "1.000")
        self.assertEqual(out["trace"].count("executed:pay"), 1)


if __name__ == "__main__":
    unittest.main()
