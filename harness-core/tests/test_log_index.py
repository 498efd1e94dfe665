"""The tail index: a writer's record of where each type's newest line is, checked before use."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import orjson
import pytest
from harness_core.log import (
    EnvelopeError,
    Event,
    EventType,
    EventTypeRegistry,
    FileLog,
    SessionLog,
    SessionStore,
    TurnEnd,
    UserMessage,
    find_latest,
)
from harness_core.log._envelope import decode_line
from harness_core.log._index import SAVE_EVERY
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

NOTE_TYPE = "test/note"  # the plugin-style event type of the log tests' registry
NOTES = (NOTE_TYPE,)
FILLER = "x" * 2_000


def forward_latest(path: Path, types: tuple[str, ...]) -> Event | None:
    """What a forward read of every whole line gives: the newest event of `types`."""
    newest = None
    for line in path.read_bytes().split(b"\n")[:-1]:
        try:
            event = decode_line(line)
        except EnvelopeError:
            continue
        if event.type in types:
            newest = event
    return newest


def index_file(log_path: Path) -> Path:
    return log_path.parent.parent / "cache" / "tail" / f"{log_path.stem}.json"


def append_turn(log: SessionLog, *, note: str | None = None, filler: int = 1) -> None:
    """One turn: `filler` long user messages, a note when given, committed at its end."""
    turn = log.next_turn
    log.append("turn/start", {}, turn=turn)
    for _ in range(filler):
        log.append("message/user", UserMessage(text=FILLER), turn=turn)
    if note is not None:
        log.append(NOTE_TYPE, {"text": note}, turn=turn)
    log.append("turn/end", TurnEnd(status="completed"), turn=turn)
    log.commit()


def hand_turn(path: Path, note: str) -> None:
    """A turn with a note appended by a writer that keeps no index (an older harness)."""
    last = forward_latest(path, ("turn/start", "turn/end", "message/user", NOTE_TYPE))
    seq = path.read_bytes().count(b"\n")
    turn = (last.turn or 0) + 1 if last is not None and last.turn is not None else 1
    kinds = (("turn/start", {}), (NOTE_TYPE, {"text": note}), ("turn/end", {"status": "completed"}))
    with path.open("ab") as handle:
        for offset, (kind, data) in enumerate(kinds):
            event = Event(seq + offset, kind, "2026-01-01T00:00:00.000Z", data, turn)
            handle.write(orjson.dumps(event.to_json(), option=orjson.OPT_APPEND_NEWLINE))


def far_back_session(store: SessionStore, megabytes: int = 3) -> Path:
    """A note in the first turn, then `megabytes` of turns without one."""
    with store.create() as log:
        append_turn(log, note="the plan")
        while log.path.stat().st_size < megabytes * 1024 * 1024:
            append_turn(log, filler=50)
        return log.path


def test_a_far_back_event_is_found_without_reading_back_to_it(
    log_store: SessionStore, log_bytes_read: dict[str, int]
) -> None:
    """The note 3 MB back is found reading a few kB of the log, from a private index file."""
    path = far_back_session(log_store)
    log_bytes_read.clear()
    found = find_latest(path, NOTES)
    assert log_bytes_read.get(str(path), 0) < 20_000
    assert found is not None and found.data == {"text": "the plan"}
    assert found == forward_latest(path, NOTES)
    assert stat.S_IMODE(index_file(path).stat().st_mode) == 0o600


def test_a_writer_that_reopens_the_session_goes_on_with_its_index(
    log_store: SessionStore, log_bytes_read: dict[str, int]
) -> None:
    """Resuming a session keeps the far-back answer cheap: the index still starts at 0."""
    path = far_back_session(log_store, megabytes=2)
    with FileLog.open(path, log_store.registry) as log:
        append_turn(log, filler=3)
    assert orjson.loads(index_file(path).read_bytes())["start"] == 0
    log_bytes_read.clear()
    found = find_latest(path, NOTES)
    assert log_bytes_read[str(path)] < 20_000
    assert found == forward_latest(path, NOTES)


def test_a_writer_after_a_crash_goes_on_from_the_last_save(
    log_store: SessionStore, log_bytes_read: dict[str, int]
) -> None:
    """A writer killed after a save left up to a MiB unindexed: the next writer reads only
    that, so the far-back answer stays cheap for good, not only until the next query."""
    log = log_store.create()
    append_turn(log, note="the plan")
    while not index_file(log.path).exists():
        append_turn(log, filler=50)
    at_the_crash = index_file(log.path).read_bytes()  # the last save before the kill
    append_turn(log, filler=50)
    log.close()
    index_file(log.path).write_bytes(at_the_crash)
    with FileLog.open(log.path, log_store.registry) as reopened:
        append_turn(reopened, filler=1)
    assert orjson.loads(index_file(log.path).read_bytes())["start"] == 0
    log_bytes_read.clear()
    found = find_latest(log.path, NOTES)
    assert log_bytes_read[str(log.path)] < 20_000
    assert found == forward_latest(log.path, NOTES)
    assert find_latest(log.path, ("message/user",)) == forward_latest(log.path, ("message/user",))


def test_the_index_is_saved_every_mib_not_only_at_close(
    log_store: SessionStore, log_bytes_read: dict[str, int]
) -> None:
    """A writer still running (or killed) has saved an index at most a MiB behind its log."""
    log = log_store.create()
    try:
        append_turn(log, note="early")
        while log.path.stat().st_size < 3 * SAVE_EVERY:
            append_turn(log, filler=50)
        covered = orjson.loads(index_file(log.path).read_bytes())["size"]
        assert log.path.stat().st_size - covered <= SAVE_EVERY
        log_bytes_read.clear()
        found = find_latest(log.path, NOTES)
        assert found is not None and found.data == {"text": "early"}
        assert log_bytes_read.get(str(log.path), 0) < SAVE_EVERY + 50_000
    finally:
        log.close()


def test_lines_another_writer_appended_after_the_index_are_read(log_store: SessionStore) -> None:
    """An event past what the index covers (a writer without one) is the answer it is."""
    path = far_back_session(log_store, megabytes=1)
    hand_turn(path, "newer, by another writer")
    found = find_latest(path, NOTES)
    assert found is not None and found.data == {"text": "newer, by another writer"}
    assert find_latest(path, ("turn/start",)) == forward_latest(path, ("turn/start",))


def _garble(path: Path) -> None:
    index_file(path).write_bytes(b'{"start": 0, "size": 12')


def _foreign(path: Path) -> None:
    index_file(path).write_bytes(
        json.dumps({"start": 0, "size": 3, "seq": 0, "latest": 7}).encode()
    )


def _line_of_length(kind: str, length: int) -> bytes:
    """An envelope line of `kind` padded to exactly `length` bytes, its newline included."""
    line = orjson.dumps(Event(4, kind, "2026-01-01T00:00:00.000Z", {"text": ""}, 1).to_json())
    pad = length - len(line) - 1
    return line.replace(b'"text":""', b'"text":"' + b"p" * pad + b'"') + b"\n"


def _note_inserted(path: Path) -> None:
    """A newer note edited into the middle, as long as the last line: every line after it
    moves, and a whole line still ends where the index ends."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(len(lines) // 2, _line_of_length(NOTE_TYPE, len(lines[-1])))
    path.write_bytes(b"".join(lines))


def _note_replaced(path: Path) -> None:
    """The note's line edited into a user message of the same length: nothing moves."""
    lines = path.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b"the plan" in line)
    lines[at] = _line_of_length("message/user", len(lines[at]))
    path.write_bytes(b"".join(lines))


def _note_across_the_end(path: Path) -> None:
    """The last line edited into a longer note: the newest note now runs across the byte where
    the index ends, so neither the index nor the bytes after it hold it whole."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = _line_of_length(NOTE_TYPE, len(lines[-1]) + 200)
    path.write_bytes(b"".join(lines))


def _truncated(path: Path) -> None:
    """The log cut back to its first half (whole lines): shorter than what was indexed."""
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])


def _other_sessions_index(path: Path) -> None:
    """The index of a longer session (same shape, another id) copied over this one's."""
    index = orjson.loads(index_file(path).read_bytes())
    index["latest"][NOTE_TYPE] = [index["seq"] - 1, index["size"] // 2 + 1]
    index_file(path).write_bytes(orjson.dumps(index))


@pytest.mark.parametrize(
    "damage",
    [
        _garble,
        _foreign,
        _note_inserted,
        _note_replaced,
        _note_across_the_end,
        _truncated,
        _other_sessions_index,
    ],
)
def test_an_index_that_does_not_describe_the_log_is_not_trusted(
    log_store: SessionStore, damage: object
) -> None:
    """A torn, foreign or stale index, or a log edited by hand, gives the forward read's answer."""
    path = far_back_session(log_store, megabytes=1)
    damage(path)  # type: ignore[operator]
    for types in (NOTES, ("turn/start",), ("message/user", NOTE_TYPE)):
        assert find_latest(path, types) == forward_latest(path, types)


def test_a_log_without_an_index_is_indexed_from_where_a_writer_opens_it(
    log_store: SessionStore, log_bytes_read: dict[str, int]
) -> None:
    """An unindexed log still answers what is older than its writer; what is newer is cheap."""
    path = far_back_session(log_store, megabytes=1)
    index_file(path).unlink()
    size_at_open = path.stat().st_size
    with FileLog.open(path, log_store.registry) as log:
        append_turn(log)
    assert orjson.loads(index_file(path).read_bytes())["start"] == size_at_open
    assert find_latest(path, NOTES) == forward_latest(path, NOTES)
    log_bytes_read.clear()
    found = find_latest(path, ("turn/start",))
    assert log_bytes_read[str(path)] < 20_000
    assert found == forward_latest(path, ("turn/start",))


def test_a_cache_that_cannot_be_written_changes_nothing(
    log_store: SessionStore, harness_home: Path
) -> None:
    """`cache` a file, not a directory: sessions are written and answered all the same."""
    harness_home.mkdir(parents=True, exist_ok=True)
    (harness_home / "cache").write_text("not a directory")
    path = far_back_session(log_store, megabytes=1)
    assert not index_file(path).parent.exists() or not index_file(path).exists()
    assert find_latest(path, NOTES) == forward_latest(path, NOTES)


# -- any mix of writers, hand edits and damage -----------------------------------------------


class Note(BaseModel):
    text: str


steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("hand"), st.just(0), st.just(True)),
        st.tuples(st.sampled_from(["drop", "garble", "crash"]), st.just(0), st.just(False)),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(plan=steps)
def test_queries_agree_with_a_forward_read_after_any_history(
    tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[str, int, bool]]
) -> None:
    """Writers that index, writers that do not, a lost or torn index, a writer that crashed
    after an earlier save (its index rewound): the same answers."""
    log_registry = EventTypeRegistry()
    log_registry.declare(EventType(NOTE_TYPE, Note, surface=False))
    store = SessionStore(tmp_path_factory.mktemp("home"), log_registry)
    with store.create() as log:
        path = log.path
    saves = [index_file(path).read_bytes()]
    for number, (action, turns, note) in enumerate(plan):
        if action == "write":
            with FileLog.open(path, log_registry) as log:
                for turn in range(turns):
                    append_turn(log, note=f"note {number}.{turn}" if note else None)
            if index_file(path).exists():
                saves.append(index_file(path).read_bytes())
        elif action == "hand":
            hand_turn(path, f"note {number} by hand")
        elif action == "crash":
            index_file(path).write_bytes(saves[number % len(saves)])
        elif index_file(path).exists():
            if action == "drop":
                os.unlink(index_file(path))
            else:
                _garble(path)
        for types in (NOTES, ("turn/start",), ("turn/end", NOTE_TYPE)):
            assert find_latest(path, types) == forward_latest(path, types)
