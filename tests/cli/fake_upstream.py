"""A tiny MCP server on stdio for tests/cli/agent_upstream_test.py (`clampai agent --upstream`).
Tools: `transfer` (appends `transfer AMOUNT` to $FAKE_LOG; amount 13 is answered with a
JSON-RPC error, 14 with an isError result), `tip` (appends `tip`), `crash` (appends `crash
AMOUNT` and exits mid-call), `ask` (asks the client `METHOD` first, its `method` argument, and
answers with the client's reply; the reply goes to $FAKE_LOG as `answer JSON`), `slow` (logs
`slow`, says `started` in a log notification, and answers only a cancellation: `cancelled ID`), `hold` (logs `hold TAG`, says `held TAG` in a
log notification and does not answer yet; a call with `release: true` answers every call held,
itself first and then the newest first, logging `answer TAG` for each, with a JSON-RPC error
for a TAG that starts with `fail`; a held call cancelled is
dropped, logging `cancelled ID`). $FAKE_DESC changes `transfer`'s description (a rug pull).
With $FAKE_REPORT_ENV naming a variable, `initialize` logs `init env NAME=VALUE` (`<unset>`)."""

import json
import os
import sys

NUMBER = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
TOOLS = [
    {"name": "transfer", "description": os.environ.get("FAKE_DESC", "Transfer an amount"),
     "inputSchema": NUMBER},
    {"name": "tip", "description": "Leave a fixed tip", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exits mid-call", "inputSchema": NUMBER},
    {"name": "slow", "description": "Never answers", "inputSchema": {"type": "object"}},
    {"name": "hold", "description": "Answers when told",
     "inputSchema": {"type": "object", "properties": {"tag": {"type": "string"},
                                                      "release": {"type": "boolean"}}}},
    {"name": "ask", "description": "Asks the client something first",
     "inputSchema": {"type": "object", "properties": {"method": {"type": "string"}}}},
]


def log(line):
    if os.environ.get("FAKE_LOG"):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(line + "\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(s, error=False):
    r = {"content": [{"type": "text", "text": s}]}
    if error:
        r["isError"] = True
    return r


def ask(method):
    send({"jsonrpc": "2.0", "id": "up-1", "method": method,
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                     "maxTokens": 5} if method == "sampling/createMessage" else {}})
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        m = json.loads(line)
        if m.get("id") == "up-1" and "method" not in m:
            log("answer " + json.dumps(m.get("result", m.get("error")), sort_keys=True))
            return m


held = []  # (id, tag) of the `hold` calls not answered yet
while True:
    line = sys.stdin.readline()
    if not line:
        break
    m = json.loads(line)
    if m.get("method") == "notifications/cancelled":
        target = m["params"]["requestId"]
        if any(i == target for i, _ in held):
            log("cancelled " + str(target))
            held = [(i, t) for i, t in held if i != target]
        continue
    if "id" not in m or "method" not in m:
        continue
    i, method = m["id"], m["method"]
    if method == "initialize":
        log("init " + json.dumps(m["params"].get("capabilities"), sort_keys=True))
        if os.environ.get("FAKE_REPORT_ENV"):
            name = os.environ["FAKE_REPORT_ENV"]
            log("init env %s=%s" % (name, os.environ.get(name, "<unset>")))
        send({"jsonrpc": "2.0", "id": i, "result": {
            "protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": i, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, args = m["params"]["name"], m["params"].get("arguments", {})
        amount = args.get("amount")
        label = amount if amount is not None else args.get("tag")
        log(name if label is None else "%s %s" % (name, label))
        if name == "crash":
            sys.exit(3)
        if name == "slow":
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "started"}})
            while True:
                n = json.loads(sys.stdin.readline() or "{}")
                if not n:
                    sys.exit(0)
                if n.get("method") == "notifications/cancelled":
                    log("cancelled " + str(n["params"]["requestId"]))
                    break
            continue
        if name == "hold":
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "held " + args["tag"]}})
            held.append((i, args["tag"]))
            if args.get("release"):
                for j, tag in [held[-1]] + held[-2::-1]:
                    log("answer " + tag)
                    if tag.startswith("fail"):
                        send({"jsonrpc": "2.0", "id": j,
                              "error": {"code": -32000, "message": "failed " + tag}})
                    else:
                        send({"jsonrpc": "2.0", "id": j, "result": text("held " + tag)})
                held = []
            continue
        if name == "ask":
            reply = ask(args.get("method", "sampling/createMessage"))
            send({"jsonrpc": "2.0", "id": i,
                  "result": text(json.dumps(reply.get("result", reply.get("error"))),
                                 "error" in reply)})
            continue
        if name == "transfer" and amount == 13:
            send({"jsonrpc": "2.0", "id": i, "error": {"code": -32000, "message": "bank says no"}})
        elif name == "transfer" and amount == 14:
            send({"jsonrpc": "2.0", "id": i, "result": text("declined", True)})
        else:
            send({"jsonrpc": "2.0", "id": i, "result": text("done")})
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "no " + method}})
