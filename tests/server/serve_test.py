"""`clampai serve` end to end, through the Python client (clients/python): the API, the token,
the limits, TLS, durability across kill -9 and SIGTERM, and every response checked against
schema/openapi.json (the last test). Run by ctest with CLAMPAI, CLAMPAI_SOURCE_DIR and
VALIDATE_OPENAPI in the environment."""

import json
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE = os.environ["CLAMPAI_SOURCE_DIR"]
CLAMPAI = os.environ["CLAMPAI"]
VALIDATE = os.environ.get("VALIDATE_OPENAPI", "")
sys.path.insert(0, os.path.join(SOURCE, "clients", "python"))

from clampai_client import ClampaiError, Client  # noqa: E402

RECORDS = []  # every response seen, for the OpenAPI check
OPS = ("evaluate", "execute", "rollback", "state", "trace", "lookahead", "repair", "verify")


def template(path):
    path = path.split("?")[0]
    if re.fullmatch(r"/v1/tasks/[^/]+/approvals/[^/]+", path):
        return "/v1/tasks/{task}/approvals/{ticket}"
    m = re.fullmatch(r"/v1/tasks/[^/]+/([a-z]+)", path)
    return f"/v1/tasks/{{task}}/{m.group(1)}" if m else path


def observe(method, path, status, content_type, body):
    RECORDS.append({"method": method.lower(), "path": template(path), "status": status,
                    "content_type": content_type, "body": body.decode(errors="replace")})


def spec(name):
    with open(os.path.join(SOURCE, "examples", name)) as f:
        return json.load(f)


class Server:
    """A `clampai serve` process on a free port (with at most `max_fds` file descriptors)."""

    def __init__(self, *args, cwd=None, max_fds=None):
        limit = None
        if max_fds is not None:
            limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (max_fds, max_fds))
        self.proc = subprocess.Popen([CLAMPAI, "serve", "--port", "0", *args], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=limit)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise AssertionError(f"no listening line: {line!r} {self.proc.stderr.read()}")
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])

    def client(self, **kw):
        return Client(self.url, observer=observe, **kw)

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=60)
        self.stderr = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.stop(signal.SIGKILL)


def until_closed(s):
    """Everything received on socket `s` until the server closes the connection."""
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return data
            data += b
    except ConnectionResetError:
        return data


def raw(port, data, path="/v1/health", method="get"):
    """Sends raw bytes; returns (status, content type, body) and records them."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(l.split(": ", 1) for l in lines[1:])
    RECORDS.append({"method": method, "path": path, "status": status,
                    "content_type": headers.get("Content-Type", ""), "body": body.decode()})
    return status, headers, json.loads(body)


class ServeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def token_file(self, token="test-token-0123456789abcdef"):
        path = os.path.join(self.dir, "token.txt")
        with open(path, "w") as f:
            f.write(token + "\n")
        return path, token

    def test_a_client_drives_tasks_through_every_endpoint(self):
        with Server("--insecure-no-auth") as srv, srv.client() as c:
            self.assertEqual(c.health()["tasks"], 0)
            self.assertEqual(c.create_task(spec("autoscale.json"))["task"], "autoscale")
            self.assertEqual(c.create_task(spec("quickstart.json"))["actions"], ["process_batch"])
            self.assertEqual([t["name"] for t in c.tasks()], ["autoscale", "quickstart"])
            d = c.evaluate("autoscale", "scale_up", {"n": 2})
            self.assertTrue(d["approved"])
            d = c.execute("autoscale", "scale_up", {"n": 50})
            self.assertFalse(d["executed"])
            self.assertIn("budget_exceeded", [r["code"] for r in d["reasons"]])
            d = c.execute("autoscale", "scale_up", {"n": 3})
            self.assertEqual(d["state"]["instances"], 7)
            self.assertEqual(c.rollback("autoscale", d["sequence"])["state"]["instances"], 4)
            c.execute("autoscale", "set_throttle", {"fraction": "0.55"})
            self.assertEqual(c.state("autoscale")["state"]["throttle"], "0.55")
            entries = list(c.trace("autoscale"))
            self.assertEqual([e["kind"] for e in entries],
                             ["genesis", "executed", "rolled_back", "executed"])
            path = os.path.join(self.dir, "t.jsonl")
            with open(path, "w") as f:
                f.write(c.trace_text("autoscale"))
            subprocess.run([CLAMPAI, "trace", "verify", "--allow-unsealed", path], check=True,
                           stdout=subprocess.DEVNULL)
            self.assertEqual(c.lookahead("quickstart", "process_batch", depth=4)["goal_reachable"],
                             True)
            self.assertEqual(c.repair("autoscale", "scale_up", {"n": 50})["status"], "repaired")
            self.assertIn("obligations", c.verify("quickstart"))
            self.assertIn('clampai_decisions_total{task="autoscale",endpoint="execute",'
                          'outcome="rejected"} 1', c.metrics())
            # Errors: every one JSON with its stable code.
            for op in OPS:
                post = op not in ("state", "trace")
                with self.assertRaises(ClampaiError) as e:
                    c._json("POST" if post else "GET", f"/v1/tasks/nope/{op}", b"{}" if post else None)
                self.assertEqual((e.exception.status, e.exception.code), (404, "unknown_task"))
                if post:
                    with self.assertRaises(ClampaiError) as e:
                        c._json("POST", f"/v1/tasks/autoscale/{op}", b"{\"action\": ")
                    self.assertEqual((e.exception.status, e.exception.code), (400, "malformed_json"))
            for op in ("evaluate", "execute", "lookahead", "repair"):
                with self.assertRaises(ClampaiError) as e:
                    c._json("POST", f"/v1/tasks/autoscale/{op}", b'{"action": "scale_dn"}')
                self.assertEqual((e.exception.status, e.exception.code), (404, "unknown_action"))
            with self.assertRaises(ClampaiError) as e:
                c._json("GET", "/v1/tasks/autoscale/evaluate")
            self.assertEqual(e.exception.code, "method_not_allowed")
            with self.assertRaises(ClampaiError) as e:
                c.create_task(spec("quickstart.json"))
            self.assertEqual((e.exception.status, e.exception.code), (409, "task_exists"))
            with self.assertRaises(ClampaiError) as e:
                c.create_task({"name": "broken", "variables": {}})
            self.assertEqual((e.exception.status, e.exception.code), (400, "invalid_spec"))
            with self.assertRaises(ClampaiError) as e:
                c.rollback("quickstart")
            self.assertEqual((e.exception.status, e.exception.code), (409, "rollback_refused"))
            # After all that, the kernel of quickstart never moved.
            self.assertEqual(c.state("quickstart")["steps"], 0)
            self.assertEqual(srv.stop(), 0)

    def test_the_token_guards_everything_but_health(self):
        path, token = self.token_file()
        with Server("--token-file", path, "--spec",
                    os.path.join(SOURCE, "examples", "quickstart.json")) as srv:
            with srv.client(token="wrong-token-0123456789") as bad:
                self.assertEqual(bad.health()["status"], "ok")
                calls = [lambda: bad.metrics(), lambda: bad.tasks(),
                         lambda: bad.create_task(spec("autoscale.json"))]
                calls += [lambda op=op: bad._json("GET" if op in ("state", "trace") else "POST",
                                                  f"/v1/tasks/quickstart/{op}",
                                                  None if op in ("state", "trace") else b"{}")
                          for op in OPS]
                for call in calls:
                    with self.assertRaises(ClampaiError) as e:
                        call()
                    self.assertEqual((e.exception.status, e.exception.code), (401, "unauthorized"))
            with srv.client(token=token) as good:
                self.assertEqual(good.state("quickstart")["steps"], 0)
                self.assertTrue(good.execute("quickstart", "process_batch")["executed"])

    def principals_file(self, rights_of, name="principals.json"):
        """Writes a principals file, {NAME: {TASK: [RIGHT...]}}; returns its path and tokens."""
        import hashlib
        tokens = {n: f"token-of-{n}-0123456789abcdef" for n in rights_of}
        doc = {"principals": [{"name": n, "rights": r,
                               "token_sha256": hashlib.sha256(tokens[n].encode()).hexdigest()}
                              for n, r in rights_of.items()]}
        path = os.path.join(self.dir, name)
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f)
        os.replace(path + ".tmp", path)  # a reload never reads half a file
        return path, tokens

    def test_principals_rights_and_sighup_revocation(self):
        path, tokens = self.principals_file({"ci": {"*": ["read"], "quickstart": ["execute"]},
                                             "ops": {"*": ["read"]},
                                             "nobody": {"*": ["approve"]}})
        with Server("--principals", path, "--spec",
                    os.path.join(SOURCE, "examples", "quickstart.json")) as srv:
            with srv.client(token=tokens["nobody"]) as nobody:
                # Every route but health needs a right `approve` is not (the 403 table).
                calls = [lambda: nobody.metrics(), lambda: nobody.tasks(),
                         lambda: nobody.pools(),
                         lambda: nobody.create_task(spec("autoscale.json"))]
                calls += [lambda op=op: nobody._json(
                    "GET" if op in ("state", "trace") else "POST", f"/v1/tasks/quickstart/{op}",
                    None if op in ("state", "trace") else b"{}") for op in OPS]
                for call in calls:
                    with self.assertRaises(ClampaiError) as e:
                        call()
                    self.assertEqual((e.exception.status, e.exception.code), (403, "forbidden"))
            with srv.client(token=tokens["ci"]) as ci, srv.client(token=tokens["ops"]) as ops:
                self.assertTrue(ci.execute("quickstart", "process_batch")["executed"])
                with self.assertRaises(ClampaiError) as e:
                    ops.execute("quickstart", "process_batch")
                self.assertEqual((e.exception.status, e.exception.code), (403, "forbidden"))
                with self.assertRaises(ClampaiError) as e:
                    ci.evaluate("quickstart", "process_batch")
                self.assertEqual((e.exception.status, e.exception.code), (403, "forbidden"))
                # A bad new file keeps the old principals, and says why.
                with open(path, "w") as f:
                    f.write('{"principals": [{"name": "ci"}]}')
                srv.proc.send_signal(signal.SIGHUP)
                # Its log line, before the next file is written (or the two reloads could read
                # the same file, or their signals merge).
                seen = ""
                while "SIGHUP:" not in seen or not seen.endswith("\n"):
                    ready, _, _ = select.select([srv.proc.stderr], [], [], 60)
                    self.assertTrue(ready, "no log line after SIGHUP")
                    data = os.read(srv.proc.stderr.fileno(), 65536)  # unbuffered: no line
                    self.assertTrue(data, "the server closed its stderr")  # hides in a buffer
                    seen += data.decode()
                self.assertIn("SIGHUP: keeping the old principals: --principals `", seen)
                self.assertIn("principals[0]: missing key `token_sha256`", seen)
                self.assertEqual(ci.state("quickstart")["steps"], 1)  # `ci` still in
                # Revoke `ci`; the server keeps serving `ops`, without a restart. The effect is
                # polled a bounded number of times: nothing is timed.
                self.principals_file({"ops": {"*": ["read", "execute"]}})
                srv.proc.send_signal(signal.SIGHUP)
                status = None
                for _ in range(200):
                    try:
                        ci.state("quickstart")
                        status = 200
                    except ClampaiError as err:
                        status = err.status
                    if status == 401:
                        break
                    time.sleep(0.05)
                self.assertEqual(status, 401)
                self.assertTrue(ops.execute("quickstart", "process_batch")["executed"])
                self.assertEqual(ops.state("quickstart")["steps"], 2)
            self.assertEqual(srv.stop(), 0)
            self.assertIn("SIGHUP: 1 principal(s) read from", srv.stderr)

    def test_reload_behind_proofs(self):
        """PUT /v1/tasks/{task}/spec refused for each of its three reasons (the old spec
        stays), a dry run, a reload carrying the state over, SIGHUP re-reading --spec, the
        trace verified across the specs (and not with one), and a restart after kill -9."""
        def acct(spend=3, deposit=5, flag=False, rich=False, guard=True, bad=False):
            variables = {"balance": {"type": "int", "initial": 100 if rich else 10}}
            if flag:
                variables["flag"] = {"type": "bool", "initial": False}
            else:
                variables["count"] = {"type": "int", "initial": 0}
            spend_action = {"id": "spend", "cost": 1,
                            "effects": [{"variable": "balance", "mode": "decrement",
                                         "value": spend}]}
            if guard:
                spend_action["requires"] = f"balance >= {spend + (100 if rich else 0)}"
            check = "balance >= 100" if rich else ("balnce >= 0" if bad else "balance >= 0")
            return {"name": "acct", "variables": variables,
                    "actions": [spend_action,
                                {"id": "deposit", "cost": 1,
                                 "effects": [{"variable": "balance", "mode": "increment",
                                              "value": deposit}]}],
                    "invariants": [{"name": "rich" if rich else "solvent", "check": check}],
                    "budget": {"total": 100, "min_action_cost": 1}}

        def write(path, doc):
            with open(path + ".tmp", "w") as f:
                json.dump(doc, f)
            os.replace(path + ".tmp", path)  # SIGHUP never reads half a file

        def log_until(srv, text):
            seen = ""
            while text not in seen:
                ready, _, _ = select.select([srv.proc.stderr], [], [], 60)
                self.assertTrue(ready, f"no log line with {text!r}")
                data = os.read(srv.proc.stderr.fileno(), 65536)
                self.assertTrue(data, "the server closed its stderr")
                seen += data.decode()
            return seen

        a, b, c = acct(), acct(spend=2, flag=True), acct(spend=2, deposit=4, flag=True)
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        spec_file = os.path.join(self.dir, "acct.json")
        files = {}
        for name, doc in (("a", a), ("b", b), ("c", c)):
            files[name] = os.path.join(self.dir, f"{name}.json")
            write(files[name], doc)
        write(spec_file, a)
        path, tokens = self.principals_file({"root": {"*": ["read", "execute", "admin"]},
                                             "reader": {"*": ["read"]}})
        with Server("--principals", path, "--data-dir", data, "--spec", spec_file) as srv:
            with srv.client(token=tokens["root"]) as root, \
                    srv.client(token=tokens["reader"]) as reader, srv.client() as anonymous:
                root.execute("acct", "spend")
                digest_a = root.tasks()[0]["spec_digest"]
                for call, status, code in (
                        (lambda: reader.reload("acct", b), 403, "forbidden"),
                        (lambda: anonymous.reload("acct", b), 401, "unauthorized"),
                        (lambda: root.reload("nope", b), 404, "unknown_task"),
                        (lambda: root._json("PUT", "/v1/tasks/acct/spec?dry=1",
                                            json.dumps(b).encode()), 400, "invalid_request")):
                    with self.assertRaises(ClampaiError) as e:
                        call()
                    self.assertEqual((e.exception.status, e.exception.code), (status, code))
                for doc, failed, detail in ((acct(bad=True), "spec", "balnce"),
                                            (acct(guard=False), "verify",
                                             "preservation:spend:solvent"),
                                            (acct(rich=True), "state", "`rich`")):
                    with self.assertRaises(ClampaiError) as e:
                        root.reload("acct", doc)
                    self.assertEqual((e.exception.status, e.exception.code, e.exception.failed),
                                     (409, "reload_refused", failed))
                    self.assertIn(detail, " ".join(e.exception.details))
                self.assertEqual(root.tasks()[0]["spec_digest"], digest_a)  # the old spec stays
                dry = root.reload("acct", b, dry_run=True)
                self.assertEqual((dry["changed"], dry["sequence"], dry["added"], dry["dropped"]),
                                 (True, None, ["flag"], ["count"]))
                self.assertEqual(root.tasks()[0]["spec_digest"], digest_a)
                done = root.reload("acct", b)
                self.assertEqual(done["previous_digest"], digest_a)
                self.assertEqual(root.state("acct")["state"], {"balance": 7, "flag": False})
                self.assertEqual(list(root.trace("acct"))[-1]["kind"], "spec_changed")
                # SIGHUP reads --spec again: the file now holds spec c.
                write(spec_file, c)
                srv.proc.send_signal(signal.SIGHUP)
                # SIGHUP's own line (the HTTP reload above logged a "replaced by" too).
                log_until(srv, f"SIGHUP: {spec_file}: task `acct`: spec")
                digest_c = root.tasks()[0]["spec_digest"]
                self.assertNotIn(digest_c, (digest_a, done["spec_digest"]))
                self.assertEqual(root.execute("acct", "deposit")["state"]["balance"], 11)
                before = root.state("acct")["state"]
            srv.stop(signal.SIGKILL)
        trace = os.path.join(data, "acct.jsonl")
        verify = [CLAMPAI, "trace", "verify", trace, "--allow-unsealed"]
        for given, rc in (([files["a"], files["b"], files["c"]], 0),
                          ([os.path.join(data, "specs")], 0),
                          ([files["a"]], 1)):
            args = [x for f in given for x in ("--spec", f)]
            p = subprocess.run(verify + args, capture_output=True, text=True)
            self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
        with Server("--principals", path, "--data-dir", data, "--spec", spec_file) as srv:
            with srv.client(token=tokens["root"]) as root:
                self.assertEqual(root.tasks()[0]["spec_digest"], digest_c)
                self.assertEqual(root.state("acct")["state"], before)
            self.assertEqual(srv.stop(), 0)

    def test_approvals_end_to_end(self):
        """A pending execute, its approval by another principal, a denial, self-approval,
        every refusal, and a restart that keeps the pending tickets. The expiry waits for a
        1 s ticket, polled a bounded number of times (the C++ tests use an injected clock)."""
        path, tokens = self.principals_file({"alice": {"*": ["read", "execute"]},
                                             "bob": {"*": ["read", "approve"]},
                                             "eve": {"other": ["read"]}})
        pay = {"name": "pay",
               "variables": {"balance": {"type": "int", "initial": 5000}},
               "actions": [{"id": "pay", "cost": 1, "approval": {"ttl_s": 3600},
                            "parameters": {"amount": {"type": "int", "min": 1, "max": 10}},
                            "effects": [{"variable": "balance", "mode": "decrement",
                                         "value": "amount"}]},
                           {"id": "quick", "cost": 1, "approval": {"ttl_s": 1}}],
               "invariants": [{"name": "solvent", "check": "balance >= 0"}],
               "budget": {"total": 100000, "min_action_cost": 1}}
        spec_path = os.path.join(self.dir, "pay.json")
        with open(spec_path, "w") as f:
            json.dump(pay, f)
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        args = ("--principals", path, "--spec", spec_path, "--data-dir", data)
        with Server(*args) as srv:
            with srv.client(token=tokens["alice"]) as alice, \
                    srv.client(token=tokens["bob"]) as bob, \
                    srv.client(token=tokens["eve"]) as eve, srv.client() as anonymous:
                asked = alice.execute("pay", "pay", {"amount": 3})
                self.assertEqual((asked["approved"], asked["pending"]), (False, True))
                self.assertEqual(asked["state"]["balance"], 5000)
                [listed] = bob.approvals("pay")
                self.assertEqual(listed["ticket"], asked["ticket"])
                self.assertEqual(listed["principal"], "alice")
                done = bob.answer("pay", asked["ticket"], True)
                self.assertEqual((done["granted"], done["executed"]), (True, True))
                self.assertEqual(done["state"]["balance"], 4997)
                # Every refusal.
                denied = alice.execute("pay", "pay", {"amount": 1})["ticket"]
                for client, ticket, body, want in [
                        (bob, asked["ticket"], None, (404, "unknown_ticket")),
                        (alice, denied, None, (403, "forbidden")),  # self-approval
                        (eve, denied, None, (403, "forbidden")),
                        (anonymous, denied, None, (401, "unauthorized")),
                        (bob, denied, b'{"approve": "yes"}', (400, "invalid_request"))]:
                    with self.assertRaises(ClampaiError) as e:
                        if body is None:
                            client.answer("pay", ticket, True)
                        else:
                            client._json("POST", f"/v1/tasks/pay/approvals/{ticket}", body)
                    self.assertEqual((e.exception.status, e.exception.code), want)
                for client, task, want in [(eve, "pay", (403, "forbidden")),
                                           (anonymous, "pay", (401, "unauthorized")),
                                           (bob, "nope", (404, "unknown_task"))]:
                    with self.assertRaises(ClampaiError) as e:
                        client.approvals(task)
                    self.assertEqual((e.exception.status, e.exception.code), want)
                no = bob.answer("pay", denied, False)
                self.assertEqual(no["reasons"][0]["code"], "approval_denied")
                # Expiry: listed (and expired) once its second has passed.
                quick = alice.execute("pay", "quick")["ticket"]
                for _ in range(100):
                    if all(t["ticket"] != quick for t in bob.approvals("pay")):
                        break
                    time.sleep(0.05)
                with self.assertRaises(ClampaiError) as e:
                    bob.answer("pay", quick, True)
                self.assertEqual((e.exception.status, e.exception.code), (409, "ticket_expired"))
                # At most 1,024 tickets wait.
                kept = alice.execute("pay", "pay", {"amount": 2})["ticket"]
                for _ in range(1023):
                    alice.execute("pay", "pay", {"amount": 1})
                with self.assertRaises(ClampaiError) as e:
                    alice.execute("pay", "pay", {"amount": 1})
                self.assertEqual((e.exception.status, e.exception.code), (429, "too_many_tickets"))
            self.assertEqual(srv.stop(), 0)
        with Server(*args) as srv:
            with srv.client(token=tokens["bob"]) as bob:
                self.assertEqual(len(bob.approvals("pay")), 1024)
                done = bob.answer("pay", kept, True)
                self.assertEqual(done["state"]["balance"], 4995)
                kinds = [e["kind"] for e in bob.trace("pay")]
                self.assertEqual(kinds.count("approval_requested"), 1027)
                self.assertEqual(kinds.count("approval_expired"), 1)
            self.assertEqual(srv.stop(), 0)
            self.assertIn("1024 approval ticket(s) still pending", srv.stderr)

    def test_pools_are_charged_at_every_level_and_shown(self):
        pools = os.path.join(self.dir, "pools.json")
        with open(pools, "w") as f:
            json.dump({"pools": {"org": {"total": 3}, "team": {"total": 2, "parent": "org"}}}, f)
        task = spec("autoscale.json")
        task["budget"]["pool"] = "team"
        path, token = self.token_file()
        with Server("--token-file", path, "--pools", pools) as srv, \
                srv.client(token=token) as c, srv.client() as stranger:
            with self.assertRaises(ClampaiError) as e:
                stranger.pools()
            self.assertEqual(e.exception.status, 401)
            c.create_task(task)
            d = c.execute("autoscale", "scale_up", {"n": 1})
            self.assertTrue(d["executed"])
            self.assertEqual([p["pool"] for p in d["pools"]], ["team", "org"])
            by_name = {p["name"]: p for p in c.pools()}
            self.assertEqual(set(by_name), {"org", "team"})
            self.assertEqual(by_name["team"]["net"], by_name["org"]["net"])
            self.assertEqual(by_name["team"]["parent"], "org")
            self.assertIsNone(by_name["org"]["parent"])
            # The team's pool refuses what the task's own budget (20) would allow.
            while True:
                d = c.execute("autoscale", "scale_up", {"n": 1})
                if not d["executed"]:
                    break
            subjects = [r["subject"] for r in d["reasons"] if r["code"] == "budget_exceeded"]
            self.assertIn("pool:team", subjects)

    def test_shadow_mode_decides_records_and_blocks_nothing(self):
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        log = os.path.join(self.dir, "decisions.jsonl")
        spec_path = os.path.join(SOURCE, "examples", "autoscale.json")
        with Server("--insecure-no-auth", "--data-dir", data, "--spec", spec_path,
                    "--shadow", "autoscale", "--decision-log", log) as srv, srv.client() as c:
            # 4 + 50 instances: the enforcing kernel rejects it (capacity); shadow mode follows.
            d = c.execute("autoscale", "scale_up", {"n": 50})
            self.assertIs(d["approved"], True)
            self.assertIs(d["enforced"], False)
            self.assertIs(d["executed"], True)
            self.assertEqual(d["reasons"], [])
            self.assertEqual(d["state"]["instances"], 54)
            self.assertIs(d["shadow"]["approved"], False)
            self.assertEqual(d["shadow"]["task"], "autoscale")
            codes = [r["code"] for r in d["shadow"]["reasons"]]
            self.assertIn("invariant_violated", codes)
            # What evaluate answers is what the enforcing kernel decides (on the state followed).
            e = c.evaluate("autoscale", "scale_up", {"n": 1})
            self.assertIs(e["approved"], False)
            metrics = c.metrics()
            for code in codes:
                self.assertIn('clampai_shadow_rejections_total{task="autoscale",reason="%s"} %d'
                              % (code, codes.count(code)), metrics)
            self.assertEqual(srv.stop(), 0)
        with open(log) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual([l["outcome"] for l in lines], ["shadow_rejected", "rejected"])
        self.assertEqual(lines[0]["reasons"], codes)
        trace = os.path.join(data, "autoscale.jsonl")
        with open(trace) as f:
            entries = [json.loads(l) for l in f]
        self.assertIs(entries[1]["enforced"], False)
        self.assertEqual([r["code"] for r in entries[1]["reasons"]], codes)
        # The trace replays with its spec: the unenforced step is followed as it was.
        p = subprocess.run([CLAMPAI, "trace", "verify", "--spec", spec_path, trace],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # Refused at start: with a shared ledger, a name no task has, a mode that is none.
        cases = [
            (["--mode", "shadow", "--ledger", "postgresql://127.0.0.1:1/none"], "--ledger"),
            (["--shadow", "autoscale", "--ledger", "postgresql://127.0.0.1:1/none"], "--ledger"),
            (["--spec", spec_path, "--shadow", "autoscal"], "did you mean `autoscale`"),
            (["--mode", "dry"], "--mode"),
        ]
        for args, message in cases:
            p = subprocess.run([CLAMPAI, "serve", "--port", "0", "--insecure-no-auth", *args],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr, args)

    def test_a_bad_principals_file_is_refused_at_start(self):
        path, _ = self.principals_file({"ci": {"deploy": ["exec"]}})
        tok, _ = self.token_file()
        for args, message in [
                (["--principals", path],
                 "principals[0].rights.deploy[0]: unknown right `exec` (did you mean `execute`?)"),
                (["--principals", path, "--token-file", tok], "excludes"),
                (["--principals", path, "--insecure-no-auth"], "excludes")]:
            p = subprocess.run([CLAMPAI, "serve", "--port", "0", *args], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr, args)
            self.assertEqual(p.stdout, "")

    def test_limits_answer_413_431_and_400_and_the_server_goes_on(self):
        with Server("--insecure-no-auth") as srv:
            status, _, body = raw(srv.port, b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\n"
                                  b"Content-Length: 5000000\r\n\r\n", "/v1/tasks", "post")
            self.assertEqual((status, body["error"]["code"]), (413, "body_too_large"))
            status, _, body = raw(srv.port, b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                  b"a" * 20000 + b"\r\n\r\n")
            self.assertEqual((status, body["error"]["code"]), (431, "headers_too_large"))
            status, _, body = raw(srv.port, b"GARBAGE\r\n\r\n")
            RECORDS.pop()  # not an operation of the document
            self.assertEqual((status, body["error"]["code"]), (400, "malformed_request"))
            with srv.client() as c:
                deep = ("[" * 100 + "]" * 100).encode()
                with self.assertRaises(ClampaiError) as e:
                    c._json("POST", "/v1/tasks", deep)
                self.assertEqual(e.exception.code, "json_too_deep")
                self.assertIn("clampai_malformed_requests_total 4", c.metrics())
                self.assertEqual(c.health()["status"], "ok")
            self.assertEqual(srv.stop(), 0)
            self.assertIn("malformed request", srv.stderr)

    def test_a_body_of_unknown_length_is_refused_and_closes_the_connection(self):
        # Issue 35: `Transfer-Encoding: gzip` (no `chunked` last) was read as an empty body, so
        # a rollback of sequence 999999 undid the latest commit and the body's bytes were read
        # as a second request; `gzip, chunked` was decoded as chunked, the gzip ignored.
        body = b'{"sequence": 999999}'
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        cases = [
            (b"Transfer-Encoding: gzip\r\n", body),
            (b"Transfer-Encoding: gzip, chunked\r\n", chunked),
            (b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", chunked),
            (b"Transfer-Encoding: chunked, chunked\r\n", chunked),
            (b"Transfer-Encoding: identity\r\n", body),
            (b"Transfer-Encoding: \r\n", body),
            (b"Transfer-Encoding: gzip\r\nContent-Length: %d\r\n" % len(body), body),
        ]
        with Server("--insecure-no-auth", "--spec",
                    os.path.join(SOURCE, "examples", "quickstart.json")) as srv:
            with srv.client() as c:
                self.assertTrue(c.execute("quickstart", "process_batch")["executed"])
            for headers, payload in cases:
                with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
                    s.sendall(b"POST /v1/tasks/quickstart/rollback HTTP/1.1\r\nHost: x\r\n" +
                              headers + b"\r\n" + payload)
                    answer = until_closed(s)  # one answer, then the server closes
                head, _, rest = answer.partition(b"\r\n\r\n")
                self.assertTrue(head.startswith(b"HTTP/1.1 400 "), (headers, answer))
                self.assertIn(b"Connection: close", head)
                error = json.loads(rest)["error"]
                self.assertEqual(error["code"], "malformed_request", headers)
                self.assertIn("Transfer-Encoding", error["message"])
                self.assertEqual(answer.count(b"HTTP/1.1"), 1, answer)  # no second request
            # `chunked` alone is read: the rollback of an unknown sequence is refused as such.
            with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
                s.sendall(b"POST /v1/tasks/quickstart/rollback HTTP/1.1\r\nHost: x\r\n"
                          b"Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n" + chunked)
                head, _, rest = until_closed(s).partition(b"\r\n\r\n")
                self.assertTrue(head.startswith(b"HTTP/1.1 409 "), head)
                self.assertEqual(json.loads(rest)["error"]["code"], "rollback_refused")
            with srv.client() as c:
                self.assertEqual(c.state("quickstart")["steps"], 1)  # nothing rolled back
                self.assertIn("clampai_malformed_requests_total %d" % len(cases), c.metrics())
            self.assertEqual(srv.stop(), 0)

    @unittest.skipIf("undefined" in os.environ.get("CLAMPAI_SANITIZE", ""),
                     "UBSan's vptr check opens a pipe when its cache misses: at the descriptor "
                     "limit that fails, and it reports a false error and aborts")
    def test_accepting_goes_on_after_running_out_of_descriptors(self):
        # Issue 35: one "too many open files" ended the accept loop for ever. The server gets 64
        # descriptors; idle connections take them all, then the next accept fails, which the
        # server logs. Once the idle connections close, a new request is answered and the
        # failures are counted. (No duration is asserted: the waits only guard the test.)
        with Server("--insecure-no-auth", max_fds=64) as srv:
            idle = []
            try:
                logged = ""
                deadline = time.monotonic() + 120
                while "cannot accept a connection" not in logged:
                    self.assertLess(time.monotonic(), deadline, "no accept failure logged")
                    if len(idle) < 200:
                        idle.append(socket.create_connection(("127.0.0.1", srv.port), timeout=60))
                        continue
                    readable, _, _ = select.select([srv.proc.stderr], [], [], 1)
                    if readable:
                        logged += os.read(srv.proc.stderr.fileno(), 4096).decode()
                self.assertIn("Too many open files", logged)
            finally:
                for s in idle:
                    s.close()
            answered = None
            for _ in range(30):  # until the queued closed connections are accepted and dropped
                try:
                    status, _, body = raw(srv.port, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n"
                                          b"Connection: close\r\n\r\n")
                    answered = (status, body["status"])
                    break
                except (socket.timeout, ConnectionError):
                    time.sleep(0.5)
            self.assertEqual(answered, (200, "ok"))
            with srv.client() as c:
                m = re.search(r"^clampai_accept_errors_total (\d+)$", c.metrics(), re.M)
                self.assertIsNotNone(m)
                self.assertGreater(int(m.group(1)), 0)
            self.assertEqual(srv.stop(), 0)

    def test_refusals_at_start_exit_2_with_a_message(self):
        short, _ = self.token_file("short")
        cases = [
            ([], "--token-file"),
            (["--insecure-no-auth", "--host", "0.0.0.0"], "loopback"),
            (["--token-file", short], "at least 16"),
            (["--insecure-no-auth", "--spec", os.path.join(self.dir, "missing.json")],
             "missing.json"),
            (["--insecure-no-auth", "--data-dir", os.path.join(self.dir, "nope")], "no such directory"),
        ]
        for args, message in cases:
            p = subprocess.run([CLAMPAI, "serve", "--port", "0", *args], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr, args)
            self.assertEqual(p.stdout, "")

    def test_an_orphan_trace_is_409_for_post_and_the_directory_still_starts(self):
        # A trace of no served task (its spec file gone): adding that task answered 500 and
        # left a spec and a split trace that stopped every restart (issue 35).
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        with Server("--insecure-no-auth", "--data-dir", data) as srv, srv.client() as c:
            c.create_task(spec("autoscale.json"))
            c.execute("autoscale", "scale_up", {"n": 1})
            self.assertEqual(srv.stop(signal.SIGTERM), 0)  # sealed
        os.remove(os.path.join(data, "autoscale.spec.json"))
        orphan = os.path.join(data, "autoscale.jsonl")
        with open(orphan, "rb") as f:
            before = f.read()
        other = spec("autoscale.json")
        other["variables"]["instances"]["initial"] = 5
        for _ in range(2):  # each time a restart, then the refusal
            with Server("--insecure-no-auth", "--data-dir", data) as srv, srv.client() as c:
                with self.assertRaises(ClampaiError) as e:
                    c.create_task(other)
                self.assertEqual(e.exception.status, 409)
                self.assertEqual(e.exception.code, "task_exists")
                self.assertIn(orphan, str(e.exception))
                self.assertEqual(sorted(os.listdir(data)), ["autoscale.jsonl"])
                self.assertEqual(srv.stop(signal.SIGTERM), 0)
        with open(orphan, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_kill_9_then_restart_resumes_every_task_and_sigterm_seals(self):
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        autoscale = os.path.join(SOURCE, "examples", "autoscale.json")
        with Server("--insecure-no-auth", "--data-dir", data, "--spec", autoscale) as srv, \
                srv.client() as c:
            c.create_task(spec("quickstart.json"))
            for n in (1, 2, 50, 3, 1, 40):
                c.execute("autoscale", "scale_up", {"n": n})
            c.execute("quickstart", "process_batch")
            before = {t: c.state(t) for t in ("autoscale", "quickstart")}
            srv.stop(signal.SIGKILL)
        for task in ("autoscale", "quickstart"):
            subprocess.run([CLAMPAI, "trace", "verify", "--allow-unsealed",
                            os.path.join(data, task + ".jsonl"), "--spec",
                            os.path.join(data, task + ".spec.json")],
                           check=True, stdout=subprocess.DEVNULL)
        with Server("--insecure-no-auth", "--data-dir", data, "--spec", autoscale) as srv, \
                srv.client() as c:
            for task, state in before.items():
                self.assertEqual(c.state(task), state)  # nothing committed was lost
            # T1 still holds across the restart: the budget left is what it was.
            while c.execute("quickstart", "process_batch")["executed"]:
                pass
            after = c.state("quickstart")
            self.assertLessEqual(float(after["budget"]["net"]), float(after["budget"]["total"]))
            self.assertEqual(srv.stop(signal.SIGTERM), 0)
            self.assertIn("sealed", srv.stderr)
        for task in ("autoscale", "quickstart"):
            subprocess.run([CLAMPAI, "trace", "verify", os.path.join(data, task + ".jsonl"),
                            "--spec", os.path.join(data, task + ".spec.json")],
                           check=True, stdout=subprocess.DEVNULL)

    def test_sigterm_closes_idle_keep_alive_connections(self):
        with Server("--insecure-no-auth") as srv:
            c = srv.client()
            c.health()  # the connection stays open, idle
            self.assertEqual(srv.stop(signal.SIGTERM), 0)
            c.close()

    def test_sigterm_finishes_a_request_in_flight(self):
        with Server("--insecure-no-auth", "--spec",
                    os.path.join(SOURCE, "examples", "quickstart.json")) as srv:
            body = b'{"action": "process_batch"}'
            with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
                s.sendall(b"POST /v1/tasks/quickstart/execute HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body[:10])
                time.sleep(0.2)  # the request is half received (the test holds either way)
                srv.proc.send_signal(signal.SIGTERM)
                time.sleep(0.2)
                s.sendall(body[10:])
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
            head, _, answer = data.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), data)
            self.assertIn(b"Connection: close", head)
            self.assertTrue(json.loads(answer)["executed"])
            self.assertEqual(srv.proc.wait(timeout=60), 0)

    def test_request_timeout_closes_slow_and_stalled_clients(self):
        # A short configured timeout; each case asserts what happens (the connection closed,
        # nothing answered, nothing executed), never how long it took.
        execute = b"POST /v1/tasks/quickstart/execute HTTP/1.1\r\nHost: x\r\n"
        body = b'{"action": "process_batch"}'
        with Server("--insecure-no-auth", "--request-timeout-ms", "300", "--spec",
                    os.path.join(SOURCE, "examples", "quickstart.json")) as srv:
            # The socket's own timeout only guards the test: the server must close first.
            with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
                s.sendall(execute)  # the headers never end
                self.assertEqual(until_closed(s), b"")
            with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
                s.sendall(execute + b"Content-Length: %d\r\n\r\n" % len(body) + body[:10])
                self.assertEqual(until_closed(s), b"")  # the body never ends
            with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = until_closed(s)  # answered, then closed once idle
                self.assertTrue(answer.startswith(b"HTTP/1.1 200"), answer)
            # Slow headers: one byte every 20 ms of a 4,000-byte request (80 s to send it all)
            # is cut off once the timeout passes: a whole request never arrives.
            slow = execute + b"X-Pad: " + b"a" * 3900 + b"\r\n\r\n"
            sent, closed = 0, False
            with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
                while sent < len(slow) and not closed:
                    try:
                        s.sendall(slow[sent:sent + 1])
                    except (BrokenPipeError, ConnectionResetError):
                        closed = True
                        break
                    sent += 1
                    readable, _, _ = select.select([s], [], [], 0.02)
                    if readable:
                        self.assertEqual(until_closed(s), b"")
                        closed = True
            self.assertTrue(closed)
            self.assertLess(sent, len(slow))
            with srv.client() as c:
                state = c.state("quickstart")
                self.assertEqual(state["steps"], 0)  # no stalled request was executed
                self.assertEqual(c.health()["status"], "ok")  # and the server goes on
            self.assertEqual(srv.stop(), 0)

    def test_tls(self):
        cert = os.path.join(self.dir, "cert.pem")
        key = os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        with Server("--insecure-no-auth", "--tls-cert", cert, "--tls-key", key) as srv:
            self.assertTrue(srv.url.startswith("https://127.0.0.1:"))
            with Client(srv.url, cafile=cert) as c:
                self.assertEqual(c.health()["status"], "ok")
            with self.assertRaises(Exception):  # plain HTTP to a TLS port gets no HTTP answer
                with Client(srv.url.replace("https", "http"), timeout=10) as plain:
                    plain.health()

    def test_live_page_holds_no_secret_under_a_strict_policy(self):
        import base64
        import hashlib
        import http.client

        def page(srv, method="GET", headers=None):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            conn.request(method, "/", headers=headers or {})
            r = conn.getresponse()
            body = r.read()
            conn.close()
            observe(method, "/", r.status, r.getheader("Content-Type", ""), body)
            return r, body

        path, token = self.token_file()
        other = os.path.join(self.dir, "other-token.txt")
        with open(other, "w") as f:
            f.write("another-token-0123456789abcdef\n")
        with Server("--token-file", path, "--spec",
                    os.path.join(SOURCE, "examples", "autoscale.json")) as srv:
            r, body = page(srv)  # no token needed for the page itself
            self.assertEqual(r.status, 200)
            self.assertEqual(r.getheader("Content-Type"), "text/html; charset=utf-8")
            html = body.decode()
            self.assertNotIn(token, html)
            self.assertNotIn(hashlib.sha256(token.encode()).hexdigest(), html)
            # The policy: nothing but the page's own hashed style and script, and requests to
            # the server itself.
            policy = dict(d.strip().split(" ", 1) for d in
                          r.getheader("Content-Security-Policy").split(";"))
            self.assertEqual(policy["default-src"], "'none'")
            self.assertEqual(policy["connect-src"], "'self'")
            self.assertEqual(policy["img-src"], "data:")
            self.assertEqual(policy["frame-ancestors"], "'none'")
            self.assertEqual(policy["base-uri"], "'none'")
            self.assertEqual(policy["form-action"], "'none'")
            self.assertNotIn("unsafe", r.getheader("Content-Security-Policy"))
            self.assertEqual(r.getheader("X-Content-Type-Options"), "nosniff")
            self.assertEqual(r.getheader("X-Frame-Options"), "DENY")
            self.assertEqual(r.getheader("Cache-Control"), "no-store")
            scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
            styles = re.findall(r"<style([^>]*)>(.*?)</style>", html, re.S)
            self.assertEqual([a for a, _ in scripts + styles], ["", ""])  # inline, no src

            def digest(text):
                return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
            self.assertEqual(policy["script-src"], digest(scripts[0][1]))
            self.assertEqual(policy["style-src"], digest(styles[0][1]))
            self.assertNotRegex(html, r"(src|href)=\"(?!data:|#)")  # nothing loaded from elsewhere
            self.assertNotRegex(html, r" on[a-z]+=")  # no inline event handler
            # The same bytes with a token, and from a server with another token: no secret.
            _, with_token = page(srv, headers={"Authorization": f"Bearer {token}"})
            self.assertEqual(with_token, body)
            r, _ = page(srv, method="POST")
            self.assertEqual(r.status, 405)
        with Server("--token-file", other) as srv2:
            _, body2 = page(srv2)
            self.assertEqual(body2, body)

    def test_live_feed_shows_decisions_as_they_happen(self):
        path, tokens = self.principals_file({"ops": {"*": ["read", "execute", "decide", "admin"]},
                                             "watcher": {"autoscale": ["read"]},
                                             "nobody": {"*": ["approve"]}})
        pools = os.path.join(self.dir, "pools.json")
        with open(pools, "w") as f:
            json.dump({"pools": {"org": {"total": 30}}}, f)
        auto = spec("autoscale.json")
        auto["budget"]["pool"] = "org"
        auto_path = os.path.join(self.dir, "autoscale.json")
        with open(auto_path, "w") as f:
            json.dump(auto, f)
        with Server("--principals", path, "--pools", pools, "--spec", auto_path, "--spec",
                    os.path.join(SOURCE, "examples", "quickstart.json")) as srv, \
                srv.client(token=tokens["ops"]) as ops, \
                srv.client(token=tokens["watcher"]) as watcher, \
                srv.client(token=tokens["nobody"]) as nobody, srv.client() as anonymous:
            with self.assertRaises(ClampaiError) as e:
                anonymous.live()
            self.assertEqual((e.exception.status, e.exception.code), (401, "unauthorized"))
            with self.assertRaises(ClampaiError) as e:
                nobody.live()
            self.assertEqual((e.exception.status, e.exception.code), (403, "forbidden"))
            first = ops.live()
            self.assertEqual([t["task"] for t in first["tasks"]], ["autoscale", "quickstart"])
            self.assertEqual([p["name"] for p in first["pools"]], ["org"])
            t = first["tasks"][0]
            self.assertEqual((t["events"], t["recent"]), (0, []))
            self.assertIn('data-final-net="0.000"', t["charts"]["spend"])
            self.assertIn('data-total="20.000"', t["charts"]["spend"])
            done = ops.execute("autoscale", "scale_up", {"n": 2})
            refused = ops.execute("autoscale", "scale_up", {"n": 50})
            ops.evaluate("autoscale", "set_throttle", {"fraction": "0.5"})
            self.assertTrue(done["executed"])
            self.assertFalse(refused["executed"])
            ops.rollback("autoscale")
            live = ops.live()
            t = live["tasks"][0]
            self.assertEqual(t["events"], 4)
            self.assertEqual([(e["id"], e["endpoint"], e["action"], e["outcome"], e["principal"])
                              for e in t["recent"]],
                             [(3, "rollback", "scale_up", "rolled_back", "ops"),
                              (2, "evaluate", "set_throttle", "approved", "ops"),
                              (1, "execute", "scale_up", "rejected", "ops"),
                              (0, "execute", "scale_up", "executed", "ops")])
            self.assertEqual(t["recent"][3]["sequence"], done["sequence"])
            self.assertEqual(t["recent"][3]["cost"], done["cost"])
            self.assertEqual([r["code"] for r in t["recent"][2]["reasons"]],
                             [r["code"] for r in refused["reasons"]])
            self.assertEqual(t["decisions"], {"approved": 2, "rejected": 1, "rollbacks": 1})
            self.assertEqual(t["status"], ops.state("autoscale"))
            # The charts are the report's, of what execute and rollback did: the start, the
            # commit, the rejection, the rollback.
            spend = t["charts"]["spend"]
            self.assertIn('data-entries="4"', spend)
            self.assertIn(f'data-final-net="{t["status"]["budget"]["net"]}"', spend)
            self.assertIn(f'data-final-gross="{done["budget"]["gross"]}"', spend)
            self.assertIn('data-executed="1" data-rejected="1" data-rolled-back="1"',
                          t["charts"]["timeline"])
            codes = [r["code"] for r in refused["reasons"]]
            for code in set(codes):
                self.assertIn(f'data-code="{code}" data-count="{codes.count(code)}"',
                              t["charts"]["reasons"])
            self.assertEqual(live["tasks"][1]["recent"], [])
            # A principal sees the tasks it may read, and the pools only with `read` on `*`.
            seen = watcher.live()
            self.assertEqual([t["task"] for t in seen["tasks"]], ["autoscale"])
            self.assertEqual(seen["pools"], [])
            # At most the last 50 events are kept, newest first.
            for _ in range(60):
                ops.evaluate("quickstart", "process_batch")
            q = ops.live()["tasks"][1]
            self.assertEqual(q["events"], 60)
            self.assertEqual([e["id"] for e in q["recent"]], list(range(59, 9, -1)))

    def test_zz_every_response_matches_the_openapi_document(self):
        if not VALIDATE:
            self.skipTest("valijson missing: validate_openapi not built")
        path = os.path.join(self.dir, "records.jsonl")
        with open(path, "w") as f:
            for r in RECORDS:
                f.write(json.dumps(r) + "\n")
        p = subprocess.run([VALIDATE, os.path.join(SOURCE, "schema", "openapi.json"), path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # The check can fail: a health answer without `version` does not validate.
        with open(path, "a") as f:
            f.write(json.dumps({"method": "get", "path": "/v1/health", "status": 200,
                                "content_type": "application/json",
                                "body": '{"status": "ok", "tasks": 0}'}) + "\n")
        p = subprocess.run([VALIDATE, os.path.join(SOURCE, "schema", "openapi.json"), path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("get /v1/health 200: the body does not validate", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
