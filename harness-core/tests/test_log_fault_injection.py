"""Fault injection: a session cut at every byte offset of its last records recovers exactly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harness_core.log import (
    AssistantMessage,
    Event,
    EventTypeRegistry,
    FileLog,
    SessionLog,
    SessionStore,
    ToolCall,
    ToolResultPayload,
    UserMessage,
)

WriteTurn = Callable[[SessionLog, str], int]

LAST_RECORDS = 5


@pytest.fixture
def original(log_store: SessionStore, log_turn: WriteTurn) -> tuple[bytes, list[Event]]:
    """A session whose last records hold multi-byte text, separators and a tool call."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        log.append("turn/start", {}, turn=2)
        log.append("message/user", UserMessage(text="emoji 🙂, 日本語, \u2028 and \x00"), turn=2)
        call = ToolCall(id="c9", name="bash", arguments='{"command": "echo \\"ok\\""}')
        log.append("message/assistant", AssistantMessage(tool_calls=(call,)), turn=2)
        result = ToolResultPayload(call_id="c9", tool_name="bash", text="ok → ✓\n\u2029")
        log.append("tool/result", result, turn=2)
        log.append("message/assistant", AssistantMessage(text="Done ✓"), turn=2)
        return log.path.read_bytes(), list(log.events)


def _line_ends(data: bytes) -> list[int]:
    return [index + 1 for index, byte in enumerate(data) if byte == 0x0A]


def _continue(log: SessionLog) -> Event:
    """Append one event that is valid wherever the cut left the turn structure."""
    boundary = log.latest(("turn/start", "turn/end"))
    if boundary is not None and boundary.type == "turn/start":
        return log.append("test/note", {"text": "after recovery"}, turn=boundary.turn)
    last_turn = log.latest(("turn/start",))
    return log.append("turn/start", {}, turn=(last_turn.turn or 0) + 1 if last_turn else 1)


@pytest.mark.slow
def test_every_cut_recovers_exactly_the_complete_records(
    tmp_path: Path, log_registry: EventTypeRegistry, original: tuple[bytes, list[Event]]
) -> None:
    """Cut anywhere in the last records: complete records come back, the rest is set aside."""
    full, events = original
    ends = _line_ends(full)
    first_offset = ends[-LAST_RECORDS - 1]
    work = tmp_path / "cuts"
    work.mkdir()
    path = work / "session.jsonl"
    for offset in range(first_offset, len(full) + 1):
        for leftover in work.iterdir():
            leftover.unlink()
        path.write_bytes(full[:offset])
        complete = sum(1 for end in ends if end <= offset)
        good = ends[complete - 1]

        reader = FileLog.open(path, log_registry, writable=False)
        assert reader.events == events[:complete], f"read-only open, cut at {offset}"
        assert path.read_bytes() == full[:offset], "a reader never changes the file"

        log = FileLog.open(path, log_registry)
        try:
            assert log.events == events[:complete], f"cut at {offset}"
            assert log.committed_seq == complete - 1
            asides = sorted(work.glob("session.jsonl.torn-*"))
            if offset == good:
                assert asides == [] and log.problems == []
            else:
                assert [a.name for a in asides] == [f"session.jsonl.torn-{good}"]
                assert asides[0].read_bytes() == full[good:offset], "torn bytes kept verbatim"
                assert len(log.problems) == 1 and "moved aside" in log.problems[0]
            assert path.read_bytes() == full[:good], "good bytes untouched"
            added = _continue(log)
            assert added.seq == complete
        finally:
            log.close()
        again = FileLog.open(path, log_registry, writable=False)
        assert again.events == [*events[:complete], added]
        assert again.problems == []


def test_a_second_tear_at_the_same_offset_keeps_the_first_aside_file(
    tmp_path: Path, log_registry: EventTypeRegistry, original: tuple[bytes, list[Event]]
) -> None:
    """Recovering twice at one offset writes a new aside file; the earlier one is untouched."""
    full, events = original
    good = _line_ends(full)[-2]
    path = tmp_path / "session.jsonl"
    path.write_bytes(full[:good] + b'{"seq": first tear')
    FileLog.open(path, log_registry).close()
    with path.open("ab") as handle:
        handle.write(b'{"seq": second tear')
    with FileLog.open(path, log_registry) as log:
        assert len(log.events) == len(events) - 1
    first = path.with_name(f"session.jsonl.torn-{good}")
    second = path.with_name(f"session.jsonl.torn-{good}-1")
    assert first.read_bytes() == b'{"seq": first tear'
    assert second.read_bytes() == b'{"seq": second tear'
    assert path.read_bytes() == full[:good]


def test_zero_filled_tail_from_a_power_cut_is_set_aside(
    tmp_path: Path, log_registry: EventTypeRegistry, original: tuple[bytes, list[Event]]
) -> None:
    """A tail of NUL bytes (size updated, data lost) is moved aside like any torn line."""
    full, events = original
    path = tmp_path / "session.jsonl"
    path.write_bytes(full + b"\x00" * 4096)
    with FileLog.open(path, log_registry) as log:
        assert log.events == events
        _continue(log)
    assert path.with_name(f"session.jsonl.torn-{len(full)}").read_bytes() == b"\x00" * 4096
    assert path.read_bytes().startswith(full)
