"""The web host's HTTP server: uvicorn, with limits a local user without the token cannot wear out.

Anyone on this machine can connect to the loopback port. Without limits, connections that send
half a request stayed open for good, a thousand of them used up the process's descriptors, and
asyncio then logged a traceback for every accept it could not make. So:

- a whole request (headers and body) must arrive within REQUEST_TIMEOUT of the connection or of
  the previous response, else the connection is closed;
- at most `limits()` connections are open: a new one beyond it closes the oldest that
  still owes a request (a legitimate client sends its request at once, so it is never the
  oldest), or itself when every open one is being answered;
- what uvicorn and asyncio log becomes one `harness: warning:` line per kind, not one (with a
  traceback) per connection.

Request bodies are capped by the app (`MAX_BODY`, 413).

Our one subclass of a library's internal class (`H11Protocol`), argued: uvicorn has no
deadline for a request's arrival (`timeout_keep_alive` runs only between requests and restarts
with every byte received) and no cap on open connections (`limit_concurrency` answers 503 to
requests beyond it, but keeps every idle connection open); its issue #157 (encode/uvicorn,
"Further timeouts and resource limiting": `--timeout-request-start`) is the one that would
retire this. Hypercorn has a per-read timeout and no connection cap; granian has a header read
timeout (`http1_header_read_timeout`) but no connection cap either, and would replace the
server under the app. So uvicorn stays, its range pinned in pyproject.toml to the versions
tests/test_web_limits.py ran against.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
from typing import Final

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_CONNECTIONS", "REQUEST_TIMEOUT", "limits", "run"]

REQUEST_TIMEOUT: Final = 10.0  # seconds; loopback clients send a request in milliseconds
MAX_CONNECTIONS: Final = 256  # browsers open six per host; the rest is room for tabs and tools
BACKLOG: Final = 128  # the listen queue; Python's own default

logger = logging.getLogger("harness.web.http")


def run(app: ASGIApp, listener: socket.socket) -> None:
    """Serve `app` on `listener` until interrupted."""
    once = _OncePerKind()
    for name in ("uvicorn", "asyncio"):  # their lines, each kind once, as harness warnings
        quieted = logging.getLogger(name)
        quieted.handlers, quieted.propagate = [once], False
    backlog, limit = limits()
    config = uvicorn.Config(
        app,
        http=_guarded(limit, once),
        log_config=None,
        log_level="warning",
        lifespan="on",  # the app closes its sessions' models when the server stops
        # Also how many connections asyncio accepts in one go, before the limit sees any: not
        # uvicorn's 2,048, so a burst cannot use up the descriptors before idle ones close.
        backlog=backlog,
    )
    uvicorn.Server(config).run(sockets=[listener])


def limits() -> tuple[int, int]:
    """The listen backlog and the connection limit, within the descriptors this process may
    open: half of them for connections, the other half for session files and sandboxes. Up to
    three backlogs' worth are accepted before the limit sees them, so that much is kept free."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    backlog = max(8, min(BACKLOG, soft // 8))
    return backlog, max(8, min(MAX_CONNECTIONS, soft // 2 - 3 * backlog))


class _OncePerKind(logging.Handler):
    """A log handler that says each kind of message once (keyed by its format string)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        text = (record.getMessage().splitlines() or [""])[0]
        if record.exc_info and record.exc_info[1] is not None:
            text = f"{text} ({record.exc_info[1]!r})"
        # asyncio puts addresses and handles in its text: its kind is what comes before them
        self.note(f"{record.name}:{text.split('(')[0]}", text)

    def note(self, kind: str, text: str) -> None:
        if kind not in self.seen:
            self.seen.add(kind)
            logger.warning("%s (said once; later ones are not shown)", text)


def _guarded(limit: int, once: _OncePerKind) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with a request deadline and a connection limit."""
    # Connections that owe a whole request, oldest first, with their deadline timers.
    waiting: dict[H11Protocol, asyncio.TimerHandle] = {}

    class Guarded(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limit:
                if not waiting:
                    once.note("refused", f"refusing connections beyond {limit} open ones")
                    transport.close()
                    return
                once.note("evicted", f"over {limit} connections: closing the oldest idle ones")
                oldest, timer = next(iter(waiting.items()))
                del waiting[oldest]  # closing takes a loop turn: not picked again meanwhile
                timer.cancel()
                oldest.transport.close()
            self._await_request()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
                self._forget()  # the whole request is in: it is being answered

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state in (
                h11.IDLE,
                h11.SEND_BODY,
            ):
                self._await_request()  # keep-alive: the next request has a deadline too

        def connection_lost(self, exc: Exception | None) -> None:
            self._forget()
            super().connection_lost(exc)

        def _await_request(self) -> None:
            self._forget()
            waiting[self] = self.loop.call_later(REQUEST_TIMEOUT, self._too_slow)

        def _forget(self) -> None:
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()

        def _too_slow(self) -> None:
            waiting.pop(self, None)
            once.note(
                "slow", f"closing connections that sent no whole request in {REQUEST_TIMEOUT:g} s"
            )
            self.transport.close()

    return Guarded
