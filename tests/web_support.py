"""Helpers the web host tests share (no tests here): a real `harness serve` subprocess."""

from __future__ import annotations

import json
import re
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from test_cli_support import HARNESS, child_env, write_script

URL_LINE = re.compile(r"harness web: (http://([\w.]+|\[[\w:]+\]):(\d+)/)\?token=(\S+)$")


@dataclass
class Served:
    """A running `harness serve`: its base URL, token and an authorized client."""

    url: str
    token: str
    home: Path
    process: subprocess.Popen[str]
    stderr: str = ""  # what the server printed on stderr, once it stopped

    @property
    def host(self) -> str:
        return self.url.split("//", 1)[1].rstrip("/")

    def client(self, *, token: bool = True, timeout: float = 20) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def wait_idle(self, session_id: str, timeout: float = 20) -> dict[str, Any]:
        """The tail page once no turn runs and nothing is queued."""
        deadline = time.monotonic() + timeout
        with self.client() as client:
            while True:
                page: dict[str, Any] = client.get(
                    f"/api/sessions/{session_id}/history", params={"limit": 1000}
                ).json()
                snapshot = page["snapshot"]
                if not snapshot["running"] and not snapshot["queued"]:
                    return page
                assert time.monotonic() < deadline, f"still running: {snapshot}"
                time.sleep(0.05)

    def wait_question(self, session_id: str, timeout: float = 20) -> dict[str, Any]:
        """The first open approval question of the session's tail page, once one is open."""
        deadline = time.monotonic() + timeout
        with self.client() as client:
            while True:
                snapshot = client.get(f"/api/sessions/{session_id}/history").json()["snapshot"]
                if snapshot["approvals"]:
                    question: dict[str, Any] = snapshot["approvals"][0]
                    return question
                assert time.monotonic() < deadline, f"no question opened: {snapshot}"
                time.sleep(0.05)


@contextmanager
def serve(
    home: Path,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    port: int = 0,
    max_files: int | None = None,
) -> Iterator[Served]:
    """`harness serve --port PORT ARGS` with HARNESS_HOME=home, stopped (SIGINT) at the end;
    `max_files` lowers its descriptor limit (RLIMIT_NOFILE)."""

    def limit_files() -> None:
        if max_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, max_files))

    process = subprocess.Popen(
        [HARNESS, "serve", "--port", str(port), *args],
        preexec_fn=limit_files,
        env=child_env({"HARNESS_HOME": str(home), **(env or {})}),
        stdin=subprocess.DEVNULL,  # no terminal: the approval policy defaults to auto
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=home.parent,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    match = URL_LINE.fullmatch(line)
    if match is None:
        process.kill()
        raise AssertionError(f"first line {line!r}; stderr: {process.communicate()[1]}")
    served = Served(match[1], match[4], home, process)
    try:
        yield served
    finally:
        process.send_signal(signal.SIGINT)
        try:
            served.stderr = process.communicate(timeout=10)[1]  # reads both pipes, closes them
        except subprocess.TimeoutExpired:
            process.kill()
            served.stderr = process.communicate()[1]


# A parent that delegates to a subagent, whose bash asks: two questions under `ask`.
SUBAGENT_ASKS = [
    {"tool_calls": [{"name": "subagent", "arguments": {"task": "Say hi."}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
    {"text": "Child done."},
    {"text": "Parent done."},
]


@contextmanager
def asking(
    home: Path, script: Path, steps: Sequence[Mapping[str, Any]]
) -> Iterator[tuple[Served, httpx.Client, str]]:
    """`harness serve --approval ask` on a scripted model: the server, a client, a new session."""
    with (
        serve(home, "--model", write_script(script, steps), "--approval", "ask") as served,
        served.client() as client,
    ):
        yield served, client, client.post("/api/sessions", json={}).json()["id"]


# What the page's four clicks (once, deny, session, then the grant's call) put on the log.
ONCE_DENY_SESSION = [
    ("allow", "user", "once"),
    ("deny", "user", "once"),
    ("allow", "user", "session"),
    ("allow", "user", "session"),
]


def decisions(page: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """A history page's `tool/approval` events as (decision, by, scope)."""
    return [
        (e["data"]["decision"], e["data"]["by"], e["data"]["scope"])
        for e in page["events"]
        if e["type"] == "tool/approval"
    ]


def sse_events(response: httpx.Response, *, until: int) -> list[dict[str, Any]]:
    """Parse a streaming SSE response until an envelope with seq `until` arrived."""
    received: list[dict[str, Any]] = []
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
            continue
        if "data" in fields:
            received.append(
                {
                    "event": fields.get("event", "message"),
                    "id": fields.get("id"),
                    "data": json.loads(fields["data"]),
                }
            )
            if received[-1]["event"] == "message" and received[-1]["data"]["seq"] >= until:
                return received
        fields = {}
    return received


__all__ = [
    "ONCE_DENY_SESSION",
    "SUBAGENT_ASKS",
    "Served",
    "asking",
    "decisions",
    "free_port",
    "serve",
    "sse_events",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
