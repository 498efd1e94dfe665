"""Opening a session: replay, what is skipped (and kept), torn tails, and a reader's refresh."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from harness_core.log import (
    EventTypeRegistry,
    FileLog,
    NotASession,
    SessionLog,
    SessionStore,
    ToolCall,
    ToolResultPayload,
    UserMessage,
    derive_messages,
    read_lines,
    replayed,
)

WriteTurn = Callable[[SessionLog, str], int]


def _session(store: SessionStore, write_turn: WriteTurn, turns: int = 2) -> Path:
    with store.create(system_prompt="sys") as log:
        for number in range(turns):
            write_turn(log, f"prompt {number}")
        return log.path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def test_replay_rebuilds_events_projection_and_committed_seq(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A reopened log has the same events, the same messages and everything committed."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        log_turn(log, "two")
        written, messages = list(log.events), log.projection.request_messages()
    reopened = FileLog.open(log.path, log_store.registry, writable=False)
    assert reopened.events == written
    assert reopened.projection.request_messages() == messages
    assert reopened.committed_seq == written[-1].seq
    assert reopened.problems == []


def test_reading_a_session_loads_no_pydantic(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """Replay and the message projection trust what this version wrote: no payload models load."""
    path = _session(log_store, log_turn)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from harness_core.log import EventTypeRegistry, FileLog\n"
        f"log = FileLog.open(Path({str(path)!r}), EventTypeRegistry(), writable=False)\n"
        "assert log.projection.request_messages()\n"
        "print(sorted(m for m in sys.modules if m.startswith('pydantic')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_unknown_type_is_kept_and_skipped_with_a_problem(
    log_store: SessionStore, log_turn: WriteTurn, caplog: pytest.LogCaptureFixture
) -> None:
    """Events of a type no installed plugin declares stay in the log; projections skip them."""
    path = _session(log_store, log_turn)
    bare = EventTypeRegistry()  # the plugin that declared test/note is gone
    with caplog.at_level(logging.WARNING, logger="harness.log"):
        log = FileLog.open(path, bare)
    try:
        assert [e.type for e in log.events].count("test/note") == 2
        assert log.problems == ["unknown event type 'test/note' kept and skipped"]
        assert "unknown event type 'test/note'" in caplog.text
        assert log.projection.request_messages() == derive_messages(log.events)
        log.append("turn/start", {}, turn=3)  # the session continues
    finally:
        log.close()
    assert [e.type for e in FileLog.open(path, bare, writable=False).events].count("test/note") == 2


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_read_lines_streams_what_a_reader_would_replay(
    log_store: SessionStore,
    log_turn: WriteTurn,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    block: int,
) -> None:
    """Block by block, the lines a reader keeps, as stored, with the reader's warnings."""
    from harness_core.log import _file

    monkeypatch.setattr(_file, "_READ_BLOCK", block)
    path = _session(log_store, log_turn)
    lines = _lines(path)
    lines[5] = b'{"seq": "five"'
    path.write_bytes(b"\n".join(lines) + b'\n{"seq":99,"type":"torn')
    bare = EventTypeRegistry()  # test/note is unknown here
    with caplog.at_level(logging.WARNING, logger="harness.log"):
        streamed = list(read_lines(path, bare))
    warned = [r.getMessage().split(": ", 1)[1] for r in caplog.records]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness.log"):
        opened = FileLog.open(path, bare, writable=False)
    assert streamed == lines[:5] + lines[6:] and len(opened.events) == len(streamed)
    assert warned == [r.getMessage().split(": ", 1)[1] for r in caplog.records]
    assert warned == [
        "line 6: not JSON; skipped",
        "line 7: seq jumps from 4 to 6",
        "unknown event type 'test/note' kept and skipped",
    ]


@pytest.mark.parametrize(
    "garbage",
    [
        b"this is not json",
        b'{"hello": "world"}',
        b"\x00\x00\x00\x00",
        b'{"seq": 3, "type": "message',
    ],
)
def test_garbled_middle_line_is_kept_on_disk_and_skipped(
    log_store: SessionStore,
    log_turn: WriteTurn,
    caplog: pytest.LogCaptureFixture,
    garbage: bytes,
) -> None:
    """A damaged line inside the file is skipped with a warning, never fatal, never removed."""
    path = _session(log_store, log_turn)
    lines = _lines(path)
    lines[5] = garbage
    path.write_bytes(b"\n".join(lines) + b"\n")
    damaged = path.read_bytes()
    with caplog.at_level(logging.WARNING, logger="harness.log"):
        log = FileLog.open(path, log_store.registry)
    try:
        assert [e.seq for e in log.events] == [n for n in range(len(lines)) if n != 5]
        assert log.problems[0].startswith("line 6: ")
        assert log.problems[1] == "line 7: seq jumps from 4 to 6"
        assert "line 6" in caplog.text
        assert path.read_bytes() == damaged, "opening for writing rewrote nothing"
        event = log.append("turn/start", {}, turn=3)
        assert event.seq == len(lines)
    finally:
        log.close()
    assert path.read_bytes().startswith(damaged)


def test_repeated_line_is_skipped_not_replayed_twice(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A duplicated line (same seq twice) replays once and is reported."""
    path = _session(log_store, log_turn, turns=1)
    lines = _lines(path)
    lines.insert(4, lines[3])
    path.write_bytes(b"\n".join(lines) + b"\n")
    log = FileLog.open(path, log_store.registry, writable=False)
    assert [e.seq for e in log.events] == list(range(len(lines) - 1))
    assert log.problems == ["line 5: not a well-formed envelope in sequence; skipped"]


def test_writer_moves_a_torn_tail_aside_and_continues(
    log_store: SessionStore, log_turn: WriteTurn, caplog: pytest.LogCaptureFixture
) -> None:
    """Bytes after the last newline go to `<file>.torn-<offset>`, are reported, and appends resume."""
    path = _session(log_store, log_turn, turns=1)
    good = path.read_bytes()
    path.write_bytes(good + b'{"seq":9,"type":"turn/st')
    with caplog.at_level(logging.WARNING, logger="harness.log"):
        log = FileLog.open(path, log_store.registry)
    try:
        aside = path.with_name(f"{path.name}.torn-{len(good)}")
        assert aside.read_bytes() == b'{"seq":9,"type":"turn/st'
        assert log.problems == [f"torn last line (24 bytes) moved aside to {aside.name}"]
        assert aside.name in caplog.text
        assert path.read_bytes() == good
        assert log.append("turn/start", {}, turn=2).seq == 9
    finally:
        log.close()


def test_reader_ignores_a_torn_tail_without_touching_the_file(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A read-only open replays the complete lines, reports the rest and changes nothing."""
    path = _session(log_store, log_turn, turns=1)
    torn = path.read_bytes() + b'{"seq":9,"ty'
    path.write_bytes(torn)
    log = FileLog.open(path, log_store.registry, writable=False)
    assert len(log.events) == 9
    assert log.problems == ["ignoring 12 bytes after the last newline"]
    assert path.read_bytes() == torn
    assert list(path.parent.glob("*.torn-*")) == []


@pytest.mark.parametrize("writable", [True, False])
def test_an_empty_file_is_refused_by_readers_and_writers(
    tmp_path: Path, log_registry: EventTypeRegistry, writable: bool
) -> None:
    """A 0-byte file is not a session: opening it says so, and a writer adds nothing."""
    path = tmp_path / "empty.jsonl"
    path.touch()
    with pytest.raises(NotASession, match="empty file, not a session"):
        FileLog.open(path, log_registry, writable=writable)
    assert path.read_bytes() == b""


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"garbage\n", "its first line is not an event"),
        (b'{"seq":0,"type":"turn/start","ts":"t","data":{}}\n', "'turn/start' at seq 0"),
        (b'{"seq":0,"type":"session/start","ts":"t","data":{"id":1}}\n', "is invalid"),
        (b'{"seq":0,"type":"session/start","ts":"t","da', "no complete first line"),
    ],
)
def test_a_writer_opens_only_a_file_that_starts_with_a_session_start(
    tmp_path: Path, log_registry: EventTypeRegistry, content: bytes, problem: str
) -> None:
    """Garbage, another event or a torn header first: one line says why, nothing is written."""
    path = tmp_path / "other.jsonl"
    path.write_bytes(content)
    with pytest.raises(NotASession, match=re.escape(problem)) as caught:
        FileLog.open(path, log_registry)
    assert "\n" not in str(caught.value)
    assert path.read_bytes() == content
    assert list(tmp_path.glob("*.torn-*")) == []


def test_crashed_turn_reopens_with_its_calls_still_open(log_store: SessionStore) -> None:
    """A writer that died mid-turn leaves the turn open; the next writer can finish it."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", UserMessage(text="go"), turn=1)
        call = ToolCall(id="c1", name="bash", arguments="{}")
        log.append("message/assistant", {"tool_calls": [call]}, turn=1)
    log = log_store.open(log.session_id)
    try:
        assert log.projection.pending_calls == {"c1": "bash"}
        assert log.projection.request_messages()[-1]["tool_call_id"] == "c1"
        log.append(
            "tool/result", ToolResultPayload(call_id="c1", tool_name="bash", text="ok"), turn=1
        )
        log.append("turn/end", {"status": "error", "error": "crashed"}, turn=1)
        assert log.projection.pending_calls == {}
    finally:
        log.close()


def test_refresh_reads_what_a_writer_appended(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """A reader's refresh returns the events appended since it opened, and only those."""
    writer = log_store.create(system_prompt="sys")
    try:
        reader = FileLog.open(writer.path, log_store.registry, writable=False)
        assert reader.refresh() == []
        log_turn(writer, "one")
        fresh = reader.refresh()
        assert [e.seq for e in fresh] == list(range(1, 9))
        assert reader.events == writer.events
        assert reader.projection.request_messages() == writer.projection.request_messages()
        assert reader.committed_seq == 8
        assert reader.refresh() == []
    finally:
        writer.close()


def test_refresh_waits_for_a_line_to_be_complete(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Half a line seen by a reader is left for later, then read once its newline lands."""
    path = _session(log_store, log_turn, turns=1)
    reader = FileLog.open(path, log_store.registry, writable=False)
    line = b'{"seq":9,"type":"turn/start","ts":"2026-01-01T00:00:00.000Z","data":{},"turn":2}\n'
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line[:30])
        assert reader.refresh() == []
        os.write(fd, line[30:])
        fresh = reader.refresh()
    finally:
        os.close(fd)
    assert [(e.seq, e.type, e.turn) for e in fresh] == [(9, "turn/start", 2)]
    assert reader.problems == []


def test_refresh_reports_a_garbled_line_with_its_problem(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A damaged line arriving through refresh is skipped with a problem like on open."""
    path = _session(log_store, log_turn, turns=1)
    reader = FileLog.open(path, log_store.registry, writable=False)
    with path.open("ab") as handle:
        handle.write(b"garbage\n")
        handle.write(b'{"seq":10,"type":"turn/start","ts":"t","data":{},"turn":2}\n')
    fresh = reader.refresh()
    assert [e.seq for e in fresh] == [10]
    assert "line 10: not JSON; skipped" in reader.problems
    assert any("seq jumps from 8 to 10" in p for p in reader.problems)


def _long_session(store: SessionStore, *, calls: bool = False) -> str:
    """A session of 20,000 one-prompt turns (60,001 events), or with `calls` of 12,000 turns
    of a prompt, a tool call and its result (60,001 events too)."""
    with store.create() as log:
        for turn in range(1, 12_001 if calls else 20_001):
            log.append("turn/start", {}, turn=turn)
            log.append("message/user", {"text": f"prompt {turn}"}, turn=turn)
            if calls:
                call = {"id": f"c{turn}", "name": "bash", "arguments": '{"command": "ls"}'}
                log.append("message/assistant", {"text": None, "tool_calls": [call]}, turn=turn)
                result = {"call_id": f"c{turn}", "tool_name": "bash", "text": "a b c"}
                log.append("tool/result", result, turn=turn)
            log.append("turn/end", {"status": "completed"}, turn=turn)
        return log.session_id


def test_a_writers_replay_starts_no_full_garbage_collection(store: SessionStore) -> None:
    """A writer keeps none of the events it replays, and lets them go as it goes: opening a
    60,000-event session starts no full pass of the collector, which on a host would walk
    every object of the process while every other thread waits for the interpreter (the web
    host's other clients did, 100 ms and more a pass)."""
    import gc

    session = _long_session(store)
    full: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    gc.collect()
    gc.callbacks.append(count)
    try:
        writer = store.open(session)
    finally:
        gc.callbacks.remove(count)
    writer.close()
    assert writer.next_seq == 60_001
    assert full == []


def test_a_reader_keeps_lines_and_folds_a_hosts_view_as_it_opens(store: SessionStore) -> None:
    """A reader of a 60,000-event session of tool calls (the web host holds one for each
    session it shows) keeps its lines, not 60,000 objects (nor the model's history of 12,000
    calls) that each full pass of the collector would walk; a host's own fold (`replayed`)
    sees every event once as it opens, and a page of its history or what came after a seq is
    parsed from those lines when asked."""
    import gc

    session = _long_session(store, calls=True)
    folded: list[int] = []
    gc.collect()
    before = len(gc.get_objects())
    with replayed(lambda events: folded.extend(e.seq for e in events)):
        reader = store.open(session, writable=False)
    gc.collect()
    assert len(gc.get_objects()) - before < 1_000
    assert folded == list(range(60_001))
    page, more = reader.tail(50)
    assert ([e.seq for e in page], more) == (list(range(59_951, 60_001)), True)
    older, more = reader.tail(50, before=30)
    assert ([e.seq for e in older], more) == (list(range(30)), False)
    assert [(e.seq, e.type) for e in reader.events_after(59_998)] == [
        (59_999, "tool/result"),
        (60_000, "turn/end"),
    ]
    assert len(reader.projection.request_messages()) == 36_000  # made when asked for


def test_a_readers_pages_skip_a_damaged_line_as_its_open_did(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A line skipped on open (with its problem) is in no page: the seqs still find theirs."""
    path = _session(log_store, log_turn, turns=1)
    with path.open("ab") as handle:
        handle.write(b"garbage\n")
        handle.write(b'{"seq":10,"type":"turn/start","ts":"t","data":{},"turn":2}\n')
    reader = FileLog.open(path, log_store.registry, writable=False)
    assert "line 10: not JSON; skipped" in reader.problems
    assert [e.seq for e in reader.events_after(7)] == [8, 10]
    page, more = reader.tail(2, before=10)
    assert ([e.seq for e in page], more) == ([7, 8], True)
    assert [e.seq for e in reader.events] == [*range(9), 10]
