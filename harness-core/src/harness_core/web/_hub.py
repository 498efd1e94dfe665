"""The web host's sessions: a live projection of each, its subscribers, and its turn queue.

Every event reaches subscribers by one path: the hub's reader of the session file catches up
(`pump`) and each new envelope is folded into the session's snapshot and sent on. Turns this
server runs append through their own writer and pump at once; a session another process
writes is watched while someone subscribes to it. Prompts sent while a turn runs wait in the
session's queue and run in order, on one writer held for the whole queue.

A question the approval policy asks (`ask`) waits in the session's live state, never on the
log: the tail page's snapshot lists the open ones (`approvals`) and the stream announces each
(`event: approval`); the answer comes back through `answer`, and the decision the loop then
appends (`tool/approval`) reaches the page like any other event.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import contextvars
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..hosts import SessionSnapshot, SnapshotFields, ToolRow, approval_note
from ..hosts._present import call_label, result_suffix
from ..log import Event, SessionLog, SessionStore
from ..loop import Agent, Answer, Approval, ApprovalRequest, Asker, CompactionPolicy
from ..models import DeltaSink, Model, ModelResponse
from ..tools import ToolRegistry

__all__ = ["ANSWERS", "Hub", "Message", "NotWaiting", "WebRuntime"]

logger = logging.getLogger("harness.web")

WATCH_INTERVAL: Final = 0.25  # seconds between looks at a file another process writes

# What subscribers receive: ("event", envelope), ("delta", {...}), ("row", {...}),
# ("approval", {...}) or ("snapshot", {...}).
Message = tuple[str, dict[str, Any]]

ANSWERS: Final[tuple[Answer, ...]] = ("once", "session", "deny")

# The hub session whose turn is running in this task. A subagent asks through its parent's
# Approval from inside the parent's turn (tasks copy the context), so its question reaches the
# page that started the turn even though it names the subagent's own session.
_TURN_OF: contextvars.ContextVar[str] = contextvars.ContextVar("harness_web_turn")


@dataclass(slots=True)
class WebRuntime:
    """What the web host needs from its composition root (the CLI's `serve`)."""

    store: SessionStore
    tools: ToolRegistry
    snapshot_fields: Callable[[], list[tuple[str, SnapshotFields]]]
    make_model: Callable[[str | None], Model]  # a spec, or None for the default; raises
    default_model: str | None
    max_steps: int
    system_prompt: str | None
    cwd: str
    demo_prompt: str | None = None  # the embedded demo's prompt, offered when no model is set
    # when a turn compacts, for the model it runs (the settings' compact_at, context_window)
    compaction: Callable[[Model], CompactionPolicy] = lambda model: CompactionPolicy()
    # the approval policy, given the hub's way to ask (the page): `App.approval`
    approval: Callable[[Asker], Approval] = lambda asker: Approval()
    # whether turns on this model spec run without asking: the embedded demo, whose commands
    # are fixed and harmless
    hands_free: Callable[[str | None], bool] = lambda spec: False


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
    """One session the server knows: its reader, snapshot, subscribers and queue."""

    reader: SessionLog
    snapshot: SessionSnapshot
    subscribers: set[asyncio.Queue[Message]] = field(default_factory=set)
    queue: list[tuple[str, str | None]] = field(default_factory=list)
    agent: Agent | None = None
    worker: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    players: dict[str, Model] = field(default_factory=dict)
    spec: str | None = None  # the model the session was created with
    shipped: dict[str, Any] = field(default_factory=dict)  # the last snapshot sent
    questions: dict[str, _Question] = field(default_factory=dict)  # open ones, by call id
    asked: set[str] = field(default_factory=set)  # every call id asked about, open or not


class Hub:
    """Every session the web host serves, by id."""

    def __init__(self, runtime: WebRuntime) -> None:
        self.runtime = runtime
        self._live: dict[str, _Live] = {}
        self.approval = runtime.approval(self.ask)

    # -- sessions --------------------------------------------------------------------------

    def live(self, session_id: str) -> _Live:
        """The session's live state, opened (and replayed once) on first use."""
        live = self._live.get(session_id)
        if live is None:
            reader = self.runtime.store.open(session_id, writable=False)
            snapshot = SessionSnapshot(self.runtime.snapshot_fields())
            for event in reader.events:
                snapshot.apply(event)
            live = self._live[session_id] = _Live(reader, snapshot)
        else:
            self.pump(session_id)
        return live

    async def create(self, spec: str | None) -> str:
        """A new session on `spec`; a model that cannot be built raises before it exists."""
        model = await self._build(spec)
        runtime = self.runtime
        with runtime.store.create(system_prompt=runtime.system_prompt, cwd=runtime.cwd) as log:
            session_id = log.session_id
        live = self.live(session_id)
        live.spec, live.players[spec or ""] = spec, model
        return session_id

    def page(self, session_id: str, *, limit: int, before: int | None) -> dict[str, Any]:
        """A history page: the tail with its snapshot, or an older page without one."""
        live = self.live(session_id)
        events = live.reader.events
        end = len(events) if before is None else bisect.bisect_left(events, before, key=seq_of)
        start = max(0, end - limit)
        page = events[start:end]
        return {
            "events": [event.to_json() for event in page],
            "before": page[0].seq if start > 0 else None,
            "snapshot": self.snapshot(live) if before is None else None,
            "rows": self.rows(live, page),
        }

    def rows(self, live: _Live, events: Sequence[Event]) -> dict[str, dict[str, Any]]:
        """The tool rows of the calls that `events` make or answer, by call id."""
        calls = {str(e.data.get("call_id")) for e in events if e.type == "tool/result"}
        calls |= {
            str(call.get("id"))
            for e in events
            if e.type == "message/assistant"
            for call in e.data.get("tool_calls") or ()
            if isinstance(call, dict)
        }
        known = live.snapshot.conversation.rows
        return {call: self.row(known[call]) for call in calls if call in known}

    def snapshot(self, live: _Live) -> dict[str, Any]:
        return {
            "seq": live.snapshot.seq,
            **live.snapshot.fields(),
            "running": live.worker is not None,
            "queued": [prompt for prompt, _ in live.queue],
            "approvals": [question.to_json() for question in live.questions.values()],
        }

    # -- fan-out ---------------------------------------------------------------------------

    def pump(self, session_id: str) -> None:
        """Catch up with the file and send every new event, then a changed snapshot."""
        live = self._live[session_id]
        for event in live.reader.refresh():
            change = live.snapshot.apply(event)
            self._send(live, ("event", event.to_json()))
            rows = change.entry.rows if change.entry is not None else []
            for row in [change.row] if change.row is not None else rows:
                self._send(live, ("row", self.row(row)))
        self.ship_snapshot(live)

    def row(self, row: ToolRow) -> dict[str, Any]:
        """A tool row as the page shows it: the tool's own one-line call and result."""
        tools = self.runtime.tools
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
        }

    def ship_snapshot(self, live: _Live) -> None:
        snapshot = self.snapshot(live)
        if {k: v for k, v in snapshot.items() if k != "seq"} != {
            k: v for k, v in live.shipped.items() if k != "seq"
        }:
            live.shipped = snapshot
            self._send(live, ("snapshot", snapshot))

    def _send(self, live: _Live, message: Message) -> None:
        for queue in list(live.subscribers):
            queue.put_nowait(message)

    def subscribe(self, session_id: str) -> tuple[asyncio.Queue[Message], list[Event]]:
        """A queue of what comes next, and every event so far (to resend what a client lacks)."""
        live = self.live(session_id)
        queue: asyncio.Queue[Message] = asyncio.Queue()
        live.subscribers.add(queue)
        if live.watcher is None and live.worker is None:
            live.watcher = asyncio.create_task(self._watch(session_id))
        return queue, live.reader.events

    def unsubscribe(self, session_id: str, queue: asyncio.Queue[Message]) -> None:
        live = self._live.get(session_id)
        if live is not None:
            live.subscribers.discard(queue)

    async def _watch(self, session_id: str) -> None:
        """Follow a file another process may write, while anyone listens."""
        live = self._live[session_id]
        try:
            while live.subscribers:
                await asyncio.sleep(WATCH_INTERVAL)
                if live.worker is None:  # our own writer pumps as it appends
                    self.pump(session_id)
        finally:
            live.watcher = None

    # -- turns -----------------------------------------------------------------------------

    async def submit(self, session_id: str, prompt: str, spec: str | None) -> dict[str, Any]:
        """Start the prompt as a turn, or queue it behind the running one."""
        live = self.live(session_id)
        model_spec = spec or live.spec
        key = model_spec or ""
        if key not in live.players:  # a spec that cannot be built fails here, not later
            live.players[key] = await self._build(model_spec)
        if live.worker is not None:
            live.queue.append((prompt, model_spec))
            self.ship_snapshot(live)
            return {"queued": len(live.queue)}
        log = self.runtime.store.open(session_id)  # SessionLocked: another process writes it
        live.queue.append((prompt, model_spec))
        turn = _next_turn(live.reader)
        live.worker = asyncio.create_task(self._work(session_id, log))
        return {"turn": turn}

    def cancel(self, session_id: str) -> bool:
        live = self.live(session_id)
        if live.agent is None or live.agent.turn is None:
            return False
        live.agent.cancel()
        return True

    # -- approval --------------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> Answer:
        """The agents' Asker: open the question on the page of the turn, wait for a click.

        A cancel while it waits raises here; the question closes and the loop answers the
        call "interrupted".
        """
        session_id = _TURN_OF.get()
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

    def answer(self, session_id: str, call_id: str, answer: Answer) -> None:
        """Answer an open question; NotWaiting when none is open for `call_id`."""
        live = self.live(session_id)
        question = live.questions.get(call_id)
        if question is None or question.answer.done():
            known = call_id in live.asked or call_id in live.snapshot.conversation.rows
            state = "is not waiting for an answer" if known else "is not a call of this session"
            raise NotWaiting(f"call {call_id} {state}", known=known)
        question.answer.set_result(answer)

    async def _build(self, spec: str | None) -> Model:
        """A new model for `spec`, built off the event loop: building one may read a file."""
        return await asyncio.to_thread(self.runtime.make_model, spec)

    async def _work(self, session_id: str, log: SessionLog) -> None:
        """Run the queue's prompts in order on one writer, then let the session go."""
        live = self._live[session_id]
        _TURN_OF.set(session_id)  # this task's context: the turns it runs ask on this page
        try:
            with log:
                log.listeners.append(lambda _event: self.pump(session_id))
                while live.queue:
                    prompt, spec = live.queue.pop(0)
                    self.ship_snapshot(live)
                    await self._turn(live, log, prompt, spec)
        except Exception:
            logger.exception("session %s: the turn queue stopped", session_id)
        finally:
            live.worker, live.agent = None, None
            live.queue.clear()
            with contextlib.suppress(Exception):
                self.pump(session_id)

    async def _turn(self, live: _Live, log: SessionLog, prompt: str, spec: str | None) -> None:
        model = live.players[spec or ""]  # built by submit; a scripted one goes on where it was

        def delta(kind: str, text: str) -> None:
            self._send(live, ("delta", {"kind": kind, "text": text}))

        runtime = self.runtime
        live.agent = Agent(
            log,
            _Yielding(model),
            runtime.tools,
            max_steps=runtime.max_steps,
            on_delta=delta,
            store=runtime.store,
            compaction=runtime.compaction(model),
            approval=Approval("auto") if runtime.hands_free(spec) else self.approval,
        )
        await live.agent.run_turn(prompt)


class _Yielding:
    """A model that lets the event loop run before each step.

    A scripted or cached model answers without awaiting anything, so a long turn would keep
    the loop to itself and every subscriber's stream would wait for the whole turn: yielding
    once a step lets the streams send what the step appended.
    """

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.context_window = getattr(inner, "context_window", None)  # for compaction

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        await asyncio.sleep(0)
        return await self.inner.respond(messages, tools, on_delta)


def seq_of(event: Event) -> int:
    return event.seq


def _next_turn(reader: SessionLog) -> int:
    last = reader.latest(("turn/start",))
    return (last.turn or 0) + 1 if last is not None else 1
