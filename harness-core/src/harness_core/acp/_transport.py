"""The ACP bridge on two file descriptors: `serve`, and its JSON-RPC line transport.

The SDK's stdio transport skips a line that is not JSON without answering, and a line that is
JSON but not an object ends its receive loop; `_Lines` answers both with a JSON-RPC error
(-32700, -32600) and keeps serving. So it does for a line nested too deeply: Python's parser
raises RecursionError past about 1,000 levels, and a message deeper than `MAX_DEPTH` is refused
before the SDK's validation and the answer that may echo it recurse through it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
from typing import TYPE_CHECKING, Any, Final, cast

from .. import secret

if TYPE_CHECKING:
    from ..loop import Policy
    from ..runtime import Runtime

__all__ = ["serve"]

logger = logging.getLogger("harness.acp")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INTERNAL_ERROR: Final = -32603
# ACP messages nest a handful of levels; this leaves room for any `_meta` a client adds and
# keeps every later step (validation, an error echoing the params, json.dumps) far from
# Python's recursion limit.
MAX_DEPTH: Final = 100


async def serve(
    runtime: Runtime, model_flag: str | None, policy: Policy, protocol_in: int, protocol_out: int
) -> None:
    """Serve one client on `protocol_in`/`protocol_out` until it closes its end or a signal."""
    from acp import run_agent

    from ._bridge import Bridge

    bridge = Bridge(runtime, model_flag, policy)
    lines = _Lines(protocol_in, protocol_out)
    loop = asyncio.get_running_loop()
    serving = asyncio.current_task()
    assert serving is not None
    # SIGTERM and SIGINT end the bridge like the client closing stdin: running turns end
    # `cancelled` with their calls answered, and every session's lock is released.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, serving.cancel)
    try:
        # Bridge implements only the methods it serves (see _bridge), so it is not the SDK's
        # full Agent protocol as far as a type checker knows; the SDK routes by attribute.
        # The connection it runs closes on the way out, cancelling the prompts still running:
        # their turns close on the log before this returns.
        await run_agent(cast(Any, bridge), lines)
    except asyncio.CancelledError:
        pass
    finally:
        await bridge.aclose()


class _Lines:
    """Newline-delimited JSON-RPC on two file descriptors (the SDK's message `Transport`).

    Input is read by a thread, so stdin may be a pipe, a file or a terminal alike; output is
    written whole, line by line, so concurrent notifications never interleave.
    """

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._write_fd = write_fd
        self._closed = False
        self._unanswered: set[int | str] = set()  # ids of the client's requests
        self._answered = asyncio.Event()
        self._incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        reader = threading.Thread(
            target=self._read, args=(read_fd, loop), name="acp stdin", daemon=True
        )
        reader.start()

    def _read(self, read_fd: int, loop: asyncio.AbstractEventLoop) -> None:
        try:
            with open(read_fd, "rb", buffering=1 << 16) as stream:
                for line in stream:
                    loop.call_soon_threadsafe(self._incoming.put_nowait, line)
            loop.call_soon_threadsafe(self._incoming.put_nowait, None)
        except RuntimeError:
            pass  # the bridge stopped (a signal) while the client was still writing

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._incoming.get()
            if line is None:
                # End of input: the client has said everything. Requests it sent are still
                # answered (a piped script gets its replies); then the bridge ends.
                while self._unanswered and not self._closed:
                    await self._answered.wait()
                    self._answered.clear()
                return None
            if not line.strip():
                continue
            message, problem = _parse(line)
            if message is None:
                await self.send(problem)
                continue
            if "method" in message and "id" in message:
                self._unanswered.add(message["id"])
            return message

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            return
        try:
            data = _encode(message)
        except (TypeError, ValueError, RecursionError) as exc:
            if "method" in message or "id" not in message:
                raise  # the bridge's own request or notification: its sender is told
            # An answer still answers its request (a float that overflowed to inf, say).
            reason = f"Internal error: the answer is not JSON: {exc}"
            message = _error(message["id"], INTERNAL_ERROR, reason)
            data = _encode(message)
        secrets = secret.current()
        if secrets.in_line(data):  # streamed text, an error echoing a value (harness_core.secret)
            data = _encode(secrets.redact_json(message))
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._write_fd, view) :]
        except OSError as exc:  # the client closed its end: nothing more can reach it
            logger.debug("the client stopped reading: %s", exc)
            self._closed = True
        if "method" not in message and message.get("id") in self._unanswered:
            self._unanswered.discard(message["id"])
        self._answered.set()

    async def close(self) -> None:
        self._closed = True


def _parse(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(message, None) for a well-formed JSON-RPC message, else (None, the error to answer)."""
    try:
        message = json.loads(line, parse_constant=_not_json)
    except RecursionError:  # the parser recurses per level: the line, not the bridge, is at fault
        return None, _error(None, PARSE_ERROR, "Parse error: nested too deeply to read")
    except ValueError as exc:
        return None, _error(None, PARSE_ERROR, f"Parse error: {exc}")
    if not isinstance(message, dict):
        return None, _error(None, INVALID_REQUEST, "Invalid Request: not a JSON object")
    request_id = message.get("id")
    if request_id is not None and (
        isinstance(request_id, bool) or not isinstance(request_id, int | str)
    ):
        return None, _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or number")
    if _deeper_than(message, MAX_DEPTH):
        return None, _error(
            request_id, INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels"
        )
    method = message.get("method")
    is_response = "id" in message and ("result" in message or "error" in message)
    if message.get("jsonrpc") != "2.0" or not (isinstance(method, str) or is_response):
        return None, _error(
            request_id, INVALID_REQUEST, 'Invalid Request: needs "jsonrpc": "2.0" and a "method"'
        )
    return message, {}


def _encode(message: dict[str, Any]) -> bytes:
    """One line of strict JSON (no NaN); a lone surrogate the client sent is escaped."""
    try:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # "\udc80" in a client's string, echoed by an error message
        return json.dumps(message, allow_nan=False, separators=(",", ":")).encode() + b"\n"


def _not_json(constant: str) -> object:
    """Python reads NaN and Infinity; JSON has neither, and an answer echoing one would not be
    JSON either."""
    raise ValueError(f"{constant} is not JSON")


def _deeper_than(value: object, limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` levels (level by level, so
    the check itself never recurses)."""
    level = [value]
    for _ in range(limit):
        level = [child for item in level for child in _children(item)]
        if not level:
            return False
    return any(isinstance(item, dict | list) for item in level)


def _children(value: object) -> list[object]:
    if isinstance(value, dict):
        return list(value.values())
    return value if isinstance(value, list) else []


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
