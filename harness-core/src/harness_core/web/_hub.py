"""The web host's sessions: a live projection of each, its subscribers, and its turns.

Each session the page shows has a reader of its log folded into a snapshot (what the page
renders) and a `SessionRuntime` (its models and turn queue, `harness_core.runtime`). The
runtime takes the session's writer for a run of turns and lets it go after, so another
process may write the session in between. Every event reaches subscribers by one path: the
reader catches up (`_catch_up`) and each new envelope is folded into the snapshot and sent on.
Our own turns wake the reader as they append; a session another process writes is looked at
every WATCH_INTERVAL while anyone listens (the file store's notification, for now, is that
look).

Nothing here blocks the event loop on the file system: opening and folding a session, each
catch-up, listing and creating sessions run in worker threads. Idle sessions (nobody
listening, no turn running or queued, no question open) are evicted past `max_sessions`,
their models closed; the rest close with the server (`aclose`).

A question the approval policy asks (`ask`) waits in the session's live state, never on the
log: the tail page's snapshot lists the open ones (`approvals`) and the stream announces each
(`event: approval`); the answer comes back through `answer`, and the decision the loop then
appends (`tool/approval`) reaches the page like any other event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from .. import secret
from ..hosts import SessionSnapshot, ToolRow, TurnQueue, approval_note, one_line
from ..hosts._present import call_label, result_suffix
from ..log import (
    Event,
    SessionLog,
    SessionSummary,
    check_title,
    in_thread_to_the_end,
    replayed,
)
from ..loop import Answer, Approval, ApprovalRequest, Asker
from ..models import Model
from ..runtime import Runtime, SessionRuntime

__all__ = ["ANSWERS", "Hub", "Message", "NotWaiting", "WebRuntime"]

logger = logging.getLogger("harness.web")

WATCH_INTERVAL: Final = 0.25  # seconds between looks at a file another process writes
MAX_SESSIONS: Final = 64  # sessions held in memory; idle ones beyond it are evicted

# What subscribers receive: ("event", envelope), ("delta", {...}), ("row", {...}),
# ("approval", {...}) or ("snapshot", {...}).
Message = tuple[str, dict[str, Any]]

ANSWERS: Final[tuple[Answer, ...]] = ("once", "session", "deny")


@dataclass(slots=True)
class WebRuntime:
    """What the web host needs from its composition root (the CLI's `serve`)."""

    runtime: Runtime
    make_model: Callable[[str | None], Model]  # a spec, or None for the default; raises
    default_model: str | None
    cwd: str
    demo_prompt: str | None = None  # the embedded demo's prompt, offered when no model is set
    # the approval policy, given the hub's way to ask (the page): `Runtime.approval`
    approval: Callable[[Asker], Approval] = lambda asker: Approval()
    # whether turns on this model spec run without asking: the embedded demo, whose commands
    # are fixed and harmless
    hands_free: Callable[[str | None], bool] = lambda spec: False
    max_sessions: int = MAX_SESSIONS
    # `serve --queue`: turns go to a plugin's queue and run on its workers, not here
    queue: TurnQueue | None = None
    # the specs a client may choose (GET /api/models): its --model, the configured `models`
    models: tuple[str, ...] = ()


class Busy(Exception):
    """A session that cannot be deleted now: a turn of this server's runs or waits on it."""


class NotWaiting(Exception):
    """An answer to a question that is not open; `known`: the call was asked about or made
    (answered already, or cancelled), else the session never had it."""

    def __init__(self, message: str, *, known: bool) -> None:
        super().__init__(message)
        self.known = known


@dataclass(slots=True)
class _Question:
    """An open approval question and the future its answer resolves."""

    call_id: str  # the call's id, or SUBAGENT_SESSION/CALL for a subagent's call
    request: ApprovalRequest
    answer: asyncio.Future[Answer]

    def to_json(self) -> dict[str, Any]:
        request = self.request
        return {
            "call_id": self.call_id,
            "session_id": request.session_id,
            "tool": request.tool,
            "summary": request.summary,
            "detail": request.detail,
        }


@dataclass(slots=True)
class _Live:
    """One session the server holds: its reader, snapshot, subscribers and turns."""

    reader: SessionLog
    snapshot: SessionSnapshot
    session: SessionRuntime
    reading: asyncio.Lock = field(default_factory=asyncio.Lock)  # one catch-up at a time
    dirty: asyncio.Event = field(default_factory=asyncio.Event)  # our own turn appended
    subscribers: set[asyncio.Queue[Message]] = field(default_factory=set)
    follower: asyncio.Task[None] | None = None
    shipped: dict[str, Any] = field(default_factory=dict)  # the last snapshot sent
    questions: dict[str, _Question] = field(default_factory=dict)  # open ones, by call id
    asked: set[str] = field(default_factory=set)  # every call id asked about, open or not
    used: float = 0.0  # when a client last asked for it (monotonic), for eviction
    # under `serve --queue`: whether a worker runs a turn of it, and the prompts waiting
    queue_state: tuple[bool, list[str]] = (False, [])
    # the last submitted turn that failed before its log could say so: {"prompt", "error"}
    failed: dict[str, str] | None = None

    @property
    def queued_work(self) -> bool:
        return self.queue_state[0] or bool(self.queue_state[1])

    @property
    def busy(self) -> bool:
        """Whether evicting it would lose anything: a listener, a turn, a question."""
        session = self.session
        return bool(self.subscribers or session.busy or self.questions)


class Hub:
    """Every session the web host holds, by id."""

    def __init__(self, web: WebRuntime) -> None:
        self.web = web
        self.runtime = web.runtime
        self._live: dict[str, _Live] = {}
        self._opening: dict[str, asyncio.Future[_Live]] = {}
        self._closing: set[asyncio.Task[None]] = set()  # evicted sessions, closing
        self._approval = web.approval
        self._loop: asyncio.AbstractEventLoop | None = None
        # The store's notification of commits (any process's), once a session is followed;
        # None where the store has none (files): the followers poll then.
        self._unsubscribe: Callable[[], None] | None = None
        self._notified = False
        # Which sessions run a turn or wait for an answer, and who follows that (the list).
        self._activity: dict[str, dict[str, bool]] = {}
        self.watchers: set[asyncio.Queue[dict[str, Any]]] = set()

    # -- sessions --------------------------------------------------------------------------

    async def live(self, session_id: str) -> _Live:
        """The session's live state, opened and folded off the event loop on first use, and
        caught up with its file."""
        live = self._live.get(session_id)
        if live is None:
            live = await self._open(session_id)
        else:
            await self._catch_up(session_id, live)
        live.used = time.monotonic()
        return live

    async def _open(self, session_id: str) -> _Live:
        """One opening per session however many clients ask at once."""
        opening = self._opening.get(session_id)
        if opening is not None:
            return await asyncio.shield(opening)
        future = self._opening[session_id] = asyncio.get_running_loop().create_future()
        try:
            reader, snapshot = await asyncio.to_thread(self._fold, session_id)
            session = self.runtime.open(
                session_id,
                self.web.make_model,
                approval=partial(self._approval_for, session_id),
                hold=False,
            )
            session.observe(on_event=partial(self._appended, session_id))
            session.observe(on_delta=partial(self._delta, session_id))
            session.observe(on_failure=partial(self._failed, session_id))
            live = self._live[session_id] = _Live(reader, snapshot, session)
            future.set_result(live)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a failed open is the asker's error, not a warning
            raise
        finally:
            del self._opening[session_id]
        self._evict(keep=session_id)
        return live

    def _fold(self, session_id: str) -> tuple[SessionLog, SessionSnapshot]:
        """The session's reader and its snapshot, folded as the reader replays the session
        (in a worker thread)."""
        snapshot = SessionSnapshot(self.runtime.host.hooks.snapshot_fields())

        def fold(events: list[Event]) -> None:
            for event in events:
                snapshot.apply(event)
            time.sleep(0)  # the event loop's thread gets the interpreter now and then

        with replayed(fold):
            reader = self.runtime.reader(session_id)
        return reader, snapshot

    async def sessions(self) -> list[SessionSummary]:
        """Every readable session, newest first (listed in a worker thread)."""
        listed = await asyncio.to_thread(self.runtime.store.list)
        return [summary for summary in listed if summary.problem is None]

    async def create(self, spec: str | None) -> str:
        """A new session on `spec`; a model that cannot be built raises before it exists. With
        no model anywhere the session is still made: its first turn says how to choose one."""
        unset = spec is None and self.web.default_model is None
        model = None if unset else await asyncio.to_thread(self.web.make_model, spec)
        try:
            # To its end: a request cancelled meanwhile (its client gone) must not leave the
            # new session's writer held by a log nobody will close.
            session_id = await in_thread_to_the_end(self._new_session)
        except BaseException:
            if model is not None:
                await model.aclose()
            raise
        if model is not None:
            live = await self.live(session_id)
            live.session.adopt(spec, model)
            live.session.default_spec = spec
        return session_id

    def _new_session(self) -> str:
        """A new session, its writer let go again (its first turn takes it)."""
        log = self.runtime.create(self.web.cwd)
        log.close()
        return log.session_id

    async def page(self, session_id: str, *, limit: int, before: int | None) -> dict[str, Any]:
        """A history page: the tail with its snapshot, or an older page without one."""
        live = await self.live(session_id)
        page, more = live.reader.tail(limit, before=before)
        return {
            "events": [event.to_json() for event in page],
            "before": page[0].seq if more else None,
            "snapshot": self.snapshot(live) if before is None else None,
            "rows": self.rows(live, page),
        }

    def rows(self, live: _Live, events: Sequence[Event]) -> dict[str, dict[str, Any]]:
        """The tool rows of the calls that `events` make or answer, by call id."""
        rows = live.snapshot.rows(events, live.reader.events_at)
        return {call: self.row(row) for call, row in rows.items()}

    def snapshot(self, live: _Live) -> dict[str, Any]:
        session = live.session
        if self.web.queue is not None:
            # A cancelled turn leaves the queue at once and ends on its worker a moment later.
            running = live.queue_state[0] or live.snapshot.conversation.turn.open is not None
            queued = live.queue_state[1]
        else:
            running, queued = session.busy, session.queued
        return {
            "seq": live.snapshot.seq,
            **live.snapshot.fields(),
            "running": running,
            "queued": queued,
            "approvals": [question.to_json() for question in live.questions.values()],
            "failed": live.failed,
        }

    def held(self) -> list[str]:
        """The ids of the sessions held in memory, least recently used first."""
        return [sid for _, sid in sorted((live.used, sid) for sid, live in self._live.items())]

    def _evict(self, keep: str) -> None:
        """Past `max_sessions`, let the least recently used idle sessions go (not `keep`, the
        one just asked for)."""
        idle = sorted(
            (live.used, sid) for sid, live in self._live.items() if not live.busy and sid != keep
        )
        evicted = idle[: max(0, len(self._live) - self.web.max_sessions)]
        for _, session_id in evicted:
            live = self._live.pop(session_id)
            closing = asyncio.get_running_loop().create_task(live.session.aclose())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        """The server stops: every session's turns end and its models close."""
        sessions, self._live = list(self._live.values()), {}
        for live in sessions:
            if live.follower is not None:
                live.follower.cancel()
            await live.session.aclose()
        await asyncio.gather(*self._closing)
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.web.queue is not None:
            await asyncio.to_thread(self.web.queue.close)

    # -- fan-out ---------------------------------------------------------------------------

    async def _catch_up(self, session_id: str, live: _Live) -> None:
        """Read what was appended (in a worker thread), fold and send every new event, then a
        changed snapshot."""
        async with live.reading:
            events = await asyncio.to_thread(live.reader.refresh)
            if self.web.queue is not None:
                live.queue_state = await asyncio.to_thread(self.web.queue.state, session_id)
        for event in events:
            change = live.snapshot.apply(event)
            self._send(live, ("event", event.to_json()))
            rows = change.entry.rows if change.entry is not None else []
            for row in [change.row] if change.row is not None else rows:
                self._send(live, ("row", self.row(row)))
        self.ship_snapshot(live)

    def _appended(self, session_id: str, log: SessionLog, event: Event) -> None:
        """Our own turn appended to `log` (this session's, or a subagent's): wake the reader."""
        live = self._live.get(session_id)
        if live is not None and log.session_id == session_id:
            live.dirty.set()
            self._follow(session_id, live)

    def _delta(self, session_id: str, kind: str, text: str) -> None:
        live = self._live.get(session_id)
        if live is not None:
            # A piece: a value whole in it is redacted; the final text comes from the log.
            text = secret.current().redact(text)
            self._send(live, ("delta", {"kind": kind, "text": text}))

    def _failed(self, session_id: str, prompt: str, error: str) -> None:
        """A turn this server answered for failed before its log could say so (the writer
        could not be had): the snapshot carries it, as a turn's error, until the next prompt."""
        live = self._live.get(session_id)
        if live is not None:
            live.failed = {"prompt": prompt, "error": one_line(secret.current().redact(error))}
            self.ship_snapshot(live)

    def _follow(self, session_id: str, live: _Live) -> None:
        if live.follower is None:
            live.follower = asyncio.get_running_loop().create_task(self._watch(session_id, live))

    async def _watch(self, session_id: str, live: _Live) -> None:
        """Follow the session while anyone listens or a turn runs: at once after our own
        appends and whenever the store says another process committed; where the store
        cannot say (files), also every WATCH_INTERVAL."""
        self._listen()
        try:
            while live.subscribers or live.session.busy or live.dirty.is_set() or live.queued_work:
                # A queue's state changes without a commit (a worker takes or ends a turn),
                # so it is looked at every WATCH_INTERVAL while it has work for the session.
                notified = self._unsubscribe is not None and not live.queued_work
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(live.dirty.wait(), None if notified else WATCH_INTERVAL)
                live.dirty.clear()
                await self._catch_up(session_id, live)
        except Exception:
            logger.exception("session %s: following its log stopped", session_id)
        finally:
            live.follower = None

    def _listen(self) -> None:
        """Subscribe to the store's commits, once (the first session followed)."""
        if self._notified:
            return
        self._notified, self._loop = True, asyncio.get_running_loop()
        self._unsubscribe = self.runtime.store.subscribe(self._committed)

    def _committed(self, session_id: str, seq: int) -> None:
        """The store's notification, from any thread: wake that session's follower."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake, session_id, seq)

    def _wake(self, session_id: str, seq: int) -> None:
        live = self._live.get(session_id)
        if live is not None and seq > live.reader.next_seq - 1:
            live.dirty.set()
            self._follow(session_id, live)

    def row(self, row: ToolRow) -> dict[str, Any]:
        """A tool row as the page shows it: the tool's own one-line call and result."""
        tools = self.runtime.host.tools
        summary = None
        if row.state != "running":
            result = {"text": row.text, "is_error": row.state == "error", "data": row.data}
            summary = result_suffix(tools, row.name, result)
        return {
            "call_id": row.call_id,
            "name": row.name,
            "state": row.state,
            "label": call_label(tools, row.name, row.arguments),
            "summary": summary,
            "approval": approval_note(row),
            "exit": row.data.get("exit_code") if isinstance(row.data, dict) else None,
        }

    def activity(self) -> dict[str, dict[str, bool]]:
        """The sessions that run a turn or wait for an answer: {id: {running, waiting}}."""
        return dict(self._activity)

    def _active(self, live: _Live, snapshot: dict[str, Any]) -> None:
        now = {"running": bool(snapshot["running"]), "waiting": bool(snapshot["approvals"])}
        session_id = live.session.id
        if self._activity.get(session_id, {"running": False, "waiting": False}) == now:
            return
        if any(now.values()):
            self._activity[session_id] = now
        else:
            self._activity.pop(session_id, None)
        for queue in list(self.watchers):
            queue.put_nowait({"id": session_id, **now})

    def ship_snapshot(self, live: _Live) -> None:
        snapshot = self.snapshot(live)
        self._active(live, snapshot)
        if {k: v for k, v in snapshot.items() if k != "seq"} != {
            k: v for k, v in live.shipped.items() if k != "seq"
        }:
            live.shipped = snapshot
            self._send(live, ("snapshot", snapshot))

    def _send(self, live: _Live, message: Message) -> None:
        for queue in list(live.subscribers):
            queue.put_nowait(message)

    async def subscribe(
        self, session_id: str, after: int
    ) -> tuple[asyncio.Queue[Message], list[Event], dict[str, dict[str, Any]], int]:
        """A queue of what comes next, the events after seq `after` (what the client lacks)
        with the rows they make or answer, and the seq the client is at then. A client ahead
        of this log (it followed another log under this id) would wait for seqs that passed:
        it goes on from the newest."""
        live = await self.live(session_id)
        queue: asyncio.Queue[Message] = asyncio.Queue()
        live.subscribers.add(queue)
        self._follow(session_id, live)
        after = min(after, live.reader.next_seq - 1)
        # A new client asks from -1: the whole of a long session, too long a parse for the loop.
        missed, rows = await asyncio.to_thread(self._missed, live, after)
        return queue, missed, rows, missed[-1].seq if missed else after

    def _missed(self, live: _Live, after: int) -> tuple[list[Event], dict[str, dict[str, Any]]]:
        missed = live.reader.events_after(after)
        return missed, self.rows(live, missed)

    def unsubscribe(self, session_id: str, queue: asyncio.Queue[Message]) -> None:
        live = self._live.get(session_id)
        if live is not None:
            live.subscribers.discard(queue)

    # -- turns -----------------------------------------------------------------------------

    async def submit(self, session_id: str, prompt: str, spec: str | None) -> dict[str, Any]:
        """Start the prompt as a turn, or queue it behind the running one (under `serve
        --queue`, queue it for the workers)."""
        live = await self.live(session_id)
        await live.session.model_for(spec)  # a spec that cannot be built fails here, not later
        queue = self.web.queue
        if queue is not None:
            spec = spec or live.session.default_spec or self.web.default_model
            answer = await asyncio.to_thread(queue.submit, session_id, prompt, spec)
            live.queue_state = await asyncio.to_thread(queue.state, session_id)
        else:
            # SessionLocked: another process writes it. Answered once the writer lock is
            # held, before its replay ends; a failure after that comes to `_failed`, maybe
            # before this returns, so the last failure is cleared first.
            live.failed = None
            answer = await live.session.submit(prompt, spec)
        self._follow(session_id, live)
        self.ship_snapshot(live)
        return answer

    async def delete(self, session_id: str) -> None:
        """Remove the session for good (Store.delete): Busy while a turn of this server runs
        or waits on it; SessionLocked while another process writes it."""
        live = self._live.get(session_id)
        if live is not None:
            if live.session.busy or live.questions:
                raise Busy(f"session {session_id} is running a turn: cancel it first")
            del self._live[session_id]
            if live.follower is not None:
                live.follower.cancel()
            await live.session.aclose()
        await asyncio.to_thread(self.runtime.store.delete, session_id)

    async def rename(self, session_id: str, title: str) -> dict[str, str]:
        """Give the session a title of its own (Store.rename; the log is not touched, so a
        turn may run meanwhile): `{"id", "title"}`, the title as the listing now shows it."""
        title = check_title(title)  # ValueError before the store is asked
        await asyncio.to_thread(self.runtime.store.rename, session_id, title)
        return {"id": session_id, "title": title}

    async def unqueue(self, session_id: str, position: int, prompt: str) -> bool:
        """Drop a queued prompt (see SessionRuntime.unqueue); the page hears it at once."""
        live = await self.live(session_id)
        queue = self.web.queue
        if queue is None:
            dropped = live.session.unqueue(position, prompt)
        else:
            dropped = await asyncio.to_thread(queue.unqueue, session_id, position, prompt)
            live.queue_state = await asyncio.to_thread(queue.state, session_id)
        self.ship_snapshot(live)
        return dropped

    async def cancel(self, session_id: str) -> bool:
        live = await self.live(session_id)
        if self.web.queue is not None:
            return await asyncio.to_thread(self.web.queue.cancel, session_id)
        return live.session.cancel()

    # -- approval --------------------------------------------------------------------------

    def _approval_for(self, session_id: str, spec: str | None) -> Approval:
        if self.web.hands_free(spec):
            return Approval("auto")
        return self._approval(partial(self.ask, session_id))

    async def ask(self, session_id: str, request: ApprovalRequest) -> Answer:
        """The session's Asker: open the question on its page, wait for a click. A subagent
        asks through its parent's, so its question reaches the page that started the turn.

        A cancel while it waits raises here; the question closes and the loop answers the
        call "interrupted".
        """
        live, call_id = self._live[session_id], request.question_id(session_id)
        question = _Question(call_id, request, asyncio.get_running_loop().create_future())
        live.questions[call_id] = question
        live.asked.add(call_id)
        self._send(live, ("approval", question.to_json()))
        self.ship_snapshot(live)
        try:
            return await question.answer
        finally:
            del live.questions[call_id]
            self.ship_snapshot(live)

    async def answer(self, session_id: str, call_id: str, answer: Answer) -> None:
        """Answer an open question; NotWaiting when none is open for `call_id`."""
        live = await self.live(session_id)
        question = live.questions.get(call_id)
        if question is None or question.answer.done():
            known = call_id in live.asked or call_id in live.snapshot.made
            state = "is not waiting for an answer" if known else "is not a call of this session"
            raise NotWaiting(f"call {call_id} {state}", known=known)
        question.answer.set_result(answer)
