"""The session store: create, open and list sessions under HARNESS_HOME."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from harness_core.log import (
    EventTypeRegistry,
    SessionLog,
    SessionNotFound,
    SessionStore,
    default_home,
)

WriteTurn = Callable[[SessionLog, str], int]


def test_on_append_sees_every_event_its_sessions_get(
    harness_home: Path, log_registry: EventTypeRegistry
) -> None:
    """The store's observer gets session/start and every later append; readers add none."""
    seen: list[tuple[str, int, str]] = []
    store = SessionStore(
        harness_home,
        log_registry,
        on_append=lambda s, e: seen.append((s.session_id, e.seq, e.type)),
    )
    with store.create() as log:
        log.append("turn/start", {}, turn=1)
    store.open(log.session_id, writable=False).close()
    with store.open(log.session_id) as again:
        again.append("turn/end", {"status": "completed"}, turn=1)
    session = log.session_id
    assert seen == [
        (session, 0, "session/start"),
        (session, 1, "turn/start"),
        (session, 2, "turn/end"),
    ]


def test_create_makes_a_locked_session_file_with_its_header(
    log_store: SessionStore, harness_home: Path
) -> None:
    """A new session lives at HARNESS_HOME/sessions/<id>.jsonl with a full session/start."""
    with log_store.create(
        system_prompt="sys", cwd="/work", parent_session="p", parent_call_id="c"
    ) as log:
        assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", log.session_id)
        assert log.path == harness_home / "sessions" / f"{log.session_id}.jsonl"
        assert log.writable
        header = log.events[0]
        assert header.type == "session/start" and header.seq == 0 and header.turn is None
        assert header.data["id"] == log.session_id
        assert header.data["system_prompt"] == "sys"
        assert header.data["cwd"] == "/work"
        assert (header.data["parent_session"], header.data["parent_call_id"]) == ("p", "c")
        assert header.data["harness_version"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header.data["created"])


def test_open_by_id_for_writing_and_reading(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """`open` replays a session by id; writable by default, read-only on request."""
    with log_store.create() as log:
        log_turn(log, "hi")
    with log_store.open(log.session_id) as writer:
        assert writer.writable and len(writer.events) == 9
    reader = log_store.open(log.session_id, writable=False)
    assert not reader.writable and reader.events == writer.events


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "a/b", "", ".hidden", "x" * 200])
def test_open_rejects_what_is_not_an_id(log_store: SessionStore, session_id: str) -> None:
    """Ids that could escape the sessions directory are refused before touching the disk."""
    with pytest.raises(SessionNotFound, match="is not a session id"):
        log_store.open(session_id)


def test_open_missing_session_names_the_directory(log_store: SessionStore) -> None:
    """A well-formed id with no file says where it looked."""
    with pytest.raises(SessionNotFound, match=re.escape(str(log_store.directory))):
        log_store.open("20260101-000000-abcdef")


def test_default_home_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """HARNESS_HOME wins; without it, a per-user data directory named harness."""
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path / "elsewhere"))
    assert default_home() == tmp_path / "elsewhere"
    monkeypatch.delenv("HARNESS_HOME")
    assert default_home().name == "harness"


def test_list_is_empty_without_sessions(log_store: SessionStore) -> None:
    """A home with no sessions directory lists nothing."""
    assert log_store.list() == []


def test_list_orders_by_latest_activity(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """The session with the most recent event comes first, whatever its creation time."""
    ids = []
    for _ in range(3):
        with log_store.create() as log:
            ids.append(log.session_id)
        time.sleep(0.01)
    with log_store.open(ids[0]) as oldest:
        log_turn(oldest, "back again")
    assert [s.id for s in log_store.list()] == [ids[0], ids[2], ids[1]]


def test_list_summarizes_each_session(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """A summary has the id, created and updated times, event count, title and parent."""
    with log_store.create(parent_session="parent-1") as log:
        log_turn(log, "Fix the flaky test")
        log_turn(log, "And the other one")
    (summary,) = log_store.list()
    assert summary.id == log.session_id
    assert summary.created == log.events[0].data["created"]
    assert summary.updated == log.events[-1].ts
    assert summary.events == 17
    assert summary.title == "Fix the flaky test"
    assert summary.parent_session == "parent-1"


def test_list_marks_files_that_are_not_sessions_unreadable(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Empty files, garbage and other JSON Lines are listed last, as unreadable with a reason."""
    with log_store.create() as log:
        log_turn(log, "real")
    directory = log_store.directory
    (directory / "empty.jsonl").touch()
    (directory / "garbage.jsonl").write_bytes(b"\x00\x01 not json\n")
    (directory / "other.jsonl").write_bytes(b'{"seq":0,"type":"turn/start","ts":"t","data":{}}\n')
    (directory / "notes.txt").write_text("hello")
    with log.path.open("ab") as handle:
        handle.write(b'{"seq":9,"ty')
    with log_store.open(log.session_id):
        pass  # moves the torn tail aside next to the session: not listed
    assert list(directory.glob("*.torn-*"))
    listed = {s.id: s.problem for s in log_store.list()}
    assert next(iter(listed)) == log.session_id and listed[log.session_id] is None
    assert listed["empty"] == "an empty file"
    assert listed["garbage"] is not None and "not an event" in listed["garbage"]
    assert listed["other"] == "not a session: it starts with 'turn/start'"
    assert len(listed) == 4


@pytest.mark.timeout(30)
def test_list_never_hangs_on_a_fifo_a_device_or_a_huge_first_line(
    log_store: SessionStore,
) -> None:
    """A FIFO, a link to /dev/zero and a 20 MB first line are marked unreadable, read briefly."""
    with log_store.create() as log:
        pass
    directory = log_store.directory
    os.mkfifo(directory / "fifo.jsonl")
    (directory / "zero.jsonl").symlink_to("/dev/zero")
    (directory / "huge.jsonl").write_bytes(b"x" * 20_000_000 + b"\n")
    listed = {s.id: s.problem for s in log_store.list()}
    assert listed == {
        log.session_id: None,
        "fifo": "a FIFO, not a regular file",
        "zero": "a symbolic link, not a regular file",
        "huge": "not a session: no line break in its first 4194304 bytes",
    }


def test_sessions_and_home_directories_are_private(
    tmp_path: Path, log_registry: EventTypeRegistry
) -> None:
    """HARNESS_HOME and sessions/ are created 0700 whatever the umask allows."""
    old = os.umask(0o022)
    try:
        store = SessionStore(tmp_path / "home", log_registry)
        store.create().close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.home.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700


def test_list_shows_a_session_with_a_long_system_prompt(log_store: SessionStore) -> None:
    """A session/start line longer than the first block read is still recognized."""
    prompt = "You are a careful engineer. " * 2000  # ~56 kB
    with log_store.create(system_prompt=prompt) as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "title"}, turn=1)
    (summary,) = log_store.list()
    assert summary.id == log.session_id
    assert summary.events == 3


def _long_session(store: SessionStore, write_turn: WriteTurn, turns: int) -> SessionLog:
    log = store.create(system_prompt="sys")
    with log:
        for number in range(turns):
            log.append("turn/start", {}, turn=number + 1)
            log.append("message/user", {"text": f"prompt {number} " + "x" * 2000}, turn=number + 1)
            log.append("turn/end", {"status": "completed"}, turn=number + 1)
        write_turn(log, "last")
    return log


def test_list_reads_the_head_and_tail_not_the_whole_file(
    log_store: SessionStore, log_turn: WriteTurn, log_bytes_read: dict[str, int]
) -> None:
    """Listing a 2 MB session reads a small, fixed amount of it."""
    log = _long_session(log_store, log_turn, turns=1000)
    size = log.path.stat().st_size
    assert size > 2_000_000
    (summary,) = log_store.list()
    assert summary.events == log.next_seq
    assert log_bytes_read[str(log.path)] < 200_000


def test_list_works_when_the_middle_is_garbage(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A session whose middle megabyte is garbage still lists with its true last event."""
    log = _long_session(log_store, log_turn, turns=10)
    lines = log.path.read_bytes().split(b"\n")[:-1]
    garbage = [b"\xff\xfe garbage that is not JSON " * 40] * 1000
    damaged = [*lines[:5], *garbage, *lines[5:]]
    log.path.write_bytes(b"\n".join(damaged) + b"\n")
    (summary,) = log_store.list()
    assert summary.events == len(lines)
    assert summary.updated == log.events[-1].ts
    assert summary.title is not None and summary.title.startswith("prompt 0")


def test_list_survives_a_session_deleted_while_listing(
    log_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that vanishes between the directory scan and its read is skipped."""
    with log_store.create() as kept:
        pass
    with log_store.create() as doomed:
        pass
    real_scandir = os.scandir

    def scandir_then_delete(
        path: Path,
    ) -> contextlib.AbstractContextManager[list[os.DirEntry[str]]]:
        with real_scandir(path) as scan:
            found = list(scan)
        doomed.path.unlink()
        return contextlib.nullcontext(found)

    monkeypatch.setattr(os, "scandir", scandir_then_delete)
    assert [s.id for s in log_store.list()] == [kept.session_id]


# -- the listing cache: $HARNESS_HOME/cache/sessions.json ------------------------------------


def _cache(store: SessionStore) -> Path:
    return store.home / "cache" / "sessions.json"


def test_a_second_listing_reads_no_session_file(
    log_store: SessionStore, log_turn: WriteTurn, log_bytes_read: dict[str, int]
) -> None:
    """Unchanged sessions are listed from the cache, exactly as from their files."""
    paths = []
    for prompt in ("first", "second"):
        with log_store.create(parent_session="p", cwd="/work") as log:
            log_turn(log, prompt)
        paths.append(str(log.path))
    cold = log_store.list()
    assert all(log_bytes_read[path] > 0 for path in paths)
    log_bytes_read.clear()
    assert log_store.list() == cold
    assert not any(path in log_bytes_read for path in paths)
    assert sorted(os.listdir(log_store.directory)) == sorted(Path(p).name for p in paths)


def test_list_shows_events_appended_after_a_listing(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A session written to since the last listing shows its new event count and time."""
    with log_store.create() as log:
        log_turn(log, "first")
    (before,) = log_store.list()
    with log_store.open(log.session_id) as writer:
        time.sleep(0.002)  # a later millisecond for the new events' timestamps
        log_turn(writer, "again")
        last = writer.events[-1]
    (after,) = log_store.list()
    assert after.events == last.seq + 1 == before.events + 8
    assert after.updated == last.ts > before.updated


def test_list_shows_new_sessions_and_drops_deleted_ones(log_store: SessionStore) -> None:
    """A session created after a listing appears in the next one; a deleted one disappears."""
    with log_store.create() as first:
        pass
    assert [s.id for s in log_store.list()] == [first.session_id]
    with log_store.create() as second:
        pass
    assert {s.id for s in log_store.list()} == {first.session_id, second.session_id}
    first.path.unlink()
    assert [s.id for s in log_store.list()] == [second.session_id]
    assert first.session_id not in _cache(log_store).read_text()


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{not json",
        b'{"format": [1, "0.0.0"], "sessions": {}}',
        b"[]",
        b"\xff" * 100,
        b"[" * 100_000,
    ],
)
def test_a_damaged_cache_is_ignored_and_replaced(
    log_store: SessionStore, log_turn: WriteTurn, damage: bytes
) -> None:
    """A torn, foreign or garbage cache file changes nothing listed, and is rewritten."""
    with log_store.create() as log:
        log_turn(log, "hello")
    expected = log_store.list()
    _cache(log_store).write_bytes(damage)
    assert log_store.list() == expected
    assert log.session_id in _cache(log_store).read_text()


def test_a_cache_row_that_lies_is_not_shown(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """A row whose fields are not what harness writes is read from the file instead."""
    with log_store.create() as log:
        log_turn(log, "hello")
    expected = log_store.list()
    cache = _cache(log_store)
    content = json.loads(cache.read_bytes())
    row = content["sessions"][log.path.name]
    row[6] = "many"  # the event count
    row[7] = 42  # the title
    cache.write_text(json.dumps(content))
    assert log_store.list() == expected


def test_list_works_when_the_cache_cannot_be_written(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """`cache` being a file costs the listing nothing but speed."""
    with log_store.create() as log:
        log_turn(log, "hello")
    shutil.rmtree(log_store.home / "cache")  # the writer's tail index
    (log_store.home / "cache").write_text("not a directory")
    for _ in range(2):
        (summary,) = log_store.list()
        assert (summary.id, summary.events, summary.title) == (log.session_id, 9, "hello")
    assert (log_store.home / "cache").read_text() == "not a directory"


def test_files_with_a_problem_are_checked_at_every_listing(log_store: SessionStore) -> None:
    """An unreadable file stays reported, and is listed as a session once it is one."""
    with log_store.create() as log:
        pass
    garbage = log_store.directory / "later.jsonl"
    garbage.write_bytes(b"garbage\n")
    for _ in range(2):
        listed = {s.id: s.problem for s in log_store.list()}
        assert listed["later"] is not None and "not an event" in listed["later"]
    garbage.write_bytes(log.path.read_bytes().replace(log.session_id.encode(), b"later"))
    assert {s.id: s.problem for s in log_store.list()} == {log.session_id: None, "later": None}


def test_the_cache_is_private(log_store: SessionStore) -> None:
    """cache/ is 0700 and sessions.json 0600 whatever the umask allows: it names sessions."""
    old = os.umask(0o022)
    try:
        with log_store.create():
            pass  # its writer makes cache/tail/ for its tail index
        log_store.list()
    finally:
        os.umask(old)
    assert stat.S_IMODE(_cache(log_store).stat().st_mode) == 0o600
    assert stat.S_IMODE(_cache(log_store).parent.stat().st_mode) == 0o700


def test_store_uses_its_registry(log_store: SessionStore, log_registry: EventTypeRegistry) -> None:
    """Logs opened through the store know the store's plugin types."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        log.append("test/note", {"text": "kept"}, turn=1)
    assert log_store.open(log.session_id, writable=False).problems == []
    assert log_store.registry is log_registry
