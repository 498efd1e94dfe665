"""Crash trials: a writer process killed with SIGKILL at random moments loses nothing committed."""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness_core.log import Event, EventTypeRegistry, FileLog

TRIALS = 50

# A small script run with the workspace python. Importing the log takes most of a process's
# start-up, so the script imports once and forks one writer per trial ("go" on stdin); each
# writer appends turns forever, committing where the loop commits and reporting each committed
# seq. Every event that carries text says `event <seq>`, so the test can check content and order.
_WRITERS = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from harness_core.log import EventTypeRegistry, FileLog, SessionStart

    def report(word, number):
        os.write(1, f"{word} {number}\\n".encode())  # one write: a kill cannot split the line

    def write_forever(path):
        registry = EventTypeRegistry()
        if path.exists():
            log = FileLog.open(path, registry)
        else:
            start = SessionStart(id="crash", created="2026-01-01T00:00:00.000Z", harness_version="t")
            log = FileLog.create(path, registry, start)

        def mark():
            return f"event {log.next_seq}"

        def commit():
            log.commit()
            report("committed", log.committed_seq)

        last = log.latest(("turn/start", "turn/end"))
        turn = last.turn if last is not None else 0
        if last is not None and last.type == "turn/start":  # repair what the last kill left
            for call_id, name in log.projection.pending_calls.items():
                result = {"call_id": call_id, "tool_name": name, "text": mark()}
                log.append("tool/result", result, turn=turn)
            log.append("turn/end", {"status": "error", "error": "killed"}, turn=turn)
        commit()
        while True:
            turn += 1
            log.append("turn/start", {}, turn=turn)
            log.append("message/user", {"text": mark()}, turn=turn)
            commit()
            calls = [{"id": f"c{turn}-{n}", "name": "bash", "arguments": "{}"} for n in range(3)]
            log.append("message/assistant", {"text": mark(), "tool_calls": calls}, turn=turn)
            commit()
            for call in calls:
                result = {"call_id": call["id"], "tool_name": "bash", "text": mark() + " x" * 200}
                log.append("tool/result", result, turn=turn)
            commit()
            log.append("message/assistant", {"text": mark()}, turn=turn)
            log.append("turn/end", {"status": "completed"}, turn=turn)
            commit()

    for _ in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                write_forever(Path(sys.argv[1]))
            finally:
                os._exit(1)
        report("pid", pid)
        report("exit", os.waitpid(pid, 0)[1])
    """
)


class _WriterFactory:
    """The script above, and the lines it reports, read on a thread into a queue."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WRITERS, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[tuple[str, int]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            word, number = line.split()
            self.lines.put((word, int(number)))

    def _next(self, *words: str) -> tuple[str, int]:
        word, number = self.lines.get(timeout=60)
        assert word in words, f"unexpected report {word} {number}"
        return word, number

    def trial(self, rng: random.Random) -> list[int]:
        """Start a writer, SIGKILL it at a random moment, return the seqs it reported committed."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        committed: list[int] = []
        word, pid = self._next("pid", "committed")
        while word != "pid":  # the writer may report before its parent names it
            committed.append(pid)
            word, pid = self._next("pid", "committed")
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0, 0.02))  # sometimes while it opens, replays, repairs
        else:
            while not committed:
                committed.append(self._next("committed")[1])
            time.sleep(rng.uniform(0, 0.05))
        os.kill(pid, signal.SIGKILL)
        word, status = self._next("exit", "committed")
        while word != "exit":
            committed.append(status)
            word, status = self._next("exit", "committed")
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        return committed

    def close(self) -> None:
        with self.process:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=60)


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[_WriterFactory]:
    """Writers for `tmp_path/crash.jsonl`, forked from one prepared process."""
    factory = _WriterFactory(tmp_path / "crash.jsonl")
    yield factory
    factory.close()


def _check_marks(events: list[Event]) -> None:
    for event in events:
        text = event.data.get("text")
        if event.type != "session/start" and isinstance(text, str):
            assert text.split(" ", 2)[:2] == ["event", str(event.seq)], event


@pytest.mark.slow
def test_sigkill_never_loses_a_committed_event(tmp_path: Path, writers: _WriterFactory) -> None:
    """After each of many kills, every reported commit is on disk once, in order, gapless."""
    rng = random.Random(20260102)
    path = tmp_path / "crash.jsonl"
    registry = EventTypeRegistry()
    verified = b""
    committed = -1
    for trial in range(TRIALS):
        reported = writers.trial(rng)
        assert reported == sorted(reported), "commits are reported in order"
        if not path.exists():  # killed before it created the session
            assert not reported
            continue
        data = path.read_bytes()
        assert data.startswith(verified), f"trial {trial}: bytes already verified were rewritten"
        with FileLog.open(path, registry) as log:
            seqs = [e.seq for e in log.events]
            assert seqs == list(range(len(seqs))), f"trial {trial}: seq not gapless"
            assert all("moved aside" in p for p in log.problems), log.problems
            committed = max([committed, *reported])
            assert committed <= seqs[-1], f"trial {trial}: committed events lost"
            _check_marks(log.events)
        verified = path.read_bytes()
        for aside in tmp_path.glob("crash.jsonl.torn-*"):
            assert b"\n" not in aside.read_bytes(), "only a partial line is ever set aside"
    assert committed > 100, "the trials exercised real writing"
