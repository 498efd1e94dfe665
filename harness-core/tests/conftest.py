"""Fixtures for the session log tests (test_log_*.py): a registry, a store, a turn writer."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from harness_core import builtins
from harness_core.config import Config
from harness_core.log import (
    AssistantMessage,
    EventType,
    EventTypeRegistry,
    SessionLog,
    SessionStore,
    ToolCall,
    ToolResultPayload,
    TurnEnd,
    UserMessage,
)
from harness_core.plugins import PluginHost
from pydantic import BaseModel

NOTE_TYPE = "test/note"


class NotePayload(BaseModel):
    """A plugin-style, non-surface event type the log tests declare."""

    text: str


WriteTurn = Callable[[SessionLog, str], int]


@pytest.fixture
def host() -> PluginHost:
    """The real host with the built-in plugin and every installed entry point (the todo
    plugin). A short bash timeout: a test that breaks concurrency fails in seconds."""
    plugin_host = PluginHost(Config({"plugins": {"builtins": {"bash_timeout": 10}}}, env={}))
    builtins.add_to(plugin_host)
    plugin_host.load_entry_points(env={})
    return plugin_host


@pytest.fixture
def store(host: PluginHost, harness_home: Path) -> SessionStore:
    """A session store in this test's HARNESS_HOME that knows the host's event types."""
    return SessionStore(harness_home, host.event_types)


@pytest.fixture
def log_registry() -> EventTypeRegistry:
    """The core event types plus the plugin-style `test/note` (not surface)."""
    registry = EventTypeRegistry()
    registry.declare(EventType(NOTE_TYPE, NotePayload, surface=False))
    return registry


@pytest.fixture
def log_store(harness_home: Path, log_registry: EventTypeRegistry) -> SessionStore:
    """A session store in this test's HARNESS_HOME."""
    return SessionStore(harness_home, log_registry)


def write_turn(log: SessionLog, prompt: str) -> int:
    """Append one complete turn the way the loop does, committing where it commits.

    turn/start, user, assistant with two calls (commit), a note, both results (commit),
    the answer (commit), turn/end (commit). Returns the turn number.
    """
    turn = log.next_turn
    log.append("turn/start", {}, turn=turn)
    log.append("message/user", UserMessage(text=prompt), turn=turn)
    log.commit()
    calls = (
        ToolCall(id=f"t{turn}-a", name="bash", arguments='{"command": "ls"}'),
        ToolCall(id=f"t{turn}-b", name="bash", arguments='{"command": "pwd"'),  # malformed
    )
    log.append("message/assistant", AssistantMessage(text="Looking.", tool_calls=calls), turn=turn)
    log.commit()
    log.append(NOTE_TYPE, NotePayload(text=f"note {turn}"), turn=turn)
    for call in calls:
        result = ToolResultPayload(
            call_id=call.id, tool_name=call.name, text=f"output of {call.id}"
        )
        log.append("tool/result", result, turn=turn)
    log.commit()
    log.append("message/assistant", AssistantMessage(text=f"Answer {turn}."), turn=turn)
    log.commit()
    log.append("turn/end", TurnEnd(status="completed"), turn=turn)
    log.commit()
    return turn


@pytest.fixture
def log_turn() -> WriteTurn:
    """`log_turn(log, prompt)` appends one complete tool-calling turn (8 events)."""
    return write_turn


class _CountingReader:
    """A real binary file that counts the bytes read through it."""

    def __init__(self, handle: IO[Any], counts: dict[str, int], name: str) -> None:
        self._handle = handle
        self._counts = counts
        self._name = name

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._handle.read(size)
        self._counts[self._name] = self._counts.get(self._name, 0) + len(data)
        return data

    def readline(self) -> bytes:
        line: bytes = self._handle.readline()
        self._counts[self._name] = self._counts.get(self._name, 0) + len(line)
        return line

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines: list[bytes] = self._handle.readlines(hint)
        self._counts[self._name] = self._counts.get(self._name, 0) + sum(map(len, lines))
        return lines

    def seek(self, offset: int, whence: int = 0) -> int:
        position: int = self._handle.seek(offset, whence)
        return position

    def fileno(self) -> int:
        return self._handle.fileno()  # reads through it are counted by `os.preadv`

    def __enter__(self) -> _CountingReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._handle.close()


@pytest.fixture
def log_bytes_read(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Bytes read per file through `Path.open(..., "rb")`, `os.fdopen(fd, "rb")`, `os.pread`
    or `os.preadv`."""
    counts: dict[str, int] = {}
    real_open = Path.open
    real_fdopen = os.fdopen
    real_pread = os.pread
    real_preadv = os.preadv

    def counting_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, mode, *args, **kwargs)
        return _CountingReader(handle, counts, str(self)) if mode == "rb" else handle

    def counting_fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        name = os.readlink(f"/proc/self/fd/{fd}")  # the path the descriptor was opened by
        handle = real_fdopen(fd, mode, *args, **kwargs)
        return _CountingReader(handle, counts, name) if mode == "rb" else handle

    def counting_preadv(fd: int, buffers: Any, offset: int, *args: Any) -> int:
        name = os.readlink(f"/proc/self/fd/{fd}")
        got: int = real_preadv(fd, buffers, offset, *args)
        counts[name] = counts.get(name, 0) + got
        return got

    def counting_pread(fd: int, size: int, offset: int) -> bytes:
        name = os.readlink(f"/proc/self/fd/{fd}")
        data: bytes = real_pread(fd, size, offset)
        counts[name] = counts.get(name, 0) + len(data)
        return data

    monkeypatch.setattr(Path, "open", counting_open)
    monkeypatch.setattr(os, "fdopen", counting_fdopen)
    monkeypatch.setattr(os, "pread", counting_pread)
    monkeypatch.setattr(os, "preadv", counting_preadv)
    return counts
