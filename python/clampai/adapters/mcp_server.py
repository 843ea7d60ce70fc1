"""`clampai.adapters.mcp_server`, as in the Python ClampAI: `SafeMCPServer`, a Model Context
Protocol tool server whose every tool call goes through one shared safety kernel first.

    from clampai.adapters import SafeMCPServer

    server = SafeMCPServer("my-agent", budget=500.0, cost_per_tool=10.0, invariants=[...])

    @server.tool()
    def send_email(to: str, subject: str, body: str) -> str:
        '''Sends an email.'''
        return f"Sent '{subject}' to {to}"

    @server.tool(cost=50.0)
    def train_model(dataset_path: str) -> str: ...

    if __name__ == "__main__":
        server.run()          # JSON-RPC 2.0 over stdio, one message a line

The Python ClampAI sits on the `mcp` package's FastMCP, which Debian does not ship; this server
speaks the protocol itself (the lifecycle, `ping`, `tools/list`, `tools/call`) with the same
answers as `clampai mcp` (docs/SERVE.md): the same protocol revisions, the same JSON-RPC error
codes for protocol faults, and a rejected call as a tool result with `isError`. `handle(message)`
answers one message, for embedding the server in another transport.

All tools share the kernel's budget (T1) and invariants (T3), checked on the state
{"total_tool_calls", "total_cost"}; a tool's own `invariants` are checked before them. An
approved call is charged and traced before the function runs (as in the Python ClampAI).
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import inspect
import json
import sys
import threading
import typing
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from .. import ActionSpec, Effect, Invariant, SafetyKernel, SafetyViolation, State
from .._clampai import _mcp_protocol_versions

__all__ = ["SafeMCPServer"]

_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
_METHOD_NOT_FOUND = -32601
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603
_MAX_MESSAGE = 1 << 20  # bytes of one message, as `clampai mcp`
_VERSIONS: Tuple[str, ...] = tuple(_mcp_protocol_versions())

# JSON Schema types of the annotations a tool's parameters may have.
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
               tuple: "array", dict: "object"}


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _json_type(annotation: Any) -> Optional[str]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _json_type(args[0]) if len(args) == 1 else None
    return _JSON_TYPES.get(origin or annotation)


def _conforms(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "array": list,
                              "object": dict}[kind])


class _Tool:
    """A registered tool: its function (guarded), its input schema, its cost."""

    def __init__(self, name: str, fn: Callable[..., Any], guarded: Callable[..., Any],
                 cost: float) -> None:
        self.name = name
        self.guarded = guarded
        self.cost = cost
        self.description = inspect.getdoc(fn) or ""
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # noqa: BLE001 - an unresolvable annotation: no type for it
            hints = {}
        self.params: Dict[str, Optional[str]] = {}
        self.required: List[str] = []
        self.open = False  # takes **kwargs
        for p in inspect.signature(fn).parameters.values():
            if p.kind == p.VAR_KEYWORD:
                self.open = True
            elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                self.params[p.name] = _json_type(hints.get(p.name))
                if p.default is p.empty:
                    self.required.append(p.name)

    def listing(self) -> Dict[str, Any]:
        properties = {n: ({"type": t} if t else {}) for n, t in self.params.items()}
        schema: Dict[str, Any] = {"type": "object", "properties": properties,
                                  "required": list(self.required)}
        if not self.open:
            schema["additionalProperties"] = False
        return {"name": self.name,
                "description": (self.description + " " if self.description else "")
                + "(decided by the ClampAI safety kernel: a rejected call is not run)",
                "inputSchema": schema}

    def check(self, arguments: Dict[str, Any]) -> None:
        for name, value in arguments.items():
            if name not in self.params:
                if self.open:
                    continue
                hint = difflib.get_close_matches(name, list(self.params), n=1)
                raise _RpcError(_INVALID_PARAMS, f"tool `{self.name}`: unknown argument "
                                f"`{name}`" + (f" (did you mean `{hint[0]}`?)" if hint else ""))
            kind = self.params[name]
            if kind and not _conforms(value, kind):
                raise _RpcError(_INVALID_PARAMS, f"tool `{self.name}`: argument `{name}` must "
                                f"be {kind}, not {type(value).__name__} {json.dumps(value)[:40]}")
        missing = [n for n in self.required if n not in arguments]
        if missing:
            raise _RpcError(_INVALID_PARAMS, f"tool `{self.name}`: missing argument"
                            f"{'s' if len(missing) > 1 else ''} "
                            + ", ".join(f"`{n}`" for n in missing))


def _tool_result(text: str, is_error: bool, structured: Any = None) -> Dict[str, Any]:
    result: Dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


class SafeMCPServer:
    """A ClampAI-guarded MCP tool server (the Python ClampAI's constructor): `name`, the shared
    `budget`, the default `cost_per_tool`, server-wide `invariants` and `min_action_cost`."""

    def __init__(self, name: str, budget: float = 1000.0, cost_per_tool: float = 1.0,
                 invariants: Sequence[Invariant] = (), min_action_cost: float = 0.001) -> None:
        self._name = name
        self._budget = budget
        self._cost_per_tool = cost_per_tool
        self._server_invariants = list(invariants)
        self._lock = threading.Lock()
        self._kernel = SafetyKernel(budget=budget, invariants=list(invariants),
                                    min_action_cost=min_action_cost)
        self._state = State({"total_tool_calls": 0, "total_cost": 0.0})
        self._tools: Dict[str, _Tool] = {}
        self._tool_registry: Dict[str, Callable[..., Any]] = {}
        self._tool_costs: Dict[str, float] = {}

    @property
    def kernel(self) -> Any:
        """The shared kernel (the reference form of SafetyKernel)."""
        return self._kernel

    @property
    def audit_log(self) -> List[Dict[str, Any]]:
        """Every approved call: step, action, cost, timestamp, approved (JSON-ready)."""
        return [{"step": e.step, "action": e.action_id, "cost": e.cost,
                 "timestamp": e.timestamp, "approved": e.approved}
                for e in self._kernel.trace.entries]

    @property
    def budget_remaining(self) -> float:
        """The budget left for all tools."""
        return self._kernel.budget.remaining

    def tool(self, *, cost: Optional[float] = None,
             invariants: Optional[Sequence[Invariant]] = None,
             name: Optional[str] = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers the decorated function as a tool (named `name`, else the function's name;
        described by its docstring; its parameters' annotations give the input schema), costing
        `cost` (else the server's `cost_per_tool`), with its own `invariants` checked first.
        The returned function is the guarded one: called directly, a rejection raises
        SafetyViolation."""
        def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
            effective = self._cost_per_tool if cost is None else cost
            tool_name = name or fn.__name__
            if tool_name in self._tools:
                raise ValueError(f"SafeMCPServer `{self._name}`: a tool `{tool_name}` is "
                                 "already registered")
            own = list(invariants or ())

            @functools.wraps(fn)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                self._admit(tool_name, fn, effective, own)
                return fn(*args, **kwargs)

            self._tools[tool_name] = _Tool(tool_name, fn, guarded, effective)
            self._tool_registry[tool_name] = guarded
            self._tool_costs[tool_name] = effective
            return guarded

        return decorator

    def _admit(self, tool_name: str, fn: Callable[..., Any], cost: float,
               own: Sequence[Invariant]) -> None:
        """Decides one call and commits it (charge, step, trace), or raises SafetyViolation."""
        with self._lock:
            calls = int(self._state.get("total_tool_calls", 0))
            state = State({"total_tool_calls": calls,
                           "total_cost": self._state.get("total_cost", 0.0)})
            for inv in own:
                ok, msg = inv.check(state)
                if not ok:
                    raise SafetyViolation(
                        f"Tool '{tool_name}' blocked by per-tool invariant: {msg}")
            action = ActionSpec(
                id=f"{tool_name}_{calls + 1}", name=tool_name,
                description=f"MCP tool call #{calls + 1} to {fn.__qualname__}",
                effects=(Effect("total_tool_calls", "increment", 1),
                         Effect("total_cost", "increment", cost)),
                cost=cost)
            try:
                new_state, _ = self._kernel.execute(state, action)
            except SafetyViolation as exc:
                verdict = exc.verdict
                reasons = "; ".join(verdict.rejection_reasons) if verdict else str(exc)
                raise SafetyViolation(f"Tool '{tool_name}' blocked by ClampAI: "
                                      f"{reasons or 'kernel rejected'}", verdict) from None
            self._state = new_state

    # -- the protocol

    def handle(self, message: str) -> Optional[str]:
        """Answers one JSON-RPC 2.0 message (one line of the stdio transport): the response's
        JSON text, or None for a notification or a client's response. Never raises."""
        rid: Any = None
        try:
            if len(message.encode("utf-8", "surrogatepass")) > _MAX_MESSAGE:
                raise _RpcError(_INVALID_REQUEST, f"invalid request: a message longer than "
                                f"{_MAX_MESSAGE} bytes (the limit)")
            try:
                envelope = json.loads(message)
            except (ValueError, RecursionError) as err:
                raise _RpcError(_PARSE_ERROR, f"parse error: {err}") from None
            if not isinstance(envelope, dict):
                raise _RpcError(_INVALID_REQUEST, "invalid request: a message must be a JSON "
                                "object" + (" (batches are not supported)"
                                            if isinstance(envelope, list) else ""))
            if "id" in envelope:
                candidate = envelope["id"]
                if candidate is not None and (isinstance(candidate, bool) or not isinstance(
                        candidate, (str, int))):
                    raise _RpcError(_INVALID_REQUEST,
                                    "invalid request: `id` must be a string, an integer or null")
                rid = candidate
            if envelope.get("jsonrpc") != "2.0":
                raise _RpcError(_INVALID_REQUEST, "invalid request: `jsonrpc` must be \"2.0\"")
            if "method" not in envelope and ("result" in envelope or "error" in envelope):
                return None  # a response from the client
            method = envelope.get("method")
            if not isinstance(method, str):
                raise _RpcError(_INVALID_REQUEST, "invalid request: `method` must be a string")
            notification = "id" not in envelope
            params = envelope.get("params")
            if method.startswith("notifications/"):
                return None
            try:
                result = self._dispatch(method, params)
            except _RpcError:
                if notification:
                    return None
                raise
            return None if notification else json.dumps(
                {"jsonrpc": "2.0", "id": rid, "result": result})
        except _RpcError as err:
            return json.dumps({"jsonrpc": "2.0", "id": rid,
                               "error": {"code": err.code, "message": str(err)}})
        except Exception as err:  # noqa: BLE001 - the server answers, whatever happened
            return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {
                "code": _INTERNAL_ERROR, "message": f"internal error: {type(err).__name__}: "
                f"{err}"}})

    def _dispatch(self, method: str, params: Any) -> Any:
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            return {"protocolVersion": asked if asked in _VERSIONS else _VERSIONS[0],
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": self._name, "version": _version()}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [t.listing() for t in self._tools.values()]}
        if method == "tools/call":
            return self._call(params)
        raise _RpcError(_METHOD_NOT_FOUND, f"method not found: `{method}`")

    def _call(self, params: Any) -> Dict[str, Any]:
        if not isinstance(params, dict):
            raise _RpcError(_INVALID_PARAMS, "tools/call: params must be an object with `name`")
        name = params.get("name")
        if not isinstance(name, str):
            raise _RpcError(_INVALID_PARAMS, "tools/call: `name` must be a tool name")
        tool = self._tools.get(name)
        if tool is None:
            hint = difflib.get_close_matches(name, list(self._tools), n=1)
            raise _RpcError(_INVALID_PARAMS, f"unknown tool `{name}`"
                            + (f" (did you mean `{hint[0]}`?)" if hint else ""))
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _RpcError(_INVALID_PARAMS, f"tool `{name}`: arguments must be an object, not "
                            f"{type(arguments).__name__}")
        tool.check(arguments)
        try:
            value = tool.guarded(**arguments)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        except SafetyViolation as exc:
            return _tool_result(str(exc), True)
        except Exception as exc:  # noqa: BLE001 - a tool's failure is its result, as in MCP
            return _tool_result(f"tool `{name}` raised {type(exc).__name__}: {exc}", True)
        if isinstance(value, str):
            return _tool_result(value, False)
        text = json.dumps(value, default=str)
        return _tool_result(text, False, value if isinstance(value, dict) else None)

    def run(self, transport: str = "stdio", *, stdin: Optional[TextIO] = None,
            stdout: Optional[TextIO] = None) -> None:
        """Serves until the input ends: one JSON-RPC message a line on stdin, each answer on
        its own line on stdout (flushed). Only the stdio transport is offered."""
        if transport != "stdio":
            raise ValueError(f"SafeMCPServer.run: transport must be `stdio`, not {transport!r}")
        source = stdin if stdin is not None else sys.stdin
        sink = stdout if stdout is not None else sys.stdout
        while True:
            line = source.readline(_MAX_MESSAGE + 1)
            if not line:
                break
            if len(line) > _MAX_MESSAGE and not line.endswith("\n"):
                while line and not line.endswith("\n"):  # drop the rest of the long line
                    line = source.readline(_MAX_MESSAGE)
                answer: Optional[str] = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": _INVALID_REQUEST, "message": "invalid request: a message longer "
                    f"than {_MAX_MESSAGE} bytes (the limit), discarded up to its end of line"}})
            elif not line.strip():
                continue
            else:
                answer = self.handle(line)
            if answer is not None:
                sink.write(answer + "\n")
                sink.flush()

    def summary(self) -> str:
        """The tools, their costs and the budget, as text."""
        lines = [f"SafeMCPServer — {len(self._tool_registry)} tools registered",
                 f"  Budget: ${self._kernel.budget.remaining:.2f} remaining of "
                 f"${self._budget:.2f}",
                 f"  Tool calls executed: {self._kernel.step_count}"]
        lines += [f"  • {n} (${c:.2f}/call)" for n, c in self._tool_costs.items()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"SafeMCPServer({self._name!r}, tools={len(self._tools)}, "
                f"budget_remaining={self.budget_remaining})")


async def _awaited(value: Any) -> Any:
    return await value


def _version() -> str:
    from .. import __version__
    return __version__
