"""The session store conformance suite: what every store must do, as pytest tests.

A store's tests subclass `StoreConformance` and give it a `store` fixture (a fresh, empty
store whose registry knows the core event types and `test/note`), and, for a store that
processes share, `other_process_url`: the URL another process opens the same store by
(`--store`; the store's own plugin installed), so that a writer in a second process is tested:

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path: Path) -> Store:
            return MyStore(..., registry=conformance_registry())

        @pytest.fixture
        def other_process_url(self, tmp_path: Path) -> str | None:
            return "mystore://..."  # None (the default): this process's alone

The file store runs it in harness-core's tests; a plugin's store runs the same suite, so a new
store is tested by adding one fixture (docs/log.md, "Stores").
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from ..log import (
    TITLE_MAX,
    Divergent,
    EnvelopeError,
    Event,
    EventType,
    EventTypeRegistry,
    LogWriteError,
    ReadOnlyLog,
    SessionLocked,
    SessionNotFound,
    Store,
    TurnEnd,
    apply_copy,
    plan_copy,
)

__all__ = ["NOTE", "StoreConformance", "conformance_registry"]

NOTE = "test/note"


class _Note(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str


def conformance_registry() -> EventTypeRegistry:
    """The core event types plus `test/note`, a plugin-style type that is not surface."""
    registry = EventTypeRegistry()
    registry.declare(EventType(NOTE, _Note, surface=False))
    return registry


def _turn(store: Store, session_id: str, prompt: str, notes: int = 1) -> None:
    """One whole turn appended and committed by the session's writer."""
    with store.open(session_id) as log:
        turn = log.next_turn
        log.append("turn/start", {}, turn=turn)
        log.append("message/user", {"text": prompt}, turn=turn)
        for n in range(notes):
            log.append(NOTE, {"text": f"{prompt} note {n}"}, turn=turn)
        log.append("message/assistant", {"text": f"answer to {prompt}"}, turn=turn)
        log.append("turn/end", TurnEnd(status="completed"), turn=turn)


# A writer in another process: opens the session, says so, and holds it until killed.
_WRITER = """
import sys
from harness_core.runtime import Runtime
with Runtime().open_store(sys.argv[1]).open(sys.argv[2]) as log:
    print("holding", flush=True)
    sys.stdin.read()
"""


class StoreConformance:
    """What every session store does; subclasses provide the `store` fixture."""

    @pytest.fixture
    def other_process_url(self) -> str | None:
        """How another process names this store; None: it cannot (a store in memory)."""
        return None

    def test_create_commits_a_session_start_a_reader_sees_at_once(self, store: Store) -> None:
        """A new session's first event is its session/start, seq 0, already durable."""
        with store.create(system_prompt="sys", cwd="/work") as log:
            assert log.committed_seq == 0
            reader = store.open(log.session_id, writable=False)
            (start,) = reader.events
            assert (start.seq, start.type, start.data["cwd"]) == (0, "session/start", "/work")

    def test_appends_have_gapless_seqs_and_survive_a_reopen(self, store: Store) -> None:
        """Committed events come back in order with seq 0, 1, 2, ...; a reopened writer
        goes on from the next seq."""
        with store.create() as log:
            session_id = log.session_id
        _turn(store, session_id, "one", notes=3)
        _turn(store, session_id, "two")
        events = list(store.read(session_id))
        assert [e.seq for e in events] == list(range(len(events)))
        with store.open(session_id) as log:
            assert log.next_seq == len(events) and log.next_turn == 3

    def test_a_second_writer_is_refused_at_once_naming_the_holder(self, store: Store) -> None:
        """One writer per session: another fails at once; readers need no lock."""
        with store.create() as log:
            with pytest.raises(SessionLocked) as refused:
                store.open(log.session_id)
            assert refused.value.holder and refused.value.session_id == log.session_id
            assert f"session {log.session_id} is already open" in str(refused.value)
            assert store.open(log.session_id, writable=False).events
        store.open(log.session_id).close()  # free again once the first let go

    def test_a_writer_in_another_process_is_named_and_its_death_frees_the_session(
        self, store: Store, other_process_url: str | None
    ) -> None:
        """One writer across processes: a second process's writer refuses this one, naming
        its pid; `kill -9` of it frees the session (no stale lock)."""
        if other_process_url is None:
            pytest.skip("this store lives in one process")
        with store.create() as log:
            session_id = log.session_id
        with _holding(other_process_url, session_id) as holder:
            with pytest.raises(SessionLocked) as refused:
                store.open(session_id)
            assert refused.value.holder == holder.pid
            assert store.open(session_id, writable=False).events  # readers need no lock
        deadline = time.monotonic() + 10  # a database notices a dead client's socket at once
        while True:
            try:
                store.open(session_id).close()
                break
            except SessionLocked:
                assert time.monotonic() < deadline, "the killed writer's lock outlived it"
                time.sleep(0.05)

    def test_every_append_reaches_the_stores_observer(self, store: Store) -> None:
        """`on_append` sees each event a writer of this store appends, session/start
        included, once, in seq order: what hosts wire their plugins' observers to."""
        seen: list[tuple[str, int, str]] = []
        store.on_append = lambda log, event: seen.append((log.session_id, event.seq, event.type))
        with store.create() as log:
            session_id = log.session_id
        _turn(store, session_id, "one", notes=2)
        assert seen == [(session_id, e.seq, e.type) for e in store.read(session_id)]

    def test_a_copy_to_another_store_and_back_keeps_every_byte(self, store: Store) -> None:
        """`harness store copy` both ways: the lines come back byte for byte; copying again
        changes nothing, a longer source extends the copy, and a divergence is refused."""
        from .memory_store import MemoryStore

        other = MemoryStore(store.registry)
        with store.create() as log:
            session_id = log.session_id
        _turn(store, session_id, "one")
        lines = list(store.lines(session_id))
        _copy(store, other, session_id)
        store.delete(session_id)
        assert [step.action for step in _copy(other, store, session_id)] == ["copy"]
        assert list(store.lines(session_id)) == lines
        assert [step.action for step in _copy(other, store, session_id)] == ["same"]
        _turn(store, session_id, "two")
        assert [step.action for step in _copy(store, other, session_id)] == ["extend"]
        assert list(other.lines(session_id)) == list(store.lines(session_id))
        _turn(store, session_id, "three here")
        _turn(other, session_id, "three there")
        with pytest.raises(Divergent, match=session_id):
            plan_copy(store, other, [session_id])

    def test_lines_appended_as_they_are_keep_their_bytes(self, store: Store) -> None:
        """`append_line` (how `harness store copy` writes) stores a line's very bytes, and
        refuses one out of sequence without writing anything."""
        with store.create() as source:
            source_id = source.session_id
        _turn(store, source_id, "copied")
        lines = list(store.lines(source_id))[1:]  # after the session/start
        with store.create() as copy:
            for line in lines:
                copy.append_line(line)
            copy.commit()
            with pytest.raises(EnvelopeError, match="seq"):
                copy.append_line(lines[0])  # its seq is taken
            assert copy.next_turn == 2
            copy_id = copy.session_id
        assert list(store.lines(copy_id))[1:] == lines
        with pytest.raises(ReadOnlyLog):
            store.open(copy_id, writable=False).append_line(lines[0])

    def test_a_session_adopted_keeps_its_lines_and_is_never_overwritten(self, store: Store) -> None:
        """`adopt` (how `harness store copy` writes a session the destination lacks) holds
        the lines as they were given; adopting an id the store holds changes nothing."""
        with store.create() as log:
            session_id = log.session_id
        _turn(store, session_id, "moved")
        lines = list(store.lines(session_id))
        store.delete(session_id)
        store.adopt(session_id, lines)
        assert list(store.lines(session_id)) == lines
        assert [(s.id, s.events) for s in store.list()] == [(session_id, len(lines))]
        with pytest.raises((FileExistsError, LogWriteError)):  # a file's name, a row's key
            store.adopt(session_id, lines[:1])
        assert list(store.lines(session_id)) == lines

    def test_an_unknown_id_is_not_found(self, store: Store) -> None:
        with pytest.raises(SessionNotFound):
            store.open("20200101-000000-abcdef", writable=False)

    def test_an_id_with_a_nul_or_a_slash_is_not_found(self, store: Store) -> None:
        """An id from a URL is checked before it reaches a query or a path: a NUL in it never
        fails the store, nor finds the session whose id it cuts it to."""
        with store.create() as log:
            session_id = log.session_id
        for bad in (f"{session_id}\x00x", f"{session_id}/../{session_id}", "", "\x00"):
            for call in _by_id(store, bad):
                with pytest.raises(SessionNotFound):
                    call()
        assert [s.id for s in store.list()] == [session_id]

    def test_a_plugins_event_type_is_kept_as_written(self, store: Store) -> None:
        """A plugin's event (not surface) is stored and read back as written, and its lines
        are the envelopes a reader reads."""
        with store.create() as log:
            session_id = log.session_id
        _turn(store, session_id, "one")
        stored = [json.loads(line) for line in store.lines(session_id)]
        assert NOTE in [envelope["type"] for envelope in stored]
        assert [e.to_json() for e in store.read(session_id)] == stored

    def test_latest_equals_a_forward_fold(self, store: Store) -> None:
        """The tail query answers what scanning the whole session forward would."""
        with store.create() as log:
            session_id = log.session_id
        randomly = random.Random(7)
        for n in range(12):
            _turn(store, session_id, f"prompt {n}", notes=randomly.randrange(4))
        events = list(store.read(session_id))
        for types in ({NOTE}, {"turn/start"}, {"message/user", NOTE}, {"nothing"}, {NOTE, "x"}):
            expected = next((e for e in reversed(events) if e.type in types), None)
            assert _same(store.latest(session_id, types), expected), types

    def test_listing_names_every_session_newest_first(self, store: Store) -> None:
        """Each session with its event count and title (its first prompt)."""
        ids = []
        for prompt in ("first", "second"):
            with store.create() as log:
                ids.append(log.session_id)
            _turn(store, ids[-1], prompt)
        listed = {summary.id: summary for summary in store.list()}
        assert set(ids) <= set(listed)
        assert [listed[i].title for i in ids] == ["first", "second"]
        assert listed[ids[0]].events == len(list(store.read(ids[0])))

    def test_a_follower_learns_of_a_commit(self, store: Store) -> None:
        """A store that notifies says so for each commit, with the session and its newest
        seq; one that cannot (None) leaves a reader to find the commit by refreshing."""
        import threading

        with store.create() as log:
            session_id = log.session_id
        reader = store.open(session_id, writable=False)
        heard: list[tuple[str, int]] = []
        arrived = threading.Event()

        def notify(sid: str, seq: int) -> None:
            heard.append((sid, seq))
            arrived.set()

        stop = store.subscribe(notify)
        try:
            _turn(store, session_id, "one")
            newest = list(store.read(session_id))[-1].seq
            if stop is not None:
                assert arrived.wait(10), "no notification within 10 s of the commit"
                assert max(seq for sid, seq in heard if sid == session_id) == newest
            assert reader.refresh()[-1].seq == newest
        finally:
            if stop is not None:
                stop()

    def test_a_session_is_deleted_only_once_its_writer_is_free(self, store: Store) -> None:
        """While a writer holds a session it cannot be deleted; after, it is gone for good
        and the other sessions stay."""
        with store.create() as kept:
            kept_id = kept.session_id
        with store.create() as log:
            with pytest.raises(SessionLocked):
                store.delete(log.session_id)
            session_id = log.session_id
        store.delete(session_id)
        with pytest.raises(SessionNotFound):
            store.open(session_id, writable=False)
        with pytest.raises(SessionNotFound):
            store.delete(session_id)
        assert [s.id for s in store.list()] == [kept_id]

    def test_a_title_given_by_rename_is_listed_instead_of_the_first_prompt(
        self, store: Store
    ) -> None:
        """A renamed session is listed by its new title, also while its writer holds it and
        after more turns; the log is unchanged; a bad title or an unknown id is refused."""
        with store.create() as log:
            session_id = log.session_id
        with store.create() as other:
            other_id = other.session_id
        _turn(store, session_id, "first prompt")
        _turn(store, other_id, "other prompt")
        before = list(store.lines(session_id))
        with store.open(session_id):
            store.rename(session_id, "  A name of its own  ")
        _turn(store, session_id, "second prompt")
        listed = {summary.id: summary.title for summary in store.list()}
        assert listed == {session_id: "A name of its own", other_id: "other prompt"}
        assert list(store.lines(session_id))[: len(before)] == before
        store.rename(session_id, "Renamed again ✓")
        assert {s.id: s.title for s in store.list()}[session_id] == "Renamed again ✓"
        for bad in ("", "   ", "x" * (TITLE_MAX + 1), "two\nlines", "tab\there", "bell\x07"):
            with pytest.raises(ValueError, match=r"empty|at most|control"):
                store.rename(session_id, bad)
        with pytest.raises(SessionNotFound):
            store.rename("20200101-000000-abcdef", "no such session")
        store.delete(session_id)
        assert [s.title for s in store.list()] == ["other prompt"]

    def test_a_crashed_turn_is_closed_on_the_next_open(self, store: Store) -> None:
        """A turn left open (its writer died) is ended as an error, its open call answered
        interrupted, before anything else is appended."""
        from ..loop import Agent
        from ..models import ScriptedModel
        from ..tools import ToolRegistry

        with store.create() as log:
            log.append("turn/start", {}, turn=1)
            log.append("message/user", {"text": "go"}, turn=1)
            calls = [{"id": "c1", "name": "bash", "arguments": "{}"}]
            log.append("message/assistant", {"text": None, "tool_calls": calls}, turn=1)
            session_id = log.session_id  # closed here without a turn/end: the crash
        with store.open(session_id) as log:
            assert Agent(log, ScriptedModel([]), ToolRegistry()).repair()
        types = [e.type for e in store.read(session_id)]
        assert types[-2:] == ["tool/result", "turn/end"]


def _copy(source: Store, destination: Store, session_id: str) -> list[Any]:
    steps = plan_copy(source, destination, [session_id])
    for step in steps:
        apply_copy(destination, step)
    return steps


@contextmanager
def _holding(url: str, session_id: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding the session's writer, killed with -9 on exit."""
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, url, session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
            yield holder
        finally:
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait()


def _by_id(store: Store, session_id: str) -> list[Callable[[], object]]:
    """Every store operation on one session id."""
    return [
        lambda: store.open(session_id),
        lambda: store.open(session_id, writable=False),
        lambda: store.latest(session_id, {"turn/start"}),
        lambda: list(store.lines(session_id)),
        lambda: store.delete(session_id),
        lambda: store.rename(session_id, "title"),
    ]


def _same(found: Event | None, expected: Event | None) -> bool:
    return _envelope(found) == _envelope(expected)


def _envelope(event: Event | None) -> dict[str, Any] | None:
    return None if event is None else event.to_json()
