#!/usr/bin/env python3
"""A stand-in ACP agent for `cargo bench --bench acp`: no model, only requests.

    acp_agent.py N TIMINGS_FILE

On its first prompt it asks its client for N `fs/write_text_file`s, then N
`session/request_permission`s for an edit, one at a time, and times each round trip
(from its request written to its answer read). The timings, in milliseconds, go to
TIMINGS_FILE as JSON: {"write": [...], "permission": [...]}. Then the turn ends.
"""
import json
import sys
import time

N = int(sys.argv[1])
OUT = sys.argv[2]
root = None
next_id = 1000


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def ask(method, params):
    """Sends a request and waits for its answer (anything else meanwhile is ignored)."""
    global next_id
    next_id += 1
    mine = next_id
    start = time.perf_counter()
    send({"jsonrpc": "2.0", "id": mine, "method": method, "params": params})
    while True:
        msg = read()
        if msg.get("id") == mine and "method" not in msg:
            if "error" in msg:
                raise SystemExit(f"{method} refused: {msg['error']}")
            return (time.perf_counter() - start) * 1000.0, msg.get("result")


def work(session):
    writes, permissions = [], []
    for i in range(N):
        path = f"{root}/out/f{i % 10}.txt"
        ms, _ = ask("fs/write_text_file", {"sessionId": session, "path": path, "content": f"line {i}\n" * 20})
        writes.append(ms)
    for i in range(N):
        path = f"{root}/out/p{i % 10}.txt"
        content = f"permitted {i}\n"
        ms, result = ask("session/request_permission", {
            "sessionId": session,
            "toolCall": {
                "toolCallId": f"call-{i}", "title": "WriteFile", "kind": "edit", "status": "pending",
                "locations": [{"path": path}],
                "rawInput": {"file_path": path, "content": content},
            },
            "options": [
                {"optionId": "once", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ],
        })
        if result != {"outcome": {"outcome": "selected", "optionId": "once"}}:
            raise SystemExit(f"permission not allowed: {result}")
        permissions.append(ms)
    with open(OUT, "w") as f:
        json.dump({"write": writes, "permission": permissions}, f)


while True:
    msg = read()
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": 1, "agentCapabilities": {"loadSession": False}, "authMethods": [],
            "agentInfo": {"name": "bench-agent", "version": "1"}}})
    elif method == "session/new":
        root = msg["params"]["cwd"]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "bench-session"}})
    elif method == "session/prompt":
        work(msg["params"]["sessionId"])
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})
    elif "id" in msg and method is not None:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}})
