"""A client for `clampai serve` (docs/SERVE.md), using only the Python standard library.

    from clampai_client import Client
    c = Client("http://127.0.0.1:8765", token=open("token.txt").read().strip())
    d = c.execute("quickstart", "process_batch")
    if not d["approved"]:
        print([r["code"] for r in d["reasons"]])

Decisions come back as dicts, approved or not. Errors of the API raise `ClampaiError` with the
HTTP status and the server's stable code. One keep-alive connection per client; not thread-safe
(use one client per thread).
"""

import http.client
import json
import ssl
import urllib.parse

__all__ = ["Client", "ClampaiError"]


class ClampaiError(Exception):
    """An error answer of the server: `status` (HTTP), `code` (stable) and `message`; for a
    refused reload (`reload_refused`) also `failed` (the check) and `details`."""

    def __init__(self, status, code, message, failed=None, details=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.failed = failed
        self.details = details or []


class Client:
    """A connection to one server. `url` is what the server printed (`http://HOST:PORT`, or
    `https://` with TLS); `token` the bearer token of its --token-file; `cafile` a CA or
    certificate file to trust for https; `timeout` seconds per request; `observer`, if given, is
    called with (method, path, status, content_type, body) after every response."""

    def __init__(self, url, token=None, cafile=None, timeout=30.0, observer=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"url `{url}`: expected http:// or https://")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._token = token
        self._timeout = timeout
        self._context = ssl.create_default_context(cafile=cafile) if self._https else None
        self._observer = observer
        self._conn = None

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the API ----

    def health(self):
        return self._json("GET", "/v1/health")

    def tasks(self):
        return self._json("GET", "/v1/tasks")["tasks"]

    def create_task(self, spec):
        """Serves a new task; `spec` is a task spec as a dict or JSON text."""
        text = spec if isinstance(spec, str) else json.dumps(spec)
        return self._json("POST", "/v1/tasks", text.encode())

    def reload(self, task, spec, dry_run=False):
        """Replaces the task's spec behind proofs (`dry_run`: only checks); `spec` is a task
        spec as a dict or JSON text. A refusal raises ClampaiError `reload_refused`."""
        text = spec if isinstance(spec, str) else json.dumps(spec)
        path = self._task(task, "spec") + ("?dry_run=1" if dry_run else "")
        return self._json("PUT", path, text.encode())

    def evaluate(self, task, action, params=None):
        return self._json("POST", self._task(task, "evaluate"), self._proposal(action, params))

    def execute(self, task, action, params=None):
        return self._json("POST", self._task(task, "execute"), self._proposal(action, params))

    def rollback(self, task, sequence=None):
        body = {} if sequence is None else {"sequence": sequence}
        return self._json("POST", self._task(task, "rollback"), json.dumps(body).encode())

    def state(self, task):
        return self._json("GET", self._task(task, "state"))

    def pools(self):
        """The budget pools (`serve --pools`): each with its `total`, `net`, `gross`,
        `remaining` and `tasks`; the server needs right `read` on every task."""
        return self._json("GET", "/v1/pools")["pools"]

    def live(self):
        """What the live page (`GET /`) shows: each task the caller may read, with its status,
        decisions counted, recent events (newest first) and the HTML report's charts; the pools
        when the caller may read every task."""
        return self._json("GET", "/v1/live")

    def approvals(self, task):
        """The tickets waiting for an approval on `task`, oldest first (those whose time ran
        out expire first). An `execute` of an action whose spec asks for an approval answers
        `{"approved": False, "pending": True, "ticket": ...}` and commits nothing."""
        return self._json("GET", self._task(task, "approvals"))["tickets"]

    def answer(self, task, ticket, approve):
        """Approves (`approve=True`: the kernel decides again on the state of now, and commits
        if it approves) or denies ticket `ticket` of `task`, as a principal other than the one
        who asked. Returns the execute-shaped answer with `granted` and `by`."""
        path = self._task(task, "approvals") + "/" + urllib.parse.quote(ticket, safe="")
        return self._json("POST", path, json.dumps({"approve": bool(approve)}).encode())

    def trace(self, task):
        """Yields the task's trace entries (dicts), read as the server streams them."""
        response, path = self._request("GET", self._task(task, "trace"), None, stream=True)
        body = b""
        try:
            while True:
                line = response.readline()
                if not line:
                    break
                body += line
                yield json.loads(line)
        finally:
            body += response.read()  # the rest, if the caller stopped early
            if response.will_close:
                self.close()
            self._observe("GET", path, response, body)

    def trace_text(self, task):
        """The task's trace as JSON Lines text, as the server sent it."""
        return self._text("GET", self._task(task, "trace"))

    def lookahead(self, task, action, params=None, depth=None):
        body = {"action": action}
        if params:
            body["params"] = params
        if depth is not None:
            body["depth"] = depth
        return self._json("POST", self._task(task, "lookahead"), json.dumps(body).encode())

    def repair(self, task, action, params=None):
        return self._json("POST", self._task(task, "repair"), self._proposal(action, params))

    def verify(self, task):
        return self._json("POST", self._task(task, "verify"), b"{}")

    def metrics(self):
        return self._text("GET", "/metrics")

    # ---- plumbing ----

    @staticmethod
    def _task(task, op):
        return f"/v1/tasks/{urllib.parse.quote(task, safe='')}/{op}"

    @staticmethod
    def _proposal(action, params):
        body = {"action": action}
        if params:
            body["params"] = params
        return json.dumps(body).encode()

    def _connection(self):
        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=self._context)
            else:
                self._conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout)
        return self._conn

    def _request(self, method, path, body, stream=False):
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                break
            except (ConnectionError, http.client.BadStatusLine):
                # The server closed an idle keep-alive connection: retry once on a new one.
                self.close()
                if attempt == 1:
                    raise
        if response.status >= 400 or not stream:
            data = response.read()
            if response.will_close:
                self.close()
            self._observe(method, path, response, data)
            if response.status >= 400:
                try:
                    error = json.loads(data)["error"]
                    raise ClampaiError(response.status, error["code"], error["message"],
                                       error.get("failed"), error.get("details"))
                except (ValueError, KeyError, TypeError):
                    raise ClampaiError(response.status, "unknown", data.decode(errors="replace"))
            return data, path
        return response, path

    def _observe(self, method, path, response, body):
        if self._observer is not None:
            self._observer(method, path, response.status,
                           response.getheader("Content-Type", ""), body)

    def _json(self, method, path, body=None):
        data, _ = self._request(method, path, body)
        return json.loads(data)

    def _text(self, method, path):
        data, _ = self._request(method, path, None)
        return data.decode()
