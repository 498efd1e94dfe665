"""A scripted Messages API server on loopback (`harness_model_anthropic.testing`), for tests.

fakellm (test_anthropic_fakellm.py) speaks streaming text and tool use; this one also streams
thinking with signatures, redacted thinking, cache usage, error events, `retry-after`, cut
and stalled connections, and garbled events (`garbled`: raw bytes for an event's data, not
JSON or not UTF-8), and records every request body, so tests can assert on the exact request
the real `anthropic` SDK sent (breakpoints, thinking blocks, tool_result blocks). A real
HTTP/1.1 server (stdlib) in a thread; SSE bodies are chunked, as the API sends them, so a cut
(`cut_after`) is a body that never ends, not a short one. Strict: a request with no reply left
gets HTTP 400, and `check()` fails on it and on replies never used.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Event = tuple[str, dict[str, Any] | bytes]  # an event's name and data (bytes: sent as they are)
_ids = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    """A 200 SSE stream of `events`, or an error `status` with `body` and `headers`."""

    events: tuple[Event, ...] = ()
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None  # cut the connection after this many events
    stall: float = 0.0  # seconds of silence after the headers, before the first event


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


def tool_use(name: str, arguments: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {"id": id or f"toolu_{next(_ids)}", "name": name, "input": arguments}


def message(
    text: str | None = None,
    *,
    thinking: tuple[tuple[str, str], ...] = (),
    redacted: tuple[str, ...] = (),
    tool_uses: tuple[dict[str, Any], ...] = (),
    usage: dict[str, int] | None = None,
    pieces: int = 3,
    cut_after: int | None = None,
) -> Reply:
    """A streamed Message: thinking blocks (text, signature), redacted ones, text, tool uses,
    each text split into `pieces` deltas; `usage` is message_start's usage."""
    start_usage = {"input_tokens": 10, "output_tokens": 1, **(usage or {})}
    events: list[Event] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{next(_ids)}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for thought, signature in thinking:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _split(thought, pieces)]
        deltas.append({"type": "signature_delta", "signature": signature})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    for data in redacted:
        blocks.append(({"type": "redacted_thinking", "data": data}, []))
    if text:
        deltas = [{"type": "text_delta", "text": p} for p in _split(text, pieces)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for use in tool_uses:
        raw = json.dumps(use["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _split(raw, pieces)]
        blocks.append(
            ({"type": "tool_use", "id": use["id"], "name": use["name"], "input": {}}, deltas)
        )
    for index, (start, deltas) in enumerate(blocks):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if tool_uses else "end_turn"
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 7},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply(events=tuple(events), cut_after=cut_after)


def error(status: int, text: str = "failed", kind: str = "api_error", **headers: str) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": text}}
    return Reply(
        status=status, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


def error_event(kind: str, text: str) -> Reply:
    """A 200 stream that fails with an `error` event before any content."""
    return Reply(events=(("error", {"type": "error", "error": {"type": kind, "message": text}}),))


def garbled(reply: Reply, *, at: int, data: bytes) -> Reply:
    """`reply` with the data of event `at` (0-based) replaced by the raw `data`."""
    events = list(reply.events)
    events[at] = (events[at][0], data)
    return replace(reply, events=tuple(events))


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FakeMessages:
    """`expect(*replies)`, point the SDK at `base_url`, then read `requests`."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.unexpected: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append(Recorded(self.path, headers, body, time.monotonic()))
                if not fake.replies:
                    fake.unexpected.append(self.path)
                    self._send(
                        error(400, "no reply scripted for this request", "invalid_request_error")
                    )
                    return
                try:
                    self._send(fake.replies.popleft())
                except OSError:  # the client went away (a timeout test): not a server failure
                    self.close_connection = True

            def _send(self, reply: Reply) -> None:
                if reply.status != 200:
                    payload = json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    for name, value in {
                        "content-type": "application/json",
                        **reply.headers,
                    }.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                time.sleep(reply.stall)
                for name, data in reply.events[: reply.cut_after]:
                    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
                    self._chunk(b"event: %s\ndata: %s\n\n" % (name.encode(), raw))
                if reply.cut_after is not None:
                    # The body never gets its last chunk: the client sees a cut connection.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._chunk(b"")  # the zero-length chunk ends the body

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def expect(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def check(self) -> None:
        assert not self.unexpected, f"requests with no reply scripted: {self.unexpected}"
        assert not self.replies, f"{len(self.replies)} scripted replies were never requested"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
