"""One writer per session (an OS lock naming its holder); readers need no lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness_core.log import FileLog, SessionLocked, SessionLog, SessionStore

WriteTurn = Callable[[SessionLog, str], int]

_HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness_core.log import EventTypeRegistry, FileLog

    log = FileLog.open(Path(sys.argv[1]), EventTypeRegistry())
    log.append("turn/start", {}, turn=2)
    log.commit()
    print("holding", flush=True)
    sys.stdin.readline()  # hold the lock until told to stop (or killed)
    log.close()
    """
)

_CONTENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness_core.log import EventTypeRegistry, FileLog, SessionLocked

    try:
        FileLog.open(Path(sys.argv[1]), EventTypeRegistry())
    except SessionLocked as exc:
        print(exc.holder, exc, sep="|")
        sys.exit(3)
    """
)


@pytest.fixture
def session_path(log_store: SessionStore, log_turn: WriteTurn) -> Path:
    """A closed session with one complete turn."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        return log.path


@pytest.fixture
def holder(session_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the writer lock on `session_path` until the test ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(session_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "holding\n"
    with process:  # closes the pipes
        yield process
        if process.poll() is None:
            process.kill()


def _open_without_blocking(path: Path, store: SessionStore) -> BaseException | SessionLog:
    """Try to open for writing in a thread; a call that blocks fails the test instead of hanging."""
    outcome: list[BaseException | SessionLog] = []

    def attempt() -> None:
        try:
            outcome.append(FileLog.open(path, store.registry))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert outcome, "opening a locked session blocked instead of failing at once"
    return outcome[0]


def test_second_writer_in_the_same_process_is_rejected(log_store: SessionStore) -> None:
    """A second writable open fails at once, naming this process as the holder."""
    with log_store.create() as log:
        failure = _open_without_blocking(log.path, log_store)
        assert isinstance(failure, SessionLocked)
        assert failure.holder == os.getpid()
        assert f"by process {os.getpid()}" in str(failure)
        assert log.session_id in str(failure)


def test_writer_in_another_process_is_named(
    session_path: Path, log_store: SessionStore, holder: subprocess.Popen[str]
) -> None:
    """A writer in another process blocks ours at once, and the error carries its pid."""
    failure = _open_without_blocking(session_path, log_store)
    assert isinstance(failure, SessionLocked)
    assert failure.holder == holder.pid
    assert f"process {holder.pid}" in str(failure)
    assert "readers such as `harness show` need no lock" in str(failure)


def test_other_process_is_rejected_while_we_write(log_store: SessionStore) -> None:
    """Our writer keeps a separate process out, and that process learns our pid."""
    with log_store.create() as log:
        done = subprocess.run(
            [sys.executable, "-c", _CONTENDER, str(log.path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 3, done.stderr
    holder_pid, message = done.stdout.strip().split("|", 1)
    assert holder_pid == str(os.getpid())
    assert f"process {os.getpid()}" in message


def test_lock_is_released_when_the_holder_is_killed(
    session_path: Path, log_store: SessionStore, holder: subprocess.Popen[str]
) -> None:
    """SIGKILL leaves no stale lock: the next writer opens the session."""
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    with FileLog.open(session_path, log_store.registry) as log:
        assert log.events[-1].type == "turn/start"  # what the holder committed is there


def test_lock_is_released_on_close(log_store: SessionStore) -> None:
    """After close, another writer may open the session."""
    log = log_store.create()
    log.close()
    with log_store.open(log.session_id) as again:
        assert again.writable


def test_reader_works_beside_a_writer_in_another_process(
    session_path: Path, log_store: SessionStore, holder: subprocess.Popen[str]
) -> None:
    """A read-only open needs no lock and sees what the other process wrote."""
    reader = FileLog.open(session_path, log_store.registry, writable=False)
    assert reader.events[-1].type == "turn/start"
    assert reader.events[-1].turn == 2
    assert reader.problems == []


def test_reader_beside_a_writer_follows_with_refresh(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """While a writer appends, a reader opened earlier catches up with refresh."""
    with log_store.create() as writer:
        reader = log_store.open(writer.session_id, writable=False)
        for number in range(3):
            log_turn(writer, f"prompt {number}")
            reader.refresh()
            assert reader.events == writer.events
        reader_again = log_store.open(writer.session_id, writable=False)
        assert reader_again.projection.request_messages() == writer.projection.request_messages()


_DECOYS = textwrap.dedent(
    """
    import fcntl, os, sys

    fds = [os.open(path, os.O_RDWR) for path in sys.argv[1:]]
    for fd in fds[:-1]:
        fcntl.flock(fd, fcntl.LOCK_EX)  # other files' flocks
    fcntl.lockf(fds[-1], fcntl.LOCK_EX)  # a POSIX lock on the session file itself
    print("holding", flush=True)
    sys.stdin.readline()
    """
)


def _hold(script: str, *paths: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", script, *map(str, paths)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "holding\n"
    return process


def test_the_holder_named_is_the_flock_holder_of_this_very_file(
    tmp_path: Path, log_store: SessionStore
) -> None:
    """Newer locks on files with lower and higher inodes, and a POSIX lock: never named."""
    decoys = [tmp_path / "decoy-a", tmp_path / "decoy-b"]
    for decoy in decoys:
        decoy.write_bytes(b"")
    with log_store.create() as log:
        pass
    decoys += [tmp_path / "decoy-c", tmp_path / "decoy-d"]
    for decoy in decoys[2:]:
        decoy.write_bytes(b"")
    with _hold(_HOLDER, log.path) as holder, _hold(_DECOYS, *decoys, log.path) as other:
        try:
            failure = _open_without_blocking(log.path, log_store)
        finally:
            other.kill()
            holder.kill()
    assert isinstance(failure, SessionLocked)
    assert failure.holder == holder.pid


def test_a_holder_that_cannot_be_looked_up_is_another_process(
    log_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a readable /proc/locks the error still names no wrong pid: "another process"."""
    real_read_text = Path.read_text

    def unreadable(self: Path, *args: object, **kwargs: object) -> str:
        if str(self) == "/proc/locks":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    with log_store.create() as log:
        monkeypatch.setattr(Path, "read_text", unreadable)
        failure = _open_without_blocking(log.path, log_store)
    assert isinstance(failure, SessionLocked) and failure.holder is None
    assert "already open for writing by another process;" in str(failure)


def test_the_refusal_names_the_session_its_holder_and_a_host_when_there_is_one() -> None:
    """A store shared by several machines names the holder's host too; a file names none."""
    on_file = SessionLocked(Path("/s/20260101-000000-abcdef.jsonl"), 4242)
    assert (on_file.session_id, on_file.path, on_file.host) == (
        "20260101-000000-abcdef",
        Path("/s/20260101-000000-abcdef.jsonl"),
        None,
    )
    assert "session 20260101-000000-abcdef is already open for writing by process 4242;" in str(
        on_file
    )
    shared = SessionLocked("20260101-000000-abcdef", 4242, "worker-7")
    assert shared.path is None and "by process 4242 on worker-7;" in str(shared)
    assert "by another process;" in str(SessionLocked("x", None))
