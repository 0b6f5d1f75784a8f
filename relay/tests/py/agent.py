"""A control-capable agent written against the independent Python SDK
(agenteventprotocol-sdk, import aep_sdk), for the relay's end-to-end test.

It says hello as an emitter declaring control.accepts, opens a session and
a run, raises one permission request, and answers commands through the
SDK's ControlTarget (dedupe on (source, id), recorded acks re-sent byte for
byte). An accepted answer is applied once: attention.answered then
attention.resolved, both cause-linked to the command.

Protocol on stdio, one JSON object per line on stdout:
  {"ready": <request id>, "session": <session id>}  once the request is out
  {"executed": [<command ids>], "duplicates": <n>}  just before exiting
Closing stdin ends the session and the process.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading

from aep_sdk import ControlTarget, Emitter, open_duplex

RESPOND = "control.attention.respond"
ACCEPTS = [RESPOND]
OPTIONS = [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]


def say(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--url", required=True, help="relay base URL, http://host:port")
    args.add_argument("--token", required=True)
    args.add_argument("--session", required=True)
    args.add_argument("--agent", default="py-agent")
    opts = args.parse_args()

    duplex = open_duplex(opts.url, token=opts.token, connect_timeout_ms=10_000)
    duplex.send_json({
        "type": "hello", "versions": ["0.1"], "role": "emitter",
        "identity": {"agent": opts.agent, "instance": f"py/{opts.session}"},
        "capabilities": {
            "emits": ["session", "run", "attention", "control"],
            "control": {"accepts": ACCEPTS, "ack_window_ms": 10_000},
        },
    })
    hello = duplex.recv_json()
    if not hello or hello.get("type") != "hello":
        print(f"relay refused the hello: {hello}", file=sys.stderr)
        return 2

    emitter = Emitter(opts.agent, "py-host", duplex.send_json, capture="metadata")
    session = emitter.session(opts.session)
    target = ControlTarget(session, ACCEPTS)
    # The reader thread handles commands; the stdin thread ends the session.
    lock = threading.Lock()
    run = "run-py-1"
    executed: list[str] = []
    duplicates = 0

    with lock:
        session.emit("session.started", {"label": "Python SDK agent", "client": {"name": "aep_sdk"}},
                     capture="redacted")
        session.emit("run.started", {"trigger": "user"}, run=run)
        request = session.emit("attention.requested", {
            "kind": "permission", "prompt": "Run `make deploy-staging`?",
            "options": OPTIONS, "respond_via": ["control"],
        }, run=run, capture="redacted")
    pending = {request["id"]}
    say({"ready": request["id"], "session": opts.session})

    def execute(cmd: dict) -> None:
        subject = cmd.get("subject")
        answer = (cmd.get("data") or {}).get("answer") or {}
        if subject not in pending or answer.get("option") not in {o["id"] for o in OPTIONS}:
            return
        pending.discard(subject)
        executed.append(cmd["id"])
        session.emit("attention.answered",
                     {"answer": {"option": answer["option"]}, "by": cmd.get("agent"), "via": "control"},
                     subject=subject, cause=cmd["id"], run=run)
        session.emit("attention.resolved", {"resolution": "answered"},
                     subject=subject, cause=cmd["id"], run=run)

    def end_on_stdin_eof() -> None:
        sys.stdin.read()
        with lock:
            for open_id in sorted(pending):
                session.emit("attention.resolved", {"resolution": "dismissed"}, subject=open_id, cause=open_id, run=run)
            session.emit("run.finished", {}, run=run)
            session.emit("session.ended", {"reason": "normal"})
        duplex.close()

    threading.Thread(target=end_on_stdin_eof, name="stdin", daemon=True).start()

    while True:
        msg = duplex.recv_json()
        if msg is None:
            break
        ty = msg.get("type", "")
        if ty == "error":
            print(f"relay error: {msg}", file=sys.stderr, flush=True)
        if not ty.startswith("control.") or ty in ("control.accepted", "control.rejected"):
            continue
        with lock:
            fresh = target.handle(msg, execute)
        if not fresh and ty in ACCEPTS:
            duplicates += 1

    say({"executed": executed, "duplicates": duplicates})
    return 0


if __name__ == "__main__":
    sys.exit(main())
