"""What a local user without the token can do to `harness serve`: open many connections, send
half a request and stop, send a huge body. A real server subprocess and real sockets, on
loopback only; the server keeps answering a proper client, and its stderr stays a few lines.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from harness_core.web._server import REQUEST_TIMEOUT
from web_support import Served, serve

HALF_REQUEST = b"GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: never ends


def half_open(served: Served, count: int) -> list[socket.socket]:
    """`count` connections that each send half a request and wait; the first one sends a whole
    request first (keep-alive), so its half request is a second one."""
    host, port = served.host.rsplit(":", 1)
    sockets = []
    for n in range(count):
        connection = socket.create_connection((host, int(port)), timeout=10)
        if n == 0:
            connection.sendall(
                b"GET /api/sessions HTTP/1.1\r\nHost: %s\r\n\r\n" % served.host.encode()
            )
            assert connection.recv(100).startswith(b"HTTP/1.1 401")
        connection.sendall(HALF_REQUEST)
        sockets.append(connection)
    return sockets


def closed_by_server(connection: socket.socket, deadline: float) -> bool:
    """Whether the server closed the connection before `deadline` (what it sent before that,
    the first one's answer, is read and dropped)."""
    try:
        while True:
            connection.settimeout(max(0.01, deadline - time.monotonic()))
            if connection.recv(65536) == b"":
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_sent_requests_and_many_connections_leave_serve_responsive(
    harness_home: Path,
) -> None:
    """300 connections that send half a request against a server that may open 256 files: a
    proper client is answered at once, every half request is closed within the deadline, and
    stderr holds one line per kind of trouble (it was a traceback per failed accept, and the
    client waited for good)."""
    with serve(harness_home, max_files=256) as served:
        sockets = half_open(served, 300)
        started = time.monotonic()
        with served.client(timeout=5) as client:
            assert client.get("/api/sessions").status_code == 200
        answered = time.monotonic() - started
        deadline = time.monotonic() + REQUEST_TIMEOUT + 3
        still_open = [s for s in sockets if not closed_by_server(s, deadline)]
        for connection in sockets:
            connection.close()
        with served.client(timeout=5) as client:
            assert client.get("/api/sessions").status_code == 200
    assert answered < 3, f"a proper client waited {answered:.1f} s"
    assert still_open == []
    lines = [line for line in served.stderr.splitlines() if line != "harness: error: interrupted"]
    assert len(served.stderr) < 1000 and "Traceback" not in served.stderr, served.stderr
    assert all(line.startswith("harness: warning: ") for line in lines), lines
    assert len(set(lines)) == len(lines)


def test_a_body_over_the_limit_is_413_and_nothing_is_created(harness_home: Path) -> None:
    """2 MiB with a Content-Length, or chunked without one: 413 with one line, no session."""
    body = b'{"model": "' + b"x" * (2 << 20) + b'"}'
    with serve(harness_home) as served, served.client() as client:
        declared = client.post("/api/sessions", content=body)
        chunked = client.post("/api/sessions", content=iter([body[:1000], body[1000:]]))
        for answer in (declared, chunked):
            assert answer.status_code == 413
            assert answer.json() == {"error": "the body is larger than 1 MiB"}
        assert client.get("/api/sessions").json() == {"sessions": []}
