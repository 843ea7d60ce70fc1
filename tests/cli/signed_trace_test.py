"""Signed traces and the decision log, end to end (issue 40): `clampai keygen`, `run
--signing-key --checkpoint-every` (on a trace file and on a shared ledger), `trace verify
--public-key` against a rewritten chain, another key and an unsigned trace, and `serve
--signing-key --decision-log` with SIGHUP reopening the log. Run by ctest with CLAMPAI, CLAMPAI_SOURCE_DIR and (optionally) VALIDATE_JSON in the
environment. No timing is asserted: waits are bounded polls."""

import hashlib
import json
import os
import signal
import stat
import subprocess
import tempfile
import time
import unittest
import urllib.request

SOURCE = os.environ["CLAMPAI_SOURCE_DIR"]
CLAMPAI = os.environ["CLAMPAI"]
VALIDATE = os.environ.get("VALIDATE_JSON", "")
QUICKSTART = os.path.join(SOURCE, "examples", "quickstart.json")
AUTOSCALE = os.path.join(SOURCE, "examples", "autoscale.json")


def clampai(*args):
    return subprocess.run([CLAMPAI, *args], capture_output=True, text=True, timeout=300)


def canonical(obj):
    # The trace's values here are strings, booleans, integers, objects and arrays of ASCII: for
    # them RFC 8785 is sorted keys without white space.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def write_lines(path, entries):
    with open(path, "w") as f:
        for e in entries:
            f.write(canonical(e) + "\n")


def rechain(entries):
    """Every hash recomputed and relinked: a valid chain, as anyone can make one."""
    for i, e in enumerate(entries):
        if i > 0:
            e["prev"] = entries[i - 1]["hash"]
        body = {k: v for k, v in e.items() if k != "hash"}
        e["hash"] = hashlib.sha256(canonical(body).encode()).hexdigest()


def poll(predicate, what, tries=600):
    for _ in range(tries):
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


class SignedTraceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.key = os.path.join(self.dir, "k.pem")
        r = clampai("keygen", self.key)
        self.assertEqual(r.returncode, 0, r.stderr)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_keygen_writes_a_pair_never_over_a_file(self):
        self.assertEqual(stat.S_IMODE(os.stat(self.key).st_mode), 0o600)
        with open(self.key) as f:
            self.assertTrue(f.read().startswith("-----BEGIN PRIVATE KEY-----\n"))
        with open(self.key + ".pub") as f:
            self.assertTrue(f.read().startswith("-----BEGIN PUBLIC KEY-----\n"))
        with open(self.key, "rb") as f:
            before = f.read()
        r = clampai("keygen", self.key)
        self.assertEqual(r.returncode, 2)
        self.assertIn("never overwritten", r.stderr)
        with open(self.key, "rb") as f:
            self.assertEqual(f.read(), before)
        # Only the .pub exists: neither file is written.
        other = self.path("o.pem")
        with open(other + ".pub", "w") as f:
            f.write("mine\n")
        r = clampai("keygen", other)
        self.assertEqual(r.returncode, 2)
        self.assertFalse(os.path.exists(other))
        with open(other + ".pub") as f:
            self.assertEqual(f.read(), "mine\n")
        # The key is what openssl reads as Ed25519.
        r = subprocess.run(["openssl", "pkey", "-in", self.key, "-noout", "-text"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            self.assertIn("ED25519", r.stdout)

    def signed_run(self, name="t.jsonl", *extra):
        trace = self.path(name)
        r = clampai("run", QUICKSTART, "--trace", trace, "--quiet", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return trace

    def test_a_signed_run_verifies_and_a_rewritten_chain_does_not(self):
        trace = self.signed_run("t.jsonl", "--signing-key", self.key, "--checkpoint-every", "2")
        pub = self.key + ".pub"
        r = clampai("trace", "verify", trace, "--public-key", pub, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertTrue(report["signatures"]["ok"])
        self.assertGreaterEqual(report["signatures"]["signed_entries"], 2)
        self.assertEqual(report["signatures"]["uncovered_entries"], 0)
        entries = read_lines(trace)
        self.assertEqual([e["kind"] for e in entries if "signature" in e][-1], "sealed")
        self.assertIn("checkpoint", [e["kind"] for e in entries])

        # An executed entry changed, every hash recomputed: the chain verifies, the signatures
        # do not.
        rewritten = self.path("rewritten.jsonl")
        changed = [dict(e) for e in entries]
        executed = next(i for i, e in enumerate(changed) if e["kind"] == "executed")
        changed[executed]["time"] += 1
        rechain(changed)
        write_lines(rewritten, changed)
        r = clampai("trace", "verify", rewritten)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = clampai("trace", "verify", rewritten, "--public-key", pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("does not verify", r.stdout)

        # The signatures stripped and the chain rebuilt.
        stripped = [{k: v for k, v in e.items() if k != "signature"} for e in entries]
        rechain(stripped)
        write_lines(self.path("stripped.jsonl"), stripped)
        r = clampai("trace", "verify", self.path("stripped.jsonl"), "--public-key", pub)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is not signed", r.stdout)

        # Another key.
        clampai("keygen", self.path("other.pem"))
        r = clampai("trace", "verify", trace, "--public-key", self.path("other.pem.pub"))
        self.assertEqual(r.returncode, 1)

        # An unsigned trace verifies as before, but not with a public key.
        plain = self.signed_run("plain.jsonl")
        self.assertEqual(clampai("trace", "verify", plain).returncode, 0)
        r = clampai("trace", "verify", plain, "--public-key", pub)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not signed", r.stdout)

    def test_a_signed_agent_run_verifies_and_a_rewritten_chain_does_not(self):
        trace = self.path("agent.jsonl")
        r = clampai("agent", QUICKSTART, "--llm", "mock", "--trace", trace, "--quiet",
                    "--signing-key", self.key, "--checkpoint-every", "2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pub = self.key + ".pub"
        r = clampai("trace", "verify", trace, "--public-key", pub, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertTrue(report["signatures"]["ok"])
        self.assertEqual(report["signatures"]["uncovered_entries"], 0)
        entries = read_lines(trace)
        self.assertIn("checkpoint", [e["kind"] for e in entries])
        self.assertEqual([e["kind"] for e in entries if "signature" in e][-1], "sealed")
        changed = [dict(e) for e in entries]
        executed = next(i for i, e in enumerate(changed) if e["kind"] == "executed")
        changed[executed]["time"] += 1
        rechain(changed)
        write_lines(self.path("agent-rewritten.jsonl"), changed)
        r = clampai("trace", "verify", self.path("agent-rewritten.jsonl"), "--public-key", pub)
        self.assertEqual(r.returncode, 1, r.stdout)

    def test_signed_checkpoints_on_a_shared_ledger(self):
        # `run --ledger` and `agent --ledger` on one file ledger, signing with the group's key:
        # checkpoints (never a seal), each signed; `trace verify file:PATH --public-key`.
        ledger = self.path("shared.jsonl")
        pub = self.key + ".pub"
        r = clampai("agent", AUTOSCALE, "--llm", "mock", "--ledger", "file:" + ledger,
                    "--quiet", "--max-steps", "3", "--signing-key", self.key,
                    "--checkpoint-every", "2")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        r = clampai("run", AUTOSCALE, "--ledger", "file:" + ledger, "--quiet",
                    "--max-steps", "3", "--signing-key", self.key, "--checkpoint-every", "2")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        entries = read_lines(ledger)
        kinds = [e["kind"] for e in entries]
        self.assertNotIn("sealed", kinds)
        self.assertGreaterEqual(kinds.count("checkpoint"), 2)
        self.assertEqual(kinds[-1], "checkpoint")  # the run's end
        for e in entries:
            self.assertEqual("signature" in e, e["kind"] == "checkpoint")
        r = clampai("trace", "verify", "file:" + ledger, "--public-key", pub, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertTrue(report["signatures"]["ok"])
        self.assertEqual(report["signatures"]["uncovered_entries"], 0)

        # Rewritten after the fact, every hash recomputed: the chain verifies, the signatures
        # do not.
        changed = [dict(e) for e in entries]
        executed = next(i for i, e in enumerate(changed) if e["kind"] == "executed")
        changed[executed]["time"] += 1
        rechain(changed)
        rewritten = self.path("rewritten.jsonl")
        write_lines(rewritten, changed)
        self.assertEqual(clampai("trace", "verify", "file:" + rewritten).returncode, 0)
        r = clampai("trace", "verify", "file:" + rewritten, "--public-key", pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("does not verify", r.stdout)
        # Another key: the group signs with one.
        clampai("keygen", self.path("other.pem"))
        r = clampai("trace", "verify", "file:" + ledger, "--public-key",
                    self.path("other.pem.pub"))
        self.assertEqual(r.returncode, 1, r.stdout)
        # A bad key touches no ledger.
        r = clampai("run", AUTOSCALE, "--ledger", "file:" + self.path("never.jsonl"),
                    "--signing-key", pub)
        self.assertEqual(r.returncode, 2)
        self.assertIn("a public key, where the private key is needed", r.stderr)
        self.assertFalse(os.path.exists(self.path("never.jsonl")))

    def test_bad_key_files_are_named(self):
        r = clampai("trace", "verify", self.signed_run(), "--public-key", self.key)
        self.assertEqual(r.returncode, 2)
        self.assertIn("a private key, where the public key is needed", r.stderr)
        trace = self.path("never.jsonl")
        r = clampai("run", QUICKSTART, "--trace", trace, "--signing-key", self.key + ".pub")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--signing-key", r.stderr)
        self.assertIn("a public key, where the private key is needed", r.stderr)
        self.assertFalse(os.path.exists(trace))  # a bad key touches no file
        r = clampai("run", QUICKSTART, "--signing-key", self.path("missing.pem"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.pem", r.stderr)

    def test_serve_signs_records_principals_and_logs_decisions(self):
        data = self.path("data")
        os.mkdir(data)
        token = self.path("token")
        with open(token, "w") as f:
            f.write("a-token-of-twenty-bytes\n")
        log = self.path("decisions.jsonl")
        proc = subprocess.Popen(
            [CLAMPAI, "serve", "--port", "0", "--spec", AUTOSCALE, "--data-dir", data,
             "--token-file", token, "--signing-key", self.key, "--checkpoint-every", "2",
             "--decision-log", log],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            if not line.startswith("listening on "):
                proc.kill()
                proc.wait()
                self.fail(line + proc.stderr.read())
            url = line.split()[-1]

            def execute(n):
                req = urllib.request.Request(
                    url + "/v1/tasks/autoscale/execute",
                    data=json.dumps({"action": "scale_up", "params": {"n": n}}).encode(),
                    headers={"Authorization": "Bearer a-token-of-twenty-bytes",
                             "Content-Type": "application/json"})
                # No proxy: the server is on 127.0.0.1.
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                with opener.open(req, timeout=60) as r:
                    return json.load(r)

            first = execute(1)
            execute(2)
            self.assertEqual(len(read_lines(log)), 2)
            os.rename(log, log + ".1")
            proc.send_signal(signal.SIGHUP)
            poll(lambda: os.path.exists(log), "the reopened decision log")
            execute(1)
            self.assertEqual(len(read_lines(log)), 1)
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=60), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        lines = read_lines(log + ".1") + read_lines(log)
        self.assertEqual(len(lines), 3)
        self.assertEqual(stat.S_IMODE(os.stat(log).st_mode), 0o600)
        for entry in lines:
            self.assertEqual(entry["principal"], "token")
            self.assertEqual(entry["endpoint"], "execute")
            self.assertEqual(entry["outcome"], "approved")
        self.assertEqual(lines[0]["trace_position"], first["sequence"])
        self.assertEqual(lines[0]["params_sha256"],
                         hashlib.sha256(b'{"n":1}').hexdigest())
        if VALIDATE:
            for name in (log, log + ".1"):
                for i, entry in enumerate(read_lines(name)):
                    one = self.path(f"line{i}.json")
                    with open(one, "w") as f:
                        json.dump(entry, f)
                    r = subprocess.run([VALIDATE, os.path.join(
                        SOURCE, "schema", "decision-log.schema.json"), one],
                        capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        trace = os.path.join(data, "autoscale.jsonl")
        for e in read_lines(trace):
            if e["kind"] in ("executed", "rolled_back"):
                self.assertEqual(e.get("principal"), "token")
        r = clampai("trace", "verify", trace, "--public-key", self.key + ".pub")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("covering every entry", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
