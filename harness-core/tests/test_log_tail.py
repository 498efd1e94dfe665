"""Tail queries: the newest event of some types, read backwards from the end of the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from harness_core.log import (
    Event,
    EventType,
    EventTypeRegistry,
    FileLog,
    SessionLog,
    SessionStore,
    find_latest,
    last_event,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

WriteTurn = Callable[[SessionLog, str], int]


class Odd(BaseModel):
    text: str


def line_of(event: Event) -> bytes:
    """The event's line as the log writes it: envelope keys in order, one newline."""
    return orjson.dumps(event.to_json(), option=orjson.OPT_APPEND_NEWLINE)


def _session_with_filler(store: SessionStore, write_turn: WriteTurn, filler_turns: int) -> Path:
    """A session of `filler_turns` short turns (written directly, fast) and a final real turn."""
    with store.create() as log:
        path = log.path
    lines = []
    seq = 1
    for turn in range(1, filler_turns + 1):
        for kind, data in (("turn/start", {}), ("message/user", {"text": f"filler {turn}"})):
            lines.append(line_of(Event(seq, kind, "2026-01-01T00:00:00.000Z", data, turn)))
            seq += 1
        end = Event(seq, "turn/end", "2026-01-01T00:00:00.000Z", {"status": "completed"}, turn)
        lines.append(line_of(end))
        seq += 1
    with path.open("ab") as handle:
        handle.write(b"".join(lines))
    with FileLog.open(path, store.registry) as log:
        write_turn(log, "the last turn")
    return path


def test_finds_the_newest_event_of_the_given_types(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """The answer is the newest event whose type is in the set, fully decoded."""
    with log_store.create() as log:
        log_turn(log, "one")
        log_turn(log, "two")
    note = find_latest(log.path, {"test/note"})
    assert note is not None and note == log.latest(("test/note",))
    assert note.data == {"text": "note 2"}
    either = find_latest(log.path, ("test/note", "turn/start"))
    assert either is not None and either.seq == note.seq
    assert find_latest(log.path, ("nothing/here",)) is None


def test_a_bare_string_is_one_type(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """`find_latest(path, "turn/end")` means that type, not a set of characters."""
    with log_store.create() as log:
        log_turn(log, "one")
    found = find_latest(log.path, "turn/end")
    assert found is not None and found.type == "turn/end"
    assert find_latest(log.path, "turn") is None


def test_last_event_is_the_final_complete_line(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """`last_event` is the newest well-formed event."""
    with log_store.create() as log:
        log_turn(log, "one")
    assert last_event(log.path) == log.events[-1]


def test_torn_tail_and_garbled_lines_are_skipped(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Bytes after the last newline and lines that do not decode are passed over."""
    with log_store.create() as log:
        log_turn(log, "one")
    with log.path.open("ab") as handle:
        handle.write(b"garbage line\n")
        handle.write(b'{"seq":12,"type":"test/note","ts":"t","data":{"text":"garbled"\n')
        handle.write(b'{"seq":13,"type":"test/note","ts":"t","data":{"text":"torn"}')
    note = find_latest(log.path, ("test/note",))
    assert note is not None and note.data["text"] == "note 1"
    assert last_event(log.path) == log.events[-1]


def test_empty_and_newline_free_files_have_no_events(tmp_path: Path) -> None:
    """An empty file or one with only a torn line answers None."""
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b'{"seq":0,"type":"session/start"')
    for path in (empty, torn):
        assert last_event(path) is None
        assert find_latest(path, ("session/start",)) is None


def test_lines_longer_than_a_read_block(log_store: SessionStore) -> None:
    """A 2 MB line is found whole, and a 300 kB line after it is skipped over correctly."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        big = log.append("test/note", {"text": "n" * 2_000_000}, turn=1)
        log.append("message/user", {"text": "u" * 300_000}, turn=1)
        log.append("turn/end", {"status": "completed"}, turn=1)
    assert find_latest(log.path, ("test/note",)) == big
    found = find_latest(log.path, ("turn/start",))
    assert found is not None and found.seq == 1


# A file of whole lines (events of two types, of any length up to a few read blocks, and lines
# that are not events) and maybe a torn tail: what a forward read of it would make of it.
file_lines = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["test/note", "turn/start"]), st.integers(0, 20_000)),
        st.sampled_from([b"", b"not json", b'{"seq":"x","type":"test/note"}']),
    ),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(lines=file_lines, torn=st.sampled_from([b"", b'{"seq":99,"type":"test/note"']))
def test_tail_queries_agree_with_a_forward_read(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, int] | bytes], torn: bytes
) -> None:
    """find_latest and last_event give what a forward read of the whole file gives."""
    events: list[Event] = []
    encoded = []
    for item in lines:
        if isinstance(item, bytes):
            encoded.append(item + b"\n")
            continue
        kind, length = item
        events.append(Event(len(events), kind, "t", {"text": "x" * length}))
        encoded.append(line_of(events[-1]))
    path = tmp_path_factory.mktemp("tail") / "s.jsonl"
    path.write_bytes(b"".join(encoded) + torn)
    notes = [e for e in events if e.type == "test/note"]
    assert find_latest(path, ("test/note",)) == (notes[-1] if notes else None)
    assert last_event(path) == (events[-1] if events else None)


def test_type_names_needing_escapes_are_found(log_store: SessionStore) -> None:
    """Types with a quote or non-ASCII letters match even though their bytes are escaped."""
    registry: EventTypeRegistry = log_store.registry
    for name in ('test/"quoted"', "test/größe", "test/back\\slash"):
        registry.declare(EventType(name, Odd, surface=False))
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        for name in ('test/"quoted"', "test/größe", "test/back\\slash"):
            log.append(name, {"text": name}, turn=1)
        log.append("message/user", {"text": "after"}, turn=1)
    for name in ('test/"quoted"', "test/größe", "test/back\\slash"):
        found = find_latest(log.path, (name,))
        assert found is not None and found.data == {"text": name}


def test_lines_in_another_key_order_are_still_matched(tmp_path: Path) -> None:
    """A line this project did not write (type first) is parsed in full, not skipped."""
    path = tmp_path / "foreign.jsonl"
    path.write_bytes(
        b'{"type":"test/note","seq":1,"ts":"t","data":{"text":"foreign"}}\n'
        b'{"seq":2,"type":"message/user","ts":"t","data":{"text":"x"}}\n'
    )
    found = find_latest(path, ("test/note",))
    assert found is not None and found.data == {"text": "foreign"}


def test_a_type_named_inside_a_payload_is_not_taken_for_the_event(tmp_path: Path) -> None:
    """`"type":"test/note"` nested in a later event's data is passed over; spaced lines match."""
    path = tmp_path / "nested.jsonl"
    path.write_bytes(
        b'{"seq": 1, "type": "test/note", "ts": "t", "data": {"text": "python json"}}\n'
        b'{"seq":2,"type":"test/note","ts":"t","data":{"text":"the note"}}\n'
        b'{"seq":3,"type":"tool/result","ts":"t","data":{"data":{"type":"test/note"}}}\n'
        b'{"seq":4,"type":"message/user","ts":"t","data":{"text":"\\"type\\":\\"test/note\\""}}\n'
    )
    found = find_latest(path, ("test/note",))
    assert found is not None and (found.seq, found.data) == (2, {"text": "the note"})
    path.write_bytes(path.read_bytes().split(b"\n", 1)[0] + b"\n")
    found = find_latest(path, ("test/note",))
    assert found is not None and found.data == {"text": "python json"}


@pytest.mark.parametrize("query", [find_latest, last_event])
def test_cost_does_not_grow_with_the_session(
    log_store: SessionStore,
    log_turn: WriteTurn,
    log_bytes_read: dict[str, int],
    query: Callable[..., Event | None],
) -> None:
    """The same query on 1k- and 50k-event sessions with the same tail reads the same bytes,
    give or take the longer seq numbers of the longer one's lines."""
    short = _session_with_filler(log_store, log_turn, filler_turns=330)
    long = _session_with_filler(log_store, log_turn, filler_turns=16_660)
    assert long.stat().st_size > 40 * short.stat().st_size
    log_bytes_read.clear()
    args = (("test/note",),) if query is find_latest else ()
    answers = [query(path, *args) for path in (short, long)]
    assert answers[0] is not None and answers[1] is not None
    assert answers[0].type == answers[1].type
    assert answers[0].seq == 1 + 3 * 330 + (answers[1].seq - 1 - 3 * 16_660)
    assert 0 <= log_bytes_read[str(long)] - log_bytes_read[str(short)] < 100
    assert log_bytes_read[str(long)] < 20_000
