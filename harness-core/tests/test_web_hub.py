"""The web host's hub in process: idle sessions evicted past the limit with their models
closed, and opening a long session off the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from harness_core.log import Event, EventTypeRegistry, FileLog, Notify, SessionStore
from harness_core.loop import Approval
from harness_core.models import ModelBase, ModelResponse
from harness_core.runtime import Runtime
from harness_core.web import Hub, WebRuntime


class Counted(ModelBase):
    """Answers every request with text; remembers every instance and whether it was closed."""

    made: ClassVar[list[Counted]] = []

    def __init__(self) -> None:
        self.name = "counted"
        self.closed = False
        Counted.made.append(self)

    async def respond(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(text="done")

    async def aclose(self) -> None:
        self.closed = True


def hub_for(home: Path, max_sessions: int) -> Hub:
    web = WebRuntime(
        runtime=Runtime(home),
        make_model=lambda spec: Counted(),
        default_model="counted",
        cwd=str(home),
        approval=lambda asker: Approval("auto"),
        max_sessions=max_sessions,
    )
    return Hub(web)


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait until `condition()` holds (within 10 s), looking every few milliseconds."""
    deadline = asyncio.get_running_loop().time() + 10
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"{what}: not within 10 s"
        await asyncio.sleep(0.005)


async def test_idle_sessions_past_the_limit_are_evicted_and_their_models_closed(
    harness_home: Path,
) -> None:
    """Three sessions with a limit of two: the least recently used idle one goes, its model
    closed; it opens again on demand, from its log."""
    Counted.made.clear()
    hub = hub_for(harness_home, max_sessions=2)
    first = await hub.create(None)
    await hub.submit(first, "hello", None)
    live = await hub.live(first)
    await until(lambda: not live.session.busy, "the turn ends")
    second, third = await hub.create(None), await hub.create(None)
    assert hub.held() == [second, third]
    await until(lambda: Counted.made[0].closed, "the evicted session closes in the background")
    assert not any(m.closed for m in Counted.made[1:])
    page = await hub.page(first, limit=50, before=None)
    assert [e["type"] for e in page["events"]][-1] == "turn/end"
    await hub.aclose()
    assert all(m.closed for m in Counted.made)


async def test_an_evicted_sessions_events_are_reclaimed_and_the_collector_left_alone(
    harness_home: Path,
) -> None:
    """Opening and letting sessions go leaves the garbage collector as the caller set it
    (off here, nothing frozen), and an evicted session's reader is reclaimed."""
    import gc
    import weakref

    hub = hub_for(harness_home, max_sessions=1)
    first = await hub.create(None)
    gc.disable()
    try:
        reader = weakref.ref((await hub.live(first)).reader)
        await hub.create(None)  # the limit is one: the first session goes
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
    assert first not in hub.held()
    await until(lambda: gc.collect() >= 0 and reader() is None, "the reader is reclaimed")
    await hub.aclose()


async def test_a_session_with_a_listener_is_never_evicted(harness_home: Path) -> None:
    """Whoever watches a session keeps it held, whatever the limit."""
    hub = hub_for(harness_home, max_sessions=1)
    watched = await hub.create(None)
    queue, *_ = await hub.subscribe(watched, -1)
    others = [await hub.create(None) for _ in range(3)]
    assert watched in hub.held() and others[-1] in hub.held()
    hub.unsubscribe(watched, queue)
    await hub.aclose()


async def test_a_session_made_for_a_request_cancelled_meanwhile_is_let_go(
    harness_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A POST of a new session whose client goes away while the session is made: the session
    is made to its end and its writer let go, not left held by a log nobody closes."""
    hub = hub_for(harness_home, 4)
    making, go_on = threading.Event(), threading.Event()
    create = hub.runtime.create

    def held_create(cwd: str | None = None) -> Any:
        making.set()
        go_on.wait(10)
        return create(cwd)

    monkeypatch.setattr(hub.runtime, "create", held_create)
    request = asyncio.ensure_future(hub.create(None))
    await asyncio.to_thread(making.wait, 10)
    request.cancel()
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert Counted.made[-1].closed  # the model made for it, closed with it
    await until(lambda: len(hub.runtime.store.list()) == 1, "the session made")
    [made] = hub.runtime.store.list()
    hub.runtime.store.open(made.id).close()  # its writer is free to take


def _long_session(home: Path) -> str:
    """A 20,000-event session's id."""
    with Runtime(home).create() as log:
        for turn in range(1, 2001):
            log.append("turn/start", {}, turn=turn)
            log.append("message/user", {"text": f"prompt {turn} " + "x" * 200}, turn=turn)
            for n in range(7):
                log.append("message/assistant", {"text": f"answer {n}"}, turn=turn)
            log.append("turn/end", {"status": "completed"}, turn=turn)
    return log.session_id


async def test_opening_a_long_session_leaves_the_event_loop_free(harness_home: Path) -> None:
    """While a 20,000-event session is read and folded, other requests' tasks still run."""
    session = _long_session(harness_home)
    hub = hub_for(harness_home, max_sessions=4)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.get_running_loop().create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    await hub.live(session)
    ticking.cancel()
    assert ticks - before > 10  # the loop went round while the session was folded
    await hub.aclose()


async def test_a_new_client_of_a_long_session_leaves_the_event_loop_free(
    harness_home: Path,
) -> None:
    """A client that lacks every event of a 20,000-event session (a new page's stream asks
    from seq -1) gets them all, parsed while the event loop goes on: here the loop itself
    lets the parse go on, which a parse on the loop would wait for in vain."""
    session = _long_session(harness_home)
    hub = hub_for(harness_home, max_sessions=4)
    reader = (await hub.live(session)).reader
    go, stalled = threading.Event(), []
    parse = reader.events_after

    def held(seq: int) -> list[Event]:
        stalled.append(not go.wait(5))
        return parse(seq)

    reader.events_after = held  # type: ignore[method-assign]
    asyncio.get_running_loop().call_later(0.05, go.set)
    queue, missed, _, last = await hub.subscribe(session, -1)
    assert stalled == [False]
    assert [event.seq for event in missed] == list(range(last + 1))
    assert last == reader.next_seq - 1 >= 20_000
    hub.unsubscribe(session, queue)
    await hub.aclose()


class Stalling(SessionStore):
    """A file store whose writers' opens (`stall="open"`) or commits (`"commit"`) wait until
    the test lets them go, as a long replay or a slow disk would; `stalled` records one that
    waited in vain, its event loop never having let the test run."""

    def __init__(self, home: Path, registry: EventTypeRegistry, stall: str) -> None:
        super().__init__(home, registry)
        self.stall = stall
        self.waiting, self.go = threading.Event(), threading.Event()
        self.stalled = False

    def _wait(self) -> None:
        self.waiting.set()
        self.stalled |= not self.go.wait(5)

    def open(self, session_id: str, *, writable: bool = True) -> FileLog:
        if writable and self.stall == "open":
            self._wait()
        log = super().open(session_id, writable=writable)
        if writable and self.stall == "commit":
            sync = log.make_durable

            def stalling() -> None:
                self._wait()
                sync()

            log.make_durable = stalling  # type: ignore[method-assign]
        return log


@pytest.mark.parametrize("stall", ["open", "commit"])
async def test_a_turn_taking_the_writer_or_committing_leaves_other_requests_answered(
    harness_home: Path, stall: str
) -> None:
    """While a posted turn's writer is opened (a whole replay) or commits (an fsync, a
    database round trip), the host answers another client's listing."""
    hub = hub_for(harness_home, max_sessions=4)
    store = Stalling(harness_home, hub.runtime.host.event_types, stall)
    hub.runtime.store = store
    session = await hub.create(None)
    posting = asyncio.get_running_loop().create_task(hub.submit(session, "hello", None))
    await until(store.waiting.is_set, f"the writer's {stall} begins")
    listed = [summary.id for summary in await hub.sessions()]
    store.go.set()
    assert await posting == {"turn": 1}
    assert listed == [session] and not store.stalled
    live = await hub.live(session)
    await until(lambda: not live.session.busy, "the turn ends")
    events = hub.runtime.reader(session).events
    assert [e.type for e in events][-2:] == ["message/assistant", "turn/end"]
    await hub.aclose()


class HeldReplay(SessionStore):
    """A file store whose writers, once `held`, hold their replay (the lock taken, the log
    not yet read) until the test lets them go, as a long session on a slow disk would; with
    `fail` set, the read then fails with it."""

    def __init__(self, home: Path, registry: EventTypeRegistry) -> None:
        super().__init__(home, registry)
        self.held = False
        self.fail: Exception | None = None
        self.replaying, self.go = threading.Event(), threading.Event()

    def open(self, session_id: str, *, writable: bool = True) -> FileLog:
        if not (writable and self.held):
            return super().open(session_id, writable=writable)
        store = self

        class Held(FileLog):
            def replay(self, lines: Iterable[bytes]) -> None:
                super().replay(store.read_slowly(lines))

        return Held.open(self.path(session_id), self.registry, observer=self.on_append)

    def read_slowly(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        self.replaying.set()
        self.go.wait(30)
        if self.fail is not None:
            raise self.fail
        yield from lines


async def test_a_posted_turn_is_answered_before_the_writers_replay_ends(
    harness_home: Path,
) -> None:
    """A turn posted to a session whose writer is not held is answered with its number
    once the writer lock is taken, while the log is still being replayed; the turn runs
    when the replay is done."""
    hub = hub_for(harness_home, max_sessions=4)
    store = HeldReplay(harness_home, hub.runtime.host.event_types)
    hub.runtime.store = store
    session = await hub.create(None)
    await hub.submit(session, "first", None)
    live = await hub.live(session)

    def first_over() -> bool:  # the writer is None also while the first turn's still replays
        return not live.session.busy and live.session.log is None

    await until(first_over, "the first turn lets the writer go")
    store.held = True
    posting = asyncio.get_running_loop().create_task(hub.submit(session, "second", None))
    try:
        await until(store.replaying.is_set, "the writer's replay begins")
        answer = await asyncio.wait_for(posting, 10)  # before: only once the replay ended
        snapshot = hub.snapshot(live)
    finally:
        store.go.set()
    assert answer == {"turn": 2}
    assert snapshot["running"] and snapshot["queued"] == [] and snapshot["failed"] is None
    await until(lambda: not live.session.busy, "the second turn ends")
    events = hub.runtime.reader(session).events
    assert [(e.type, e.turn) for e in events][-4:] == [
        ("turn/start", 2),
        ("message/user", 2),
        ("message/assistant", 2),
        ("turn/end", 2),
    ]
    await hub.aclose()


async def test_stop_while_the_writer_replays_cancels_the_turn(harness_home: Path) -> None:
    """The page shows the turn running as soon as it is answered: Stop pressed while the
    writer still replays ends that turn `cancelled` once it begins, and nothing runs."""
    hub = hub_for(harness_home, max_sessions=4)
    store = HeldReplay(harness_home, hub.runtime.host.event_types)
    hub.runtime.store = store
    session = await hub.create(None)
    store.held = True
    posting = asyncio.get_running_loop().create_task(hub.submit(session, "hello", None))
    try:
        await until(store.replaying.is_set, "the writer's replay begins")
        assert await asyncio.wait_for(posting, 10) == {"turn": 1}
        assert await hub.cancel(session)
    finally:
        store.go.set()
    live = await hub.live(session)
    await until(lambda: not live.session.busy, "the turn ends")
    events = hub.runtime.reader(session).events
    assert [e.type for e in events] == ["session/start", "turn/start", "message/user", "turn/end"]
    assert events[-1].data["status"] == "cancelled"
    await hub.aclose()


async def test_a_writer_that_fails_after_the_answer_is_the_turns_error(
    harness_home: Path,
) -> None:
    """The store fails mid-replay after the POST was answered: the session's stream and
    tail page carry the turn's error with its prompt (nothing could be logged), it is no
    longer running or queued, and the next prompt runs and clears it."""
    hub = hub_for(harness_home, max_sessions=4)
    store = HeldReplay(harness_home, hub.runtime.host.event_types)
    hub.runtime.store = store
    session = await hub.create(None)
    queue, *_ = await hub.subscribe(session, -1)
    store.held, store.fail = True, OSError("reading the session failed: Input/output error")
    # Answered once the writer lock is held: its replay, held until `go`, may start after.
    assert await hub.submit(session, "hello", None) == {"turn": 1}
    await until(store.replaying.is_set, "the writer's replay starts")
    store.go.set()
    failed = {"prompt": "hello", "error": "reading the session failed: Input/output error"}
    shipped = await asyncio.wait_for(_next_snapshot(queue, lambda s: s["failed"]), 10)
    assert shipped["failed"] == failed and not shipped["running"] and shipped["queued"] == []
    page = await hub.page(session, limit=50, before=None)
    assert page["snapshot"]["failed"] == failed
    assert [e["type"] for e in page["events"]] == ["session/start"]
    store.held = False
    assert await hub.submit(session, "again", None) == {"turn": 1}
    assert hub.snapshot(await hub.live(session))["failed"] is None
    live = await hub.live(session)
    await until(lambda: not live.session.busy, "the turn ends")
    hub.unsubscribe(session, queue)
    await hub.aclose()


async def test_a_writer_failing_as_the_answer_is_made_is_not_lost(harness_home: Path) -> None:
    """The replay fails at once, maybe before the request that took the prompt has its
    answer: the failure still stands in the snapshot afterwards (the request clears the
    last one before it submits, never after)."""
    hub = hub_for(harness_home, max_sessions=4)
    store = HeldReplay(harness_home, hub.runtime.host.event_types)
    hub.runtime.store = store
    session = await hub.create(None)
    store.go.set()
    store.held, store.fail = True, OSError("the disk went away")
    assert await hub.submit(session, "hello", None) == {"turn": 1}
    live = await hub.live(session)
    await until(lambda: hub.snapshot(live)["failed"] is not None, "the failure shows")
    assert hub.snapshot(live)["failed"] == {"prompt": "hello", "error": "the disk went away"}
    await hub.aclose()


async def _next_snapshot(
    queue: asyncio.Queue[tuple[str, dict[str, Any]]], wanted: Callable[[dict[str, Any]], Any]
) -> dict[str, Any]:
    while True:
        kind, data = await queue.get()
        if kind == "snapshot" and wanted(data):
            return data


class Notifying(SessionStore):
    """A file store that says when a session was committed to, as a database store does."""

    def __init__(self, home: Path, registry: EventTypeRegistry) -> None:
        super().__init__(home, registry)
        self.notify: Notify | None = None

    def subscribe(self, notify: Notify) -> Callable[[], None]:  # type: ignore[override]
        self.notify = notify
        return lambda: None


async def test_a_store_that_notifies_wakes_the_followers_with_no_polling(
    harness_home: Path,
) -> None:
    """Another process's commit reaches a subscriber when the store says so (from its own
    thread), and not before: nothing polls a store that notifies."""
    hub = hub_for(harness_home, max_sessions=4)
    store = Notifying(harness_home, hub.runtime.host.event_types)
    hub.runtime.store = store
    session = await hub.create(None)
    queue, *_ = await hub.subscribe(session, -1)
    with store.open(session) as other:  # the other process, appending
        other.append("turn/start", {}, turn=1)
        other.commit()
    await asyncio.sleep(0.6)  # longer than any poll would wait
    assert all(kind != "event" for kind, _ in _drain(queue))
    assert store.notify is not None
    await asyncio.to_thread(store.notify, session, 1)
    kind, envelope = await asyncio.wait_for(_next_event(queue), 5)
    assert (kind, envelope["type"]) == ("event", "turn/start")
    hub.unsubscribe(session, queue)
    await hub.aclose()


def _drain(queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any]]:
    drained = []
    while not queue.empty():
        drained.append(queue.get_nowait())
    return drained


async def _next_event(queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> tuple[str, Any]:
    while True:
        kind, data = await queue.get()
        if kind == "event":
            return kind, data


class Queued:
    """A plugin's TurnQueue kept in memory: what a queue plugin (harness-worker) is asked."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str, str | None]] = []
        self.running = False
        self.closed = False

    def submit(self, session_id: str, prompt: str, spec: str | None) -> dict[str, int]:
        self.turns.append((session_id, prompt, spec))
        return {"queued": len(self.turns)}

    def state(self, session_id: str) -> tuple[bool, list[str]]:
        return self.running, [prompt for sid, prompt, _ in self.turns if sid == session_id]

    def unqueue(self, session_id: str, position: int, prompt: str) -> bool:
        waiting = [turn for turn in self.turns if turn[0] == session_id]
        if not 1 <= position <= len(waiting) or waiting[position - 1][1] != prompt:
            return False
        self.turns.remove(waiting[position - 1])
        return True

    def cancel(self, session_id: str) -> bool:
        return self.running

    def close(self) -> None:
        self.closed = True


async def test_harness_turn_queue_takes_the_turns_of_serve_queue(harness_home: Path) -> None:
    """The first plugin that answers `harness_turn_queue` gets the page's turns: none runs in
    the server, the snapshot's running and queued are the queue's, a waiting prompt is
    removed through it, and it is closed with the hub."""
    from harness_core.hosts import TurnQueue
    from harness_core.log import Store
    from harness_core.plugins import hookimpl

    queue = Queued()

    class Declines:
        name, inject = "declines", ()

        @hookimpl
        def harness_turn_queue(self, store: Store) -> TurnQueue | None:
            return None

    class Queues:
        name, inject = "queues", ()

        @hookimpl
        def harness_turn_queue(self, store: Store) -> TurnQueue | None:
            return queue

    runtime = Runtime(harness_home)
    assert runtime.host.hooks.turn_queue(runtime.store) is None
    for plugin in (Declines(), Queues()):
        assert runtime.host.add(plugin).status == "loaded"
    chosen = runtime.host.hooks.turn_queue(runtime.store)
    assert chosen is queue
    web = WebRuntime(
        runtime=runtime,
        make_model=lambda spec: Counted(),
        default_model="counted",
        cwd=str(harness_home),
        queue=chosen,
    )
    hub = Hub(web)
    session = await hub.create(None)
    assert await hub.submit(session, "one", None) == {"queued": 1}
    assert await hub.submit(session, "two", "counted") == {"queued": 2}
    assert queue.turns == [(session, "one", "counted"), (session, "two", "counted")]
    live = await hub.live(session)
    assert not live.session.busy  # nothing runs in the server
    snapshot = hub.snapshot(live)
    assert (snapshot["running"], snapshot["queued"]) == (False, ["one", "two"])
    assert await hub.unqueue(session, 2, "two") and not await hub.unqueue(session, 2, "two")
    assert hub.snapshot(live)["queued"] == ["one"]
    assert not await hub.cancel(session)
    await hub.aclose()
    assert queue.closed
    events = runtime.reader(session).events
    assert [e.type for e in events] == ["session/start"]  # the queue's workers write the turns
