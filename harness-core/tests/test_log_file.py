"""Writing a session file: append, commit, committed events, refused and failed writes."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from harness_core.log import (
    Event,
    EventTypeRegistry,
    FileLog,
    NotASession,
    ReadOnlyLog,
    SessionLog,
    SessionStart,
    SessionStore,
    UserMessage,
)

WriteTurn = Callable[[SessionLog, str], int]


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each real fdatasync/fsync call as "data", "file" or "dir" (the call still runs)."""
    calls: list[str] = []
    real_datasync, real_fsync = os.fdatasync, os.fsync

    def datasync(fd: int) -> None:
        calls.append("data")
        real_datasync(fd)

    def fsync(fd: int) -> None:
        calls.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fdatasync", datasync)
    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_create_syncs_the_directory_and_commits_the_header(
    log_store: SessionStore, syncs: list[str]
) -> None:
    """A new session's directory entry and its session/start are durable before create returns."""
    log = log_store.create(system_prompt="sys")
    assert "dir" in syncs and syncs[-1] == "data"
    assert log.committed_seq == 0 and log.events[0].type == "session/start"
    log.close()


def test_append_writes_at_once_but_commits_only_on_commit(
    log_store: SessionStore, syncs: list[str]
) -> None:
    """An appended event is in the file (a reader sees it) but not committed until `commit`."""
    log = log_store.create()
    syncs.clear()
    log.append("turn/start", {}, turn=1)
    log.append("message/user", UserMessage(text="hi"), turn=1)
    assert syncs == []
    assert log.committed_seq == 0
    reader = FileLog.open(log.path, log_store.registry, writable=False)
    assert [e.type for e in reader.events] == ["session/start", "turn/start", "message/user"]
    log.commit()
    assert syncs == ["data"]
    assert log.committed_seq == 2
    log.close()


def test_commit_with_nothing_new_does_not_sync(log_store: SessionStore, syncs: list[str]) -> None:
    """A second commit without appends is free: no sync, same committed seq."""
    log = log_store.create()
    syncs.clear()
    log.commit()
    log.commit()
    assert syncs == []
    assert log.committed_seq == 0
    log.close()


def test_close_commits_what_was_appended(log_store: SessionStore, syncs: list[str]) -> None:
    """Closing a writer commits pending events and releases the file."""
    log = log_store.create()
    log.append("turn/start", {}, turn=1)
    syncs.clear()
    log.close()
    assert syncs == ["data"]
    assert log.committed_seq == 1
    assert not log.writable
    log.close()  # closing twice is harmless


def test_loop_style_turn_commits_at_step_boundaries(
    log_store: SessionStore, log_turn: WriteTurn, syncs: list[str]
) -> None:
    """A turn written the loop's way syncs once per step boundary and ends fully committed."""
    log = log_store.create()
    syncs.clear()
    log_turn(log, "hello")
    assert syncs == ["data"] * 5
    assert log.committed_seq == log.events[-1].seq == 8
    log.close()


def test_seq_starts_at_zero_and_increases_by_one(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Appended events are numbered 0, 1, 2, ... in the file and in memory."""
    with log_store.create() as log:
        log_turn(log, "one")
        log_turn(log, "two")
        path = log.path
    on_disk = [json.loads(line)["seq"] for line in path.read_bytes().split(b"\n")[:-1]]
    assert on_disk == list(range(17))
    assert [e.seq for e in log.events] == on_disk


def test_listeners_see_each_event_after_it_is_written(log_store: SessionStore) -> None:
    """Listeners get every appended event, in order, once it is already in the file."""
    seen: list[tuple[int, int]] = []
    log = log_store.create()
    log.listeners.append(lambda event: seen.append((event.seq, log.path.stat().st_size)))
    log.append("turn/start", {}, turn=1)
    log.append("message/user", UserMessage(text="hi"), turn=1)
    assert [seq for seq, _ in seen] == [1, 2]
    assert seen[1][1] == log.path.stat().st_size
    log.close()


def test_a_listener_changing_its_event_changes_nothing_the_log_holds(
    log_store: SessionStore,
) -> None:
    """An observer that edits its event alters neither the log's events, its folds, nor others'."""

    def vandal(event: Event) -> None:
        event.data["text"] = "changed by an observer"

    seen: list[Event] = []
    with log_store.create() as log:
        log.listeners += [vandal, seen.append]
        log.append("turn/start", {}, turn=1)
        log.append("message/user", UserMessage(text="the prompt"), turn=1)
        assert log.events[-1].data["text"] == "the prompt"
        assert log.projection.messages == [{"role": "user", "content": "the prompt"}]
    assert seen[-1].data == {"text": "the prompt"}  # the next observer got its own copy


def test_read_only_log_refuses_appends(log_store: SessionStore) -> None:
    """A reader cannot append; the error names the session."""
    with log_store.create() as log:
        pass
    reader = log_store.open(log.session_id, writable=False)
    assert not reader.writable
    with pytest.raises(ReadOnlyLog, match=log.session_id):
        reader.append("turn/start", {}, turn=1)


def test_create_never_replaces_an_existing_file(
    tmp_path: Path, log_registry: EventTypeRegistry
) -> None:
    """Creating over an existing path fails and leaves the existing bytes alone."""
    path = tmp_path / "taken.jsonl"
    path.write_bytes(b"precious\n")
    start = SessionStart(id="taken", created="2026-01-01T00:00:00.000Z", harness_version="0")
    with pytest.raises(FileExistsError):
        FileLog.create(path, log_registry, start)
    assert path.read_bytes() == b"precious\n"


def test_latest_finds_the_newest_event_of_a_type(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """`latest` returns the newest matching event; a bare string is one type name."""
    with log_store.create() as log:
        log_turn(log, "one")
        log_turn(log, "two")
        newest = log.latest(("turn/start", "nothing/else"))
        assert newest is not None and (newest.seq, newest.turn) == (9, 2)
        by_name = log.latest("turn/start")
        assert by_name is not None and by_name.seq == 9
        assert log.latest(("nothing/else",)) is None


_FULL_DISK_WRITER = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from harness_core.log import EventTypeRegistry, LogWriteError, SessionStore, UserMessage

    log = SessionStore(Path(sys.argv[1]), EventTypeRegistry()).create()
    log.append("turn/start", {}, turn=1)
    log.commit()
    good = log.path.stat().st_size
    # The file may grow by 100 more bytes: the next append's write comes up short.
    resource.setrlimit(resource.RLIMIT_FSIZE, (good + 100, resource.RLIM_INFINITY))
    error = None
    try:
        log.append("message/user", UserMessage(text="x" * 1000), turn=1)
    except LogWriteError as exc:
        error = str(exc)
    after_failure = log.path.stat().st_size
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    event = log.append("message/user", UserMessage(text="small"), turn=1)
    log.close()
    print(json.dumps({"error": error, "good": good, "after_failure": after_failure,
                      "next_seq": event.seq, "path": str(log.path)}))
    """
)


def test_failed_write_leaves_no_partial_line(
    harness_home: Path, log_registry: EventTypeRegistry
) -> None:
    """A write the file system cuts short (file size limit) is undone; the next append works."""
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_WRITER, str(harness_home)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(done.stdout)
    assert report["error"] and "could not append" in report["error"]
    assert report["after_failure"] == report["good"], "the partial line was cut off"
    assert report["next_seq"] == 2, "the failed event took no seq"
    reopened = FileLog.open(Path(report["path"]), log_registry, writable=False)
    assert reopened.problems == []
    assert [(e.seq, e.data.get("text")) for e in reopened.events[1:]] == [(1, None), (2, "small")]


def test_committed_events_survive_a_reopen(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """Everything committed is there, with the same envelopes, after closing and reopening."""
    with log_store.create() as log:
        log_turn(log, "one")
        written: list[Event] = list(log.events)
    reopened = log_store.open(log.session_id)
    try:
        assert reopened.events == written
        assert reopened.committed_seq == written[-1].seq
    finally:
        reopened.close()


def _special_files(tmp_path: Path) -> dict[str, Path]:
    """Things a `sessions/X.jsonl` name can be that are not a session file of its own."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b'{"seq":0,"type":"session/start","ts":"t","data":{}}\npartial')
    paths = {
        "symlink": tmp_path / "link.jsonl",
        "fifo": tmp_path / "fifo.jsonl",
        "directory": tmp_path / "dir.jsonl",
        "device": tmp_path / "zero.jsonl",
    }
    paths["symlink"].symlink_to(victim)
    os.mkfifo(paths["fifo"])
    paths["directory"].mkdir()
    paths["device"].symlink_to("/dev/zero")
    return paths


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "device"])
@pytest.mark.parametrize("writable", [True, False])
def test_only_a_regular_file_is_opened_never_through_a_symlink(
    tmp_path: Path, log_registry: EventTypeRegistry, kind: str, writable: bool
) -> None:
    """A symlink, FIFO, directory or device is refused with one line; a link's target is untouched."""
    path = _special_files(tmp_path)[kind]
    victim = tmp_path / "victim.txt"
    before = victim.read_bytes()
    with pytest.raises(NotASession, match="not a regular file") as caught:
        FileLog.open(path, log_registry, writable=writable)
    assert "\n" not in str(caught.value)
    assert victim.read_bytes() == before
    assert [p.name for p in tmp_path.glob("*.torn-*")] == []


def test_session_and_torn_tail_files_are_private(
    log_store: SessionStore, log_registry: EventTypeRegistry
) -> None:
    """Session files and the torn tails moved aside are readable by their owner only (0600)."""
    old = os.umask(0o022)
    try:
        with log_store.create() as log:
            pass
        with log.path.open("ab") as handle:
            handle.write(b'{"seq":1,"ty')
        FileLog.open(log.path, log_registry).close()
    finally:
        os.umask(old)
    (aside,) = log.path.parent.glob("*.torn-*")
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600


def test_a_create_that_cannot_write_its_header_leaves_no_file(
    tmp_path: Path, log_registry: EventTypeRegistry
) -> None:
    """A session/start the log cannot store (a lone surrogate) removes the new file again."""
    path = tmp_path / "new.jsonl"
    start = SessionStart(id="new", created="c", harness_version="0", cwd="/tmp/\udcff")
    with pytest.raises(ValueError, match="cannot be written as JSON"):
        FileLog.create(path, log_registry, start)
    assert not path.exists()


@pytest.mark.parametrize("name", ["missing.jsonl", "x" * 300 + ".jsonl"])
@pytest.mark.parametrize("writable", [True, False])
def test_other_os_errors_on_open_are_reported_as_they_are(
    tmp_path: Path, log_registry: EventTypeRegistry, name: str, writable: bool
) -> None:
    """A missing file or a name too long is the OS's own error, not "not a regular file"."""
    with pytest.raises(OSError, match=r"No such file|File name too long") as caught:
        FileLog.open(tmp_path / name, log_registry, writable=writable)
    assert caught.value.errno in (errno.ENOENT, errno.ENAMETOOLONG)
