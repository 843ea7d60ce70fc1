"""`clampai gateway --port`: MCP's Streamable HTTP transport, its protocol edges (issue 39).
A raw HTTP client (http.client) against `clampai gateway --port 0 --token-file F` in front of
tests/cli/fake_upstream.py. Checked: a missing or wrong token is 401; a wrong Origin is 403 (a
loopback one is served); a request without a session is 400 and with an unknown one 404; a
body over --max-message-bytes is 413; malformed JSON is 400 with a JSON-RPC parse error; GET
is 405; an unsupported MCP-Protocol-Version is 400; notifications are 202; a call the kernel
approves reaches the upstream and one it rejects does not; DELETE ends the session (then 404);
usage errors (no token, --insecure-no-auth off loopback, --token-file without --port); TLS
with --tls-cert/--tls-key. No
duration is asserted. Run by ctest with CLAMPAI in the environment."""

import http.client
import json
import os
import socket
import ssl
import subprocess
import tempfile

from gateway_passthrough_test import CLAMPAI, UPSTREAM, pins

TOKEN = "0123456789abcdef-http-token"


class Gateway:
    def __init__(self, args, env, scheme="http"):
        self.p = subprocess.Popen([CLAMPAI, "gateway", *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        line = self.p.stdout.readline()
        assert line.startswith("listening on " + scheme + "://127.0.0.1:"), (
            line, self.p.stderr.read())
        url = line.split()[-1]
        assert url.endswith("/mcp"), url
        self.port = int(url.split(":")[2].split("/")[0])

    def request(self, method, body=None, headers=None, token=TOKEN, raw=None):
        h = {"Accept": "application/json, text/event-stream"}
        if body is not None or raw is not None:
            h["Content-Type"] = "application/json"
        if token is not None:
            h["Authorization"] = "Bearer " + token
        h.update(headers or {})
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        c.request(method, "/mcp", body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), text

    def raw(self, data):
        """Sends `data` as it is and reads the answer to the end of the connection."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as sock:
            sock.sendall(data)
            got = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
        head, _, body = got.partition(b"\r\n\r\n")
        return int(head.split()[1]), body.decode()

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(timeout=60)
        return rc, self.p.stderr.read()


def initialize(g, **kw):
    return g.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
        "capabilities": {}}}, **kw)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "upstream.log")
        env = dict(os.environ, FAKE_LOG=log)
        env.pop("FAKE_DESC", None)
        pin = pins(env)
        open(log, "w").close()
        spec = os.path.join(tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({
                "name": "paying",
                "variables": {"paid": {"type": "int", "initial": 0, "min": 0}},
                "actions": [{"id": "pay", "description": "pay",
                             "parameters": {"amount": {"type": "int", "min": 0, "max": 1000}},
                             "cost": 1,
                             "effects": [{"variable": "paid", "mode": "increment",
                                          "value": "amount"}]}],
                "invariants": [{"name": "cap", "check": "paid <= 100"}],
                "budget": {"total": 10, "min_action_cost": 1},
                "bindings": {"tools": {"transfer": {"action": "pay", "pin": pin["transfer"],
                                                    "params": {"amount": "amount"}}}},
            }, f)
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")

        # Usage: HTTP needs a token or --insecure-no-auth (loopback only); the HTTP flags need
        # --port.
        for args, pattern in (
                (["--port", "0"], "--token-file"),
                (["--port", "0", "--insecure-no-auth", "--host", "0.0.0.0"], "loopback"),
                (["--token-file", token_file], "need --port")):
            p = subprocess.run([CLAMPAI, "gateway", spec, *args, "--", *UPSTREAM],
                               capture_output=True, text=True, env=env, timeout=60)
            assert p.returncode == 2, (args, p.returncode, p.stderr)
            assert pattern in p.stderr, (args, p.stderr)

        # An action that asks for an approval is asked of the client through elicitation, which
        # HTTP (no stream to the client) cannot carry: refused at start, naming the action.
        with open(spec, encoding="utf-8") as f:
            approving = json.load(f)
        approving["actions"][0]["approval"] = {"ttl_s": 60}
        approving_spec = os.path.join(tmp, "approving.json")
        with open(approving_spec, "w", encoding="utf-8") as f:
            json.dump(approving, f)
        p = subprocess.run([CLAMPAI, "gateway", approving_spec, "--port", "0",
                            "--insecure-no-auth", "--", *UPSTREAM],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert "`pay` waits for an approval" in p.stderr and "over HTTP" in p.stderr, p.stderr

        g = Gateway([spec, "--port", "0", "--token-file", token_file, "--max-message-bytes",
                     "4096", "--trace", os.path.join(tmp, "t.jsonl"), "--", *UPSTREAM], env)
        try:
            # Authentication, before anything else is looked at.
            status, headers, text = initialize(g, token=None)
            assert status == 401, (status, text)
            assert headers.get("www-authenticate") == "Bearer", headers
            assert json.loads(text)["error"]["message"].startswith("unauthorized"), text
            status, _, text = initialize(g, token="0123456789abcdef-wrong-token")
            assert status == 401, (status, text)
            # DNS rebinding: a page of another site carries its Origin.
            for origin in ("http://evil.example", "http://127.0.0.1.evil.example:80",
                           "null", "http://localhost/path"):
                status, _, text = initialize(g, headers={"Origin": origin})
                assert status == 403, (origin, status, text)
            # A loopback Origin is this machine's.
            status, headers, text = initialize(g, headers={"Origin": "http://localhost:3000"})
            assert status == 200, (status, text)
            status, headers, text = initialize(g)
            assert status == 200, (status, text)
            assert headers["content-type"] == "application/json", headers
            result = json.loads(text)
            assert result["id"] == 1 and result["result"]["protocolVersion"] == "2025-06-18", text
            session = headers["mcp-session-id"]
            assert len(session) == 32, session
            s = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}

            # The upstream is initialised once, whichever session says so first.
            status, _, text = g.request("POST", {"jsonrpc": "2.0",
                                                 "method": "notifications/initialized"},
                                        headers=s)
            assert status == 202 and text == "", (status, text)

            # Sessions: none given is 400, an unknown one 404.
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            status, _, text = g.request("POST", ping)
            assert status == 400, (status, text)
            status, _, text = g.request("POST", ping, headers={"Mcp-Session-Id": "f" * 32})
            assert status == 404, (status, text)
            status, _, text = g.request("POST", ping, headers=s)
            assert status == 200 and json.loads(text) == {"jsonrpc": "2.0", "id": 2,
                                                          "result": {}}, (status, text)
            status, _, text = g.request("POST", ping, headers=dict(
                s, **{"MCP-Protocol-Version": "1999-01-01"}))
            assert status == 400 and "MCP-Protocol-Version" in text, (status, text)

            # The body: over the limit, malformed, not JSON-RPC.
            # (The headers only: the gateway answers before the body, and closes.)
            status, text = g.raw(b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                 TOKEN.encode() + b"\r\nContent-Type: application/json\r\n"
                                 b"Mcp-Session-Id: " + session.encode() +
                                 b"\r\nContent-Length: 5000\r\n\r\n")
            assert status == 413, (status, text)
            assert "--max-message-bytes" in json.loads(text)["error"]["message"], text
            status, _, text = g.request("POST", raw=b'{"jsonrpc": "2.0", "id": 3, "method"',
                                        headers=s)
            assert status == 400, (status, text)
            assert json.loads(text)["error"]["code"] == -32700, text
            status, _, text = g.request("POST", raw=b'[{"jsonrpc": "2.0", "id": 3}]', headers=s)
            assert status == 400 and json.loads(text)["error"]["code"] == -32600, (status, text)

            # No server-to-client stream.
            status, headers, text = g.request("GET", headers=s)
            assert status == 405 and headers.get("allow") == "POST, DELETE", (status, headers)

            # The kernel decides before anything is forwarded.
            call = lambda i, amount: {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                      "params": {"name": "transfer",
                                                 "arguments": {"amount": amount}}}
            status, _, text = g.request("POST", call(4, 60), headers=s)
            assert status == 200, (status, text)
            assert not json.loads(text)["result"].get("isError"), text
            status, _, text = g.request("POST", call(5, 70), headers=s)  # 60 + 70 > 100
            assert status == 200, (status, text)
            assert json.loads(text)["result"]["isError"] is True, text
            with open(log) as f:
                calls = f.read()
            assert "transfer 60" in calls and "transfer 70" not in calls, calls

            # A response of the client is accepted (the gateway asks nothing over HTTP).
            status, _, _ = g.request("POST", {"jsonrpc": "2.0", "id": "x", "result": {}},
                                     headers=s)
            assert status == 202, status

            # DELETE ends the session.
            status, _, _ = g.request("DELETE", headers=s)
            assert status == 200, status
            status, _, _ = g.request("POST", ping, headers=s)
            assert status == 404, status
            status, _, _ = g.request("DELETE", headers=s)
            assert status == 404, status
            # Another path is not the endpoint.
            c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=60)
            c.request("POST", "/other", body=b"{}", headers={"Authorization": "Bearer " + TOKEN})
            assert c.getresponse().status == 404
            c.close()
        finally:
            rc, err = g.stop()
        assert rc == 0, (rc, err)
        p = subprocess.run([CLAMPAI, "trace", "verify", os.path.join(tmp, "t.jsonl")],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr

        # TLS, as serve has it, here without a token (--insecure-no-auth, on loopback).
        cert = os.path.join(tmp, "cert.pem")
        key = os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        g = Gateway([spec, "--port", "0", "--insecure-no-auth", "--tls-cert", cert, "--tls-key",
                     key, "--", *UPSTREAM], env, scheme="https")
        try:
            c = http.client.HTTPSConnection("127.0.0.1", g.port, timeout=60,
                                            context=ssl.create_default_context(cafile=cert))
            c.request("POST", "/mcp", body=json.dumps({
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}}),
                headers={"Content-Type": "application/json", "Accept": "application/json"})
            r = c.getresponse()
            body = json.loads(r.read())
            assert r.status == 200 and body["result"]["protocolVersion"] == "2025-03-26", body
            assert r.getheader("Mcp-Session-Id"), r.getheaders()
            c.close()
        finally:
            rc, err = g.stop()
        assert rc == 0, (rc, err)
    print("gateway_http: ok")


if __name__ == "__main__":
    main()
