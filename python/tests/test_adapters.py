"""clampai.adapters: the FastAPI middleware (with Starlette's TestClient), the MCP server
(spoken to in JSON-RPC, in process and over stdio), and the Anthropic and OpenAI adapters on
the C++ HTTP adapters against fake servers on 127.0.0.1 (never the real APIs)."""

import asyncio
import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import clampai
from clampai import Invariant, SafetyViolation
from clampai import adapters
from clampai.invariants import no_sensitive_substring_invariant

HAS_FASTAPI = True
try:
    import fastapi  # noqa: F401
    from starlette.testclient import TestClient
except ImportError:
    HAS_FASTAPI = False

needs_fastapi = pytest.mark.skipif(not HAS_FASTAPI, reason="python3-fastapi is not installed")


# --- The package -------------------------------------------------------------------------------

def test_the_package_names_the_reference_adapters_debian_ships():
    assert {"AnthropicAdapter", "AsyncAnthropicAdapter", "OpenAIAdapter", "AsyncOpenAIAdapter",
            "ClampAIMiddleware", "SafeMCPServer"} <= set(adapters.__all__)
    for name in adapters.__all__:
        assert getattr(adapters, name).__name__ == name


def test_an_out_of_scope_adapter_says_why():
    with pytest.raises(ImportError, match="Debian does not ship LangChain"):
        from clampai.adapters import ClampAISafeTool  # noqa: F401
    with pytest.raises(ImportError, match="CrewAI"):
        adapters.safe_crew_tool
    with pytest.raises(AttributeError):
        adapters.NoSuchThing


def test_the_reference_metrics_names_are_offered_or_refused_clearly():
    for name in ("OTelMetrics", "OTelTraceExporter", "PrometheusMetrics"):
        try:
            value = getattr(adapters, name)
        except ImportError as err:
            assert name not in adapters.__all__
            assert "metrics backend" in str(err)
        else:
            assert name in adapters.__all__ and value.__name__ == name


def test_the_package_imports_without_fastapi_and_names_the_debian_package():
    # A fresh interpreter in which fastapi and starlette cannot be imported.
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("fastapi", "starlette"):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import clampai.adapters
        from clampai.adapters import ClampAIMiddleware, SafeMCPServer, OpenAIAdapter
        assert "fastapi" not in sys.modules and "starlette" not in sys.modules
        try:
            ClampAIMiddleware(object(), budget=1.0)
        except ImportError as err:
            print(err)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "python3-fastapi" in out.stdout


def test_the_adapter_stubs_match_the_modules():
    import importlib
    import ast
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import test_stubs
    finally:
        sys.path.pop(0)
    stubs = sorted(Path(adapters.__file__).parent.glob("*.pyi"))
    assert {p.stem for p in stubs} >= {"__init__", "anthropic_adapter", "openai_adapter",
                                       "fastapi_middleware", "mcp_server"}
    for path in stubs:
        name = "clampai.adapters" + ("" if path.stem == "__init__" else f".{path.stem}")
        if path.stem == "fastapi_middleware" and not HAS_FASTAPI:
            continue
        module = importlib.import_module(name)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, test_stubs.FUNCTIONS):
                test_stubs.check_function(node, getattr(module, node.name), f"{name}.{node.name}")
            elif isinstance(node, ast.ClassDef):
                test_stubs.check_class(node, getattr(module, node.name), f"{name}.{node.name}")


# --- FastAPI -------------------------------------------------------------------------------------

def make_app(**options):
    from fastapi import FastAPI

    from clampai.adapters import ClampAIMiddleware
    app = FastAPI()
    calls = []

    @app.get("/items")
    def items():
        calls.append("items")
        return {"items": [1, 2]}

    @app.get("/admin/users")
    def admin():
        calls.append("admin")
        return {"users": []}

    return ClampAIMiddleware(app, **options), calls


@needs_fastapi
def test_the_middleware_passes_requests_within_the_budget_and_refuses_the_rest_with_429():
    middleware, calls = make_app(budget=3.0, cost_per_request=1.0)
    client = TestClient(middleware)
    for _ in range(3):
        r = client.get("/items")
        assert r.status_code == 200 and r.json() == {"items": [1, 2]}
    r = client.get("/items")
    assert r.status_code == 429
    assert r.json()["error"] == "budget_exhausted"
    assert "budget" in r.json()["detail"].lower()
    assert calls == ["items"] * 3  # the endpoint never ran for the refused request
    assert middleware.requests_processed == 3
    assert middleware.budget_remaining == 0.0
    middleware.reset()
    assert middleware.budget_remaining == 3.0 and middleware.requests_processed == 0
    assert client.get("/items").status_code == 200


@needs_fastapi
def test_the_middleware_refuses_an_invariant_violation_with_422_and_charges_nothing():
    middleware, calls = make_app(
        budget=10.0, invariant_status_code=403,
        invariants=[no_sensitive_substring_invariant("path", ["/admin"])])
    client = TestClient(middleware)
    r = client.get("/admin/users")
    assert r.status_code == 403
    assert r.json()["error"] == "invariant_violated"
    assert calls == []
    assert middleware.budget_remaining == 10.0
    assert client.get("/items").status_code == 200
    assert middleware.budget_remaining == 9.0


@needs_fastapi
def test_the_middleware_reads_state_fn_and_fails_closed_when_it_raises():
    seen = []
    only_alice = Invariant("only_alice", lambda s: seen.append(s.get("user")) or
                           s.get("user") == "alice")
    middleware, calls = make_app(budget=10.0, invariants=[only_alice],
                                 state_fn=lambda req: {"user": req.headers.get("x-user")})
    client = TestClient(middleware)
    assert client.get("/items", headers={"x-user": "alice"}).status_code == 200
    r = client.get("/items", headers={"x-user": "mallory"})
    assert r.status_code == 422 and r.json()["error"] == "invariant_violated"
    assert "mallory" in seen

    def broken(request):
        raise KeyError("no session")

    middleware, calls = make_app(budget=10.0, state_fn=broken)
    r = TestClient(middleware).get("/items")
    assert r.status_code == 422
    assert r.json() == {"error": "state_error", "detail": "state_fn raised KeyError: 'no session'"}
    assert calls == [] and middleware.requests_processed == 0


@needs_fastapi
def test_the_middleware_through_add_middleware():
    from fastapi import FastAPI

    from clampai.adapters import ClampAIMiddleware
    app = FastAPI()

    @app.get("/")
    def root():
        return "ok"

    app.add_middleware(ClampAIMiddleware, budget=2.0, cost_per_request=1.5)
    client = TestClient(app)
    assert client.get("/").status_code == 200
    assert client.get("/").status_code == 429


# --- MCP -----------------------------------------------------------------------------------------

def rpc(server, method, params=None, rid=1):
    message = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.loads(server.handle(json.dumps(message)))


def make_server(**options):
    from clampai.adapters import SafeMCPServer
    server = SafeMCPServer("test-server", **options)
    sent = []

    @server.tool()
    def send_email(to: str, subject: str, urgent: bool = False) -> str:
        """Sends an email."""
        sent.append((to, subject, urgent))
        return f"Sent '{subject}' to {to}"

    @server.tool(cost=5.0, name="train")
    def train_model(epochs: int) -> dict:
        return {"epochs": epochs}

    return server, sent


def test_mcp_initialize_list_and_call_in_json_rpc():
    server, sent = make_server(budget=10.0)
    init = rpc(server, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}})
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert init["result"]["capabilities"]["tools"] == {"listChanged": False}
    assert init["result"]["serverInfo"]["name"] == "test-server"
    assert rpc(server, "initialize", {"protocolVersion": "1999-01-01"})["result"][
        "protocolVersion"] == "2025-11-25"  # the newest of `clampai mcp`'s revisions
    assert server.handle('{"jsonrpc": "2.0", "method": "notifications/initialized"}') is None
    tools = {t["name"]: t for t in rpc(server, "tools/list")["result"]["tools"]}
    assert set(tools) == {"send_email", "train"}
    schema = tools["send_email"]["inputSchema"]
    assert schema["properties"] == {"to": {"type": "string"}, "subject": {"type": "string"},
                                    "urgent": {"type": "boolean"}}
    assert schema["required"] == ["to", "subject"]
    assert tools["send_email"]["description"].startswith("Sends an email.")
    r = rpc(server, "tools/call", {"name": "send_email",
                                   "arguments": {"to": "a@b.c", "subject": "hi"}}, rid="x")
    assert r["id"] == "x"
    assert r["result"] == {"content": [{"type": "text", "text": "Sent 'hi' to a@b.c"}],
                           "isError": False}
    assert sent == [("a@b.c", "hi", False)]
    r = rpc(server, "tools/call", {"name": "train", "arguments": {"epochs": 3}})
    assert r["result"]["structuredContent"] == {"epochs": 3}
    assert server.budget_remaining == 4.0
    assert [e["action"] for e in server.audit_log] == ["send_email_1", "train_2"]
    assert rpc(server, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_mcp_a_call_over_budget_is_an_error_result_and_the_tool_does_not_run():
    server, sent = make_server(budget=6.0)
    assert not rpc(server, "tools/call", {"name": "train", "arguments": {"epochs": 1}})[
        "result"]["isError"]
    r = rpc(server, "tools/call", {"name": "train", "arguments": {"epochs": 2}})
    assert r["result"]["isError"] is True
    assert "blocked by ClampAI" in r["result"]["content"][0]["text"]
    assert server.budget_remaining == 1.0
    # Called directly, the guarded function raises as the Python ClampAI's does.
    with pytest.raises(SafetyViolation, match="blocked by ClampAI"):
        server._tool_registry["train"](epochs=1)


def test_mcp_server_and_per_tool_invariants():
    from clampai.adapters import SafeMCPServer
    server = SafeMCPServer("s", budget=100.0, invariants=[
        Invariant("at_most_two", lambda s: s.get("total_tool_calls", 0) <= 2)])
    ran = []

    @server.tool(invariants=[Invariant("first_only", lambda s: s.get("total_tool_calls") == 0)])
    def once() -> str:
        ran.append("once")
        return "once"

    @server.tool()
    def many() -> str:
        ran.append("many")
        return "many"

    assert not rpc(server, "tools/call", {"name": "once"})["result"]["isError"]
    r = rpc(server, "tools/call", {"name": "once"})
    assert r["result"]["isError"] and "per-tool invariant" in r["result"]["content"][0]["text"]
    assert not rpc(server, "tools/call", {"name": "many"})["result"]["isError"]
    r = rpc(server, "tools/call", {"name": "many"})
    assert r["result"]["isError"] and "at_most_two" in r["result"]["content"][0]["text"]
    assert ran == ["once", "many"]
    assert server.kernel.step_count == 2


def test_mcp_a_tool_that_raises_is_an_error_result():
    from clampai.adapters import SafeMCPServer
    server = SafeMCPServer("s", budget=10.0)

    @server.tool()
    def boom(x: int) -> str:
        raise ValueError(f"bad {x}")

    r = rpc(server, "tools/call", {"name": "boom", "arguments": {"x": 7}})
    assert r["result"] == {"content": [{"type": "text", "text": "tool `boom` raised "
                                        "ValueError: bad 7"}], "isError": True}


@pytest.mark.parametrize("message, code, words", [
    ("{", -32700, "parse error"),
    ("[]", -32600, "batches"),
    ("42", -32600, "JSON object"),
    ('{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, "jsonrpc"),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, "`id`"),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, "`id`"),
    ('{"jsonrpc": "2.0", "id": 1, "method": 7}', -32600, "`method`"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}', -32601, "resources/list"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}', -32602, "params"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_emial"}}',
     -32602, "did you mean `send_email`"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_email", '
     '"arguments": [1]}}', -32602, "must be an object"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_email", '
     '"arguments": {"to": "a"}}}', -32602, "missing argument `subject`"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_email", '
     '"arguments": {"to": "a", "subject": "b", "cc": "c"}}}', -32602, "unknown argument `cc`"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "train", '
     '"arguments": {"epochs": true}}}', -32602, "must be integer"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_email", '
     '"arguments": {"to": 5, "subject": "b"}}}', -32602, "must be string"),
    ("[" * 100000 + "]" * 100000, -32700, "parse error"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + "x" * (1 << 20) + '"}',
     -32600, "longer than"),
])
def test_mcp_protocol_faults_are_json_rpc_errors_and_change_nothing(message, code, words):
    server, sent = make_server(budget=10.0)
    answer = json.loads(server.handle(message))
    assert answer["jsonrpc"] == "2.0"
    assert answer["error"]["code"] == code
    assert words in answer["error"]["message"]
    assert sent == [] and server.budget_remaining == 10.0 and server.kernel.step_count == 0


def test_mcp_a_notification_or_a_client_response_gets_no_answer():
    server, _ = make_server()
    assert server.handle('{"jsonrpc": "2.0", "method": "ping"}') is None
    assert server.handle('{"jsonrpc": "2.0", "method": "nope"}') is None
    assert server.handle('{"jsonrpc": "2.0", "id": 3, "result": {}}') is None


def test_mcp_over_stdio_in_a_subprocess():
    script = textwrap.dedent("""
        from clampai.adapters import SafeMCPServer
        server = SafeMCPServer("stdio-server", budget=2.0)

        @server.tool()
        def echo(text: str) -> str:
            return text.upper()

        server.run()
    """)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2024-11-05", "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "a"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "b"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "c"}}},
    ]
    wire = "\n".join(json.dumps(m) for m in messages) + "\n\n" + "x" * (2 << 20) + "\n"
    out = subprocess.run([sys.executable, "-c", script], input=wire, capture_output=True,
                         text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [a.get("id") for a in answers] == [1, 2, 3, 4, 5, None]
    assert answers[0]["result"]["protocolVersion"] == "2024-11-05"
    assert [t["name"] for t in answers[1]["result"]["tools"]] == ["echo"]
    assert answers[2]["result"]["content"][0]["text"] == "A"
    assert answers[3]["result"]["content"][0]["text"] == "B"
    assert answers[4]["result"]["isError"] is True  # the budget of 2 is spent
    assert answers[5]["error"]["code"] == -32600  # the over-long line, dropped


# --- The LLM adapters on the C++ HTTP adapters, against fake servers on 127.0.0.1 --------------

class FakeApi:
    """A scripted HTTP server on 127.0.0.1: answers each POST with the next (status, body) and
    records what it got. Stopped at the end of the `with`."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.received = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                fake.received.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                      "body": json.loads(self.rfile.read(length))})
                status, body = fake.replies.pop(0) if fake.replies else (500, "{}")
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def anthropic_answer(text):
    return {"type": "message", "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 3, "output_tokens": 2}}


def openai_answer(text):
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


KEY = "sk-test-0123456789"


def test_anthropic_adapter_sends_a_messages_call_through_the_cpp_adapter():
    from clampai.adapters import AnthropicAdapter
    with FakeApi([(200, anthropic_answer("hello"))]) as api:
        adapter = AnthropicAdapter(KEY, base_url=api.url)
        assert adapter.complete("Pick one.", temperature=0.5, max_tokens=77) == "hello"
    (got,) = api.received
    assert got["path"] == "/v1/messages"
    assert got["headers"]["x-api-key"] == KEY
    assert got["body"] == {"model": "claude-haiku-4-5-20251001", "max_tokens": 77,
                           "temperature": 0.5, "system": "You are a helpful AI assistant.",
                           "messages": [{"role": "user", "content": "Pick one."}]}
    assert repr(adapter) == "AnthropicAdapter(model='claude-haiku-4-5-20251001')"


def test_openai_adapter_from_the_environment_streams_the_whole_answer_once(monkeypatch):
    from clampai.adapters import OpenAIAdapter
    with FakeApi([(200, openai_answer("hi there")), (200, openai_answer("again"))]) as api:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", api.url + "/v1/")
        adapter = OpenAIAdapter(model="local-model")
        chunks = []
        assert adapter.complete("q", "be brief", stream_tokens=chunks.append) == "hi there"
        assert chunks == ["hi there"]
        assert asyncio.run(adapter.acomplete("q2")) == "again"
    first, second = api.received
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["authorization"] == f"Bearer {KEY}"
    assert first["body"]["messages"] == [{"role": "system", "content": "be brief"},
                                         {"role": "user", "content": "q"}]
    assert first["body"]["model"] == "local-model"
    assert first["body"]["max_tokens"] == 2000 and first["body"]["temperature"] == 0.3
    assert second["body"]["messages"][1]["content"] == "q2"


def test_async_adapters_call_off_the_loop_and_refuse_complete():
    from clampai.adapters import AsyncAnthropicAdapter, AsyncOpenAIAdapter
    with FakeApi([(200, anthropic_answer("a")), (200, openai_answer("o"))]) as api:
        anthropic = AsyncAnthropicAdapter(KEY, base_url=api.url)
        openai = AsyncOpenAIAdapter(KEY, base_url=api.url + "/v1")

        async def both():
            return await anthropic.acomplete("x"), await openai.acomplete("y")

        assert asyncio.run(both()) == ("a", "o")
    with pytest.raises(NotImplementedError, match="async-only"):
        anthropic.complete("x")


def test_llm_failures_are_python_exceptions_of_their_kind_without_the_key():
    from clampai.adapters import AnthropicAdapter, OpenAIAdapter
    with FakeApi([(401, {"error": {"message": "invalid x-api-key"}}),
                  (400, {"error": {"message": "bad request"}}),
                  (200, "{not json")]) as api:
        adapter = AnthropicAdapter(KEY, base_url=api.url, max_retries=0)
        with pytest.raises(PermissionError) as auth:
            adapter.complete("x")
        with pytest.raises(ConnectionError, match="400"):
            adapter.complete("x")
        with pytest.raises(ValueError, match="anthropic"):
            adapter.complete("x")
    assert KEY not in str(auth.value)
    with pytest.raises(ValueError, match="temperature must be from 0 to 2"):
        OpenAIAdapter(KEY, base_url="http://127.0.0.1:9/v1").complete("x", temperature=3.0)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIAdapter()
    with pytest.raises(ValueError, match="base"):
        OpenAIAdapter(KEY, base_url="ftp://127.0.0.1/v1")


def test_the_sdk_clients_key_and_base_url_go_to_the_cpp_adapter():
    from clampai.adapters import AsyncOpenAIAdapter, OpenAIAdapter

    def sdk_class(name):  # stands for openai.OpenAI / openai.AsyncOpenAI (not in Debian)
        return type(name, (), {"__module__": "openai._client",
                               "chat": property(lambda self: pytest.fail("SDK called"))})

    with FakeApi([(200, openai_answer("via C++")), (200, openai_answer("async"))]) as api:
        for cls in (sdk_class("OpenAI"), sdk_class("AsyncOpenAI")):
            client = cls()
            client.api_key, client.base_url = KEY, api.url + "/v1/"
            if cls.__name__ == "OpenAI":
                assert OpenAIAdapter(client).complete("p") == "via C++"
            else:
                assert asyncio.run(AsyncOpenAIAdapter(client).acomplete("p")) == "async"
    assert [r["headers"]["authorization"] for r in api.received] == [f"Bearer {KEY}"] * 2


def test_an_sdk_compatible_client_is_called_as_the_reference_calls_it():
    from clampai.adapters import AnthropicAdapter, OpenAIAdapter

    class Obj:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    calls = []
    anthropic_like = Obj(messages=Obj(create=lambda **kw: calls.append(kw) or Obj(
        content=[Obj(type="text", text="from sdk")])))
    assert AnthropicAdapter(anthropic_like, model="m").complete("p", max_tokens=5) == "from sdk"
    assert calls[0]["model"] == "m" and calls[0]["max_tokens"] == 5
    openai_like = Obj(chat=Obj(completions=Obj(create=lambda **kw: Obj(
        choices=[Obj(message=Obj(content="oai"))]))))
    assert OpenAIAdapter(openai_like).complete("p") == "oai"
    with pytest.raises(TypeError, match="messages.create"):
        AnthropicAdapter(object())


def test_the_orchestrator_runs_on_the_openai_adapter_against_a_fake_server():
    from conftest import quickstart_task
    from clampai import Orchestrator
    from clampai.adapters import OpenAIAdapter
    step = json.dumps({"action": "process_batch", "params": {}})
    with FakeApi([(200, openai_answer(step))] * 4) as api:
        engine = Orchestrator(quickstart_task(), llm=OpenAIAdapter(KEY, base_url=api.url + "/v1"))
        result = engine.run()
    assert result.goal_achieved
    assert len(api.received) >= 2
