"""A scripted OpenAI-compatible chat-completions server on loopback, for tests.

A real HTTP/1.1 server (stdlib only) in a background thread. It answers each
`POST .../chat/completions` with the next scripted `Reply`, streaming Server-Sent Events with
chunked transfer encoding exactly as OpenAI and DeepSeek do, and records every request, so a
test can drive the real `openai.AsyncOpenAI` client and then assert on what was sent.

    def test_plan(openai_server):
        openai_server.expect(
            reply(tool_calls=[tool_call("todo_write", {"todos": []})], pieces=8),
            reply("Done."),
        )
        model = OpenAICompatModel("test-model", api_key="k", base_url=openai_server.base_url)
        ...
        assert openai_server.requests[1].body["messages"][-1]["role"] == "tool"

Faults are scripted too: `error_reply(429)`, `reply(..., cut_after=2)` (the connection closes
mid-stream), `reply(..., delay=0.5)` (a slow stream; `wait_for_disconnect` tells when the client
went away), and `garbled(reply(...), at=1, data=b'{"choices": [')` (a chunk whose data is sent
as raw bytes: broken JSON, not UTF-8). Strict like `ScriptedModel`: a request with no reply
left is answered with HTTP 400 and recorded, and `check()` fails on it and on replies never used.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

__all__ = [
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "ToolCallSpec",
    "error_reply",
    "garbled",
    "reply",
    "tool_call",
]

Chunk = dict[str, Any]

DEFAULT_MODEL: Final = "test-model"
_call_numbers: Final = itertools.count(1)  # unique call ids across a test's replies


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer: an SSE stream of `chunks` (status 200) or an error `body`.

    A chunk is a JSON object, or bytes sent as its `data:` verbatim (see `garbled`).
    """

    status: int = 200
    chunks: tuple[Chunk | bytes, ...] = ()  # bytes: a raw event body, for fault tests
    body: Mapping[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0  # seconds before each chunk: a slow stream
    cut_after: int | None = None  # close the connection after this many chunks, mid-body


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    name: str
    arguments: str
    id: str


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # the parsed JSON body

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body["messages"]
        return messages


def tool_call(name: str, arguments: str | Mapping[str, Any], id: str | None = None) -> ToolCallSpec:
    """A tool call for `reply`; `arguments` is an object (sent as JSON) or a raw string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCallSpec(name, raw, id or f"call_{next(_call_numbers)}")


def reply(
    text: str | None = None,
    *,
    tool_calls: Sequence[ToolCallSpec] = (),
    reasoning: str | None = None,
    usage: tuple[int, int] | None = (11, 7),
    pieces: int = 1,
    interleave: bool = False,
    model: str = DEFAULT_MODEL,
    finish_reason: str | None = None,
    delay: float = 0.0,
    cut_after: int | None = None,
) -> Reply:
    """A streamed completion, in the chunk order OpenAI and DeepSeek use.

    A role chunk, `reasoning` (DeepSeek's `reasoning_content`) then `text`, each split into
    `pieces` deltas; each tool call opens with its id and name and streams its arguments in
    `pieces` deltas (round-robin across calls when `interleave`); a chunk with the finish
    reason; and, unless `usage` is None, a final choice-less chunk with (prompt, completion)
    token counts, as `stream_options={"include_usage": true}` asks for.
    """
    deltas: list[Chunk] = [{"role": "assistant", "content": ""}]
    deltas += [{"reasoning_content": part} for part in _split(reasoning, pieces)]
    deltas += [{"content": part} for part in _split(text, pieces)]
    deltas += _tool_call_deltas(tool_calls, pieces, interleave)
    chunks = [_chunk(model, [{"index": 0, "delta": delta}]) for delta in deltas]
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    chunks.append(_chunk(model, [{"index": 0, "delta": {}, "finish_reason": reason}]))
    if usage is not None:
        prompt, completion = usage
        counts = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        chunks.append(_chunk(model, [], usage=counts))
    return Reply(chunks=tuple(chunks), delay=delay, cut_after=cut_after)


def error_reply(
    status: int, message: str | None = None, *, retry_after: float | None = None
) -> Reply:
    """An HTTP error with an OpenAI-style `{"error": {...}}` body."""
    text = message or f"scripted HTTP {status}"
    body = {"error": {"message": text, "type": "scripted_error", "code": status}}
    headers = (("retry-after", str(retry_after)),) if retry_after is not None else ()
    return Reply(status=status, body=body, headers=headers)


def garbled(scripted: Reply, *, at: int, data: bytes) -> Reply:
    """`scripted` with chunk `at` (0-based) replaced by the raw `data`."""
    chunks = list(scripted.chunks)
    chunks[at] = data
    return replace(scripted, chunks=tuple(chunks))


def _split(text: str | None, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))  # ceiling division
    return [text[i : i + size] for i in range(0, len(text), size)]


def _tool_call_deltas(calls: Sequence[ToolCallSpec], pieces: int, interleave: bool) -> list[Chunk]:
    streams: list[list[Chunk]] = []
    for index, call in enumerate(calls):
        opening = {"index": index, "id": call.id, "type": "function"}
        deltas: list[Chunk] = [{**opening, "function": {"name": call.name, "arguments": ""}}]
        deltas += [
            {"index": index, "function": {"arguments": part}}
            for part in _split(call.arguments, pieces)
        ]
        streams.append(deltas)
    ordered = _round_robin(streams) if interleave else [d for s in streams for d in s]
    return [{"tool_calls": [delta]} for delta in ordered]


def _round_robin(streams: list[list[Chunk]]) -> list[Chunk]:
    longest = max((len(s) for s in streams), default=0)
    return [s[i] for i in range(longest) for s in streams if i < len(s)]


def _chunk(model: str, choices: list[Chunk], usage: Mapping[str, int] | None = None) -> Chunk:
    chunk: Chunk = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": choices,
    }
    if usage is not None:
        chunk["usage"] = dict(usage)
    return chunk


class OpenAIServer:
    """The server: script it with `expect`, point a client at `base_url`, read `requests`."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._unexpected: list[int] = []
        self._disconnects: list[int] = []
        self._disconnected = threading.Condition(self._lock)
        self._httpd = ThreadingHTTPServer((host, 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifetime --------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The URL to hand to `AsyncOpenAI(base_url=...)`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # -- script and record -----------------------------------------------------------------

    def expect(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one, in order."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (retries included)."""
        with self._lock:
            return list(self._requests)

    @property
    def replies_left(self) -> int:
        """Scripted replies not yet taken by a request."""
        with self._lock:
            return len(self._replies)

    @property
    def disconnects(self) -> list[int]:
        """Indexes (into `requests`) of streams the client abandoned before their end."""
        with self._lock:
            return list(self._disconnects)

    def wait_for_disconnect(self, timeout: float = 5.0) -> bool:
        """Block until the server sees a client drop a stream; False on timeout."""
        with self._disconnected:
            return self._disconnected.wait_for(lambda: bool(self._disconnects), timeout)

    def check(self) -> None:
        """Fail on requests that found no scripted reply and on replies never used."""
        problems = []
        if self._unexpected:
            numbers = ", ".join(str(i + 1) for i in self._unexpected)
            problems.append(f"request(s) {numbers} arrived with no scripted reply left")
        if self._replies:
            problems.append(f"{len(self._replies)} scripted reply(ies) were never requested")
        if problems:
            raise AssertionError("openai_server: " + "; ".join(problems))

    # -- called from handler threads -------------------------------------------------------

    def _take(self, request: RecordedRequest) -> tuple[int, Reply | None]:
        with self._lock:
            index = len(self._requests)
            self._requests.append(request)
            if not self._replies:
                self._unexpected.append(index)
                return index, None
            return index, self._replies.popleft()

    def _record_disconnect(self, index: int) -> None:
        with self._disconnected:
            self._disconnects.append(index)
            self._disconnected.notify_all()


def _handler_for(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as real providers speak
    owner: OpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on `requests`, not on an access log."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        index, scripted = self.owner._take(RecordedRequest("POST", self.path, headers, body))
        if scripted is None:
            message = f"the test server has no scripted reply for request {index + 1}"
            scripted = error_reply(400, message)
        try:
            if scripted.status != 200:
                self._send_json(scripted)
            else:
                self._send_stream(index, scripted)
        except OSError:  # the client went away while we wrote: not the server's failure
            self.close_connection = True
            self.owner._record_disconnect(index)

    def _send_json(self, scripted: Reply) -> None:
        payload = json.dumps(scripted.body or {}).encode()
        self.send_response(scripted.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in scripted.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, index: int, scripted: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in scripted.headers:
            self.send_header(name, value)
        self.end_headers()
        for number, chunk in enumerate(scripted.chunks):
            if number == scripted.cut_after:
                self._cut()
                return
            if scripted.delay and self._client_left(scripted.delay):
                self.close_connection = True
                self.owner._record_disconnect(index)
                return
            # bytes are sent as they are: a fault test's broken event (not JSON, not UTF-8).
            data = chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()
            self._write_chunk(b"data: " + data + b"\n\n")
        if scripted.cut_after == len(scripted.chunks):
            self._cut()
            return
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")  # the zero-length chunk ends the body

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _cut(self) -> None:
        """Close the connection mid-body: the chunked body never gets its terminator."""
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _client_left(self, wait: float) -> bool:
        """Wait up to `wait` seconds; True as soon as the client closes its end."""
        readable, _, _ = select.select([self.connection], [], [], wait)
        if not readable:
            return False
        try:
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        return peeked == b""
