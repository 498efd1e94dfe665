"""One session a host drives: its writer, its models, its agent, its turn queue.

    session = runtime.open(id_or_None, model, approval=..., hold=...)
    session.observe(on_event, on_delta)      the stream of changes a host renders
    outcome = await session.run(prompt)      turns run one at a time, in submission order
    await session.submit(prompt)             the same, answered before the turn (a web request)
    session.cancel()                         the running turn ends `cancelled`
    session.abandon()                        the running turn stops and stays open (TurnAbandoned)
    await session.go_on()                    a crashed turn goes on (opened with go_on=True)
    await session.aclose()                   models closed, writer let go

Every host (the terminal, the web host, the ACP bridge) runs turns through this and nothing
else: none of them builds an `Agent`. A turn a crashed process left open is closed as soon as
the writer is taken, before anything else runs on it.

Taking the writer (a replay of the whole session) and letting it go (a last commit) run in
worker threads, one at a time (`_writer`), like the agent's commits: the event loop a host
serves other sessions on never waits for the store. `submit` answers once the writer lock is
held (`writer_taken`), before the replay ends; whatever fails from there (a store error
mid-replay) is the turn's error, reported to the `on_failure` sinks, since nothing can be
appended to a log whose writer was never had.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import anyio.to_thread

from ..log import EventSink, SessionLog, in_thread_to_the_end, writer_taken

if TYPE_CHECKING:
    from ..log import Event
    from ..loop import Agent, Approval, TurnOutcome
    from ..models import DeltaSink, Model
    from ..tools import ToolRegistry
    from ._runtime import Runtime

__all__ = ["ApprovalFor", "FailureSink", "ModelFactory", "SessionRuntime"]

logger = logging.getLogger("harness.runtime")

# Seconds a closing session waits for its cancelled turns to end on the log.
CLOSING_TURNS: Final = 10.0

# The approval a turn on a model spec runs under (None: the session's own model).
ApprovalFor = Callable[[str | None], "Approval"]
# A model spec (None: the host's default) -> a new model for it; raises when it cannot.
ModelFactory = Callable[[str | None], "Model"]
# A submitted turn that failed before it could be logged: (its prompt, the one-line error).
FailureSink = Callable[[str, str], None]


class SessionRuntime:
    """A session's turns, run one at a time on its one writer."""

    def __init__(
        self,
        runtime: Runtime,
        session_id: str,
        model: Model | ModelFactory,
        *,
        approval: Approval | ApprovalFor | None = None,
        tools: ToolRegistry | None = None,
        hold: bool = True,
        log: SessionLog | None = None,
        go_on: bool = False,
    ) -> None:
        self.runtime = runtime
        self.id = session_id
        self.tools = tools if tools is not None else runtime.host.tools
        # One player per model spec: a scripted one goes on where the last turn left it.
        self.default_spec: str | None = None  # what a turn naming no model plays
        self._models: dict[str | None, Model] = {}
        if callable(model) and not hasattr(model, "respond"):
            self._make_model: ModelFactory = model
        else:
            self._models[None] = model  # type: ignore[assignment]
            self._make_model = runtime.model
        self._approval = approval
        self._hold = hold
        self._repair = not go_on  # a crashed turn is closed on taking the writer, or left for go_on
        self._event_sinks: list[EventSink] = []
        self._delta_sinks: list[DeltaSink] = []
        self._failure_sinks: list[FailureSink] = []
        self._taken: asyncio.Future[None] | None = None  # a submit waiting for the writer lock
        self._taking: _Queued | None = None  # the prompt it is for
        self._cancel_next = False  # a cancel while the writer was being taken
        self._closers: list[Callable[[], object]] = []
        self._waiting: list[_Queued] = []  # prompts submitted and not started, in order
        self._turns = anyio.Lock()  # fair: turns start in the order they were submitted
        self._writer = anyio.Lock()  # taking and letting go of the writer, one at a time
        self._tasks: set[Any] = set()
        self.log: SessionLog | None = None
        self.agent: Agent | None = None
        self.running = False
        if log is not None or hold:
            # A host that holds the session opens it before its loop serves anyone else.
            agent = self._build(self._models.get(None), log or runtime.store.open(session_id))
            if self._repair:
                agent.repair()
            if not hold:
                self._close_now()

    # -- what hosts see --------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A turn runs, or one submitted is about to start."""
        return self.running or bool(self._waiting)

    @property
    def queued(self) -> list[str]:
        """Prompts waiting behind the running turn (or the one about to start), in order."""
        return [queued.prompt for queued in self._pending]

    @property
    def _pending(self) -> list[_Queued]:
        # The one a turn is about to start for is no longer waiting: `queued` shows the
        # rest and `unqueue` counts positions in them.
        return self._waiting if self.running else self._waiting[1:]

    def observe(
        self,
        on_event: EventSink | None = None,
        on_delta: DeltaSink | None = None,
        on_failure: FailureSink | None = None,
    ) -> None:
        """Report every event this session's turns append (a subagent's session's too: the
        sink gets the log it went to), every streamed chunk, as they happen, and every
        submitted turn that failed once its writer lock was held but before its log could
        say so (`on_failure`: the replay failed, so no writer could be had)."""
        if on_event is not None:
            self._event_sinks.append(on_event)
        if on_delta is not None:
            self._delta_sinks.append(on_delta)
        if on_failure is not None:
            self._failure_sinks.append(on_failure)

    def set_approval(self, approval: Approval | ApprovalFor) -> None:
        """How the session's turns are approved from now on (a host whose asker needs the
        session first, like the ACP bridge's)."""
        self._approval = approval
        if self.agent is not None and not callable(approval):
            self.agent.approval = approval

    def on_close(self, closer: Callable[[], object]) -> None:
        """Call `closer` when the session closes (a host's per-session resources)."""
        self._closers.append(closer)

    # -- turns -----------------------------------------------------------------------------

    async def run(self, prompt: str, spec: str | None = None) -> TurnOutcome:
        """Run `prompt` as the session's next turn, after every turn submitted before it.

        `spec` names another model for this turn (a session keeps one player per spec, so a
        scripted one goes on where it stopped). A cancel while it waits drops it unrun.
        """
        model = await self.model_for(spec)
        return await self._in_turn(self._enqueue(prompt, spec), model)

    async def submit(self, prompt: str, spec: str | None = None) -> dict[str, int]:
        """Start `prompt` as a turn, or queue it: `{"turn": n}` or `{"queued": position}`.

        When the session was idle, this answers once its writer lock is held, before the
        replay of the log ends (off the event loop): a session another process writes is
        refused (SessionLocked) with nothing queued, and so is one the store cannot open
        (SessionNotFound, NotASession). The model for `spec` must be ready (`await
        model_for(spec)`); a session working in a system place is refused (SetupError).
        What fails once the writer lock is held is the turn's: a turn that ends in error on
        its log, or, when nothing could be logged (the replay failed), a report to the
        `on_failure` sinks.
        """
        model = self._models[spec or self.default_spec]
        busy = self.busy
        queued = self._enqueue(prompt, spec)  # busy from here: a submit meanwhile queues
        if busy:  # the writer is held, or being taken, for the turn before: checked there
            queued.answered = True
            self._start(queued, model)
            return {"queued": len(self.queued)}
        try:
            await self._check_workspace()
        except BaseException:
            self._waiting.remove(queued)
            raise
        taken = self._taken = asyncio.get_running_loop().create_future()
        self._taking = queued
        if self.agent is not None:
            self._took()
        task = self._start(queued, model)
        await asyncio.wait((taken, task), return_when=asyncio.FIRST_COMPLETED)
        if task.cancelled():
            task.result()  # raises CancelledError: the host is closing
        if queued.refusal is not None:  # before the writer lock was held: the request's
            raise queued.refusal
        return {"turn": await self._turn_number(queued)}

    def _start(self, queued: _Queued, model: Model) -> asyncio.Task[TurnOutcome]:
        queued.submitted = True
        # asyncio's: submit is called from the web host's request handlers
        task = asyncio.get_running_loop().create_task(self._in_turn(queued, model))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _check_workspace(self) -> None:
        """SetupError, before the turn is taken, when the session works in a system place
        (`Runtime.check_workspace`): its session/start from the store's tail query, not a
        replay."""
        if self.agent is not None:
            cwd = self.agent.cwd
        else:
            start = await anyio.to_thread.run_sync(
                self.runtime.store.latest, self.id, ("session/start",)
            )
            named = start.data.get("cwd") if start is not None else None
            cwd = named if isinstance(named, str) and named else None
        self.runtime.check_workspace(cwd)

    async def _turn_number(self, queued: _Queued) -> int:
        """The number of the turn `queued` is or will be, the writer lock held (nobody else
        appends): its own once it began, else one past the newest turn/start, from the
        replayed writer or, while it replays, the store's tail query."""
        if queued.turn is None and self.agent is None:
            latest = await anyio.to_thread.run_sync(
                self.runtime.store.latest, self.id, ("turn/start",)
            )
            if queued.turn is None:  # the turn did not begin meanwhile
                return (latest.turn or 0) + 1 if latest is not None else 1
        if queued.turn is not None:
            return queued.turn
        assert self.agent is not None
        return self.agent.session.next_turn

    def _enqueue(self, prompt: str, spec: str | None) -> _Queued:
        queued = _Queued(prompt, spec)
        self._waiting.append(queued)
        return queued

    async def _in_turn(self, queued: _Queued, model: Model) -> TurnOutcome:
        from ..loop import TurnOutcome

        try:
            async with self._turns:
                if queued.dropped:
                    return TurnOutcome("cancelled", error="removed from the queue")
                self._waiting.remove(queued)
                return await self._turn(queued, model)
        except Exception as exc:
            if not queued.submitted:
                raise  # `run`'s caller gets it
            if not queued.answered:  # `submit` refuses the request with it
                queued.refusal = exc
                return TurnOutcome("error", error=str(exc))
            return TurnOutcome("error", error=self._failed(queued.prompt, exc))
        finally:
            if queued in self._waiting:  # cancelled while it waited
                self._waiting.remove(queued)
            if not self._hold and not self.busy:
                await self._let_go(if_idle=True)

    async def go_on(self, spec: str | None = None) -> TurnOutcome | None:
        """Go on with the turn a crashed process left open, from where its log stops
        (`Agent.resume_turn`), playing the model for `spec`; None when no turn is open.

        For a session opened with `go_on=True`, whose open turn was not closed on taking the
        writer: a host that runs queued turns, when the process running one died.
        """
        model = await self.model_for(spec)
        async with self._turns:
            agent = await self._ready(spec, model)
            self.running = True
            try:
                return await agent.resume_turn()
            finally:
                self.running = False
                if not self._hold:
                    await self._let_go()

    def unqueue(self, position: int, prompt: str) -> bool:
        """Drop the prompt `queued` lists at `position` (1-based), if it is still `prompt`
        there and was submitted (`submit`); False when the queue changed meanwhile (it
        started, or moved) and nothing was dropped."""
        waiting = self._pending
        if not 1 <= position <= len(waiting):
            return False
        queued = waiting[position - 1]
        if queued.prompt != prompt or not queued.submitted:
            return False
        queued.dropped = True  # its task wakes with the lock, sees this and runs nothing
        self._waiting.remove(queued)
        return True

    def cancel(self) -> bool:
        """Cancel the running turn, or the one submitted and about to start (a host's stop
        button, pressed as the turn begins, its writer maybe still replaying); False when
        none runs or is about to."""
        if not self.busy:
            return False
        if self.agent is None:
            self._cancel_next = True  # the turn ends `cancelled` as soon as it begins
        else:
            self.agent.cancel()
        return True

    def interrupt(self) -> None:
        """Ctrl-C: cancel the running turn, or the next one when it has not started yet."""
        if self.agent is not None:
            self.agent.cancel()

    def abandon(self) -> None:
        """Stop the running turn and leave it open for another process to go on with; it
        raises TurnAbandoned, and so does every later turn (`Agent.abandon`). A host that
        hands its unfinished turns on when it stops (harness-worker) does this."""
        if self.agent is not None:
            self.agent.abandon()

    async def compact(self) -> int | None:
        """Compact the history by hand: the number of events summarized, None when cancelled."""
        model = await self.model_for(None)
        async with self._turns:
            agent = await self._agent(model)
            try:
                return await agent.compact()
            finally:
                if not self._hold:
                    await self._let_go()

    async def model_for(self, spec: str | None) -> Model:
        """The session's player for `spec` (None: `default_spec`), built off the event loop on
        first use (building one may read a file); raises what building it raised."""
        key = spec or self.default_spec
        model = self._models.get(key)
        if model is None:
            model = await anyio.to_thread.run_sync(self._make_model, key)
            if key in self._models:  # built meanwhile by another request: keep one player
                await model.aclose()
            model = self._models.setdefault(key, model)
        return model

    def adopt(self, spec: str | None, model: Model) -> None:
        """Play `model` for `spec` (a host that built it already, to check the spec)."""
        self._models[spec or self.default_spec] = model

    async def aclose(self) -> None:
        """Cancel the turns, close every model, let the writer go, and run the host's closers.

        A cancelled turn still ends on its log (its open calls answered as interrupted, then
        `turn/end` cancelled, committed): the writer goes only once it has, or once
        CLOSING_TURNS seconds passed. It went at once before, and a turn cut off as the
        server stopped was left open on its log, its last appends refused."""
        turns = list(self._tasks)
        for task in turns:
            task.cancel()
        if turns:
            await asyncio.wait(turns, timeout=CLOSING_TURNS)
        for model in self._models.values():
            try:
                await model.aclose()
            except Exception:
                logger.debug("closing model %s failed", model.name, exc_info=True)
        await self._let_go()
        for closer in self._closers:
            with contextlib.suppress(Exception):
                closer()

    # -- the writer ------------------------------------------------------------------------

    async def _turn(self, queued: _Queued, model: Model) -> TurnOutcome:
        self.running = True  # from here, while the writer may still be replaying
        try:
            agent = await self._ready(queued.spec, model)
            queued.turn = agent.session.next_turn  # what `submit` answers, if it still asks
            if self._cancel_next:
                self._cancel_next = False
                agent.cancel()
            return await agent.run_turn(queued.prompt)
        finally:
            self.running = False

    def _failed(self, prompt: str, exc: Exception) -> str:
        """Report a submitted turn that failed before its log could say so; its one line."""
        message = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        logger.warning("session %s: a turn failed before it began: %s", self.id, message)
        for sink in list(self._failure_sinks):
            sink(prompt, message)
        return message

    async def _ready(self, spec: str | None, model: Model) -> Agent:
        """The agent on the writer, playing `model` under the approval for `spec`; a
        SetupError, before anything runs, when its working directory is a system place the
        sandbox must not make writable."""
        agent = await self._agent(model)
        self.runtime.check_workspace(agent.cwd)
        agent.model = model
        agent.compaction = self.runtime.compaction(model)
        if self._approval is not None:
            chosen = spec or self.default_spec
            agent.approval = self._approval(chosen) if callable(self._approval) else self._approval
        return agent

    async def _agent(self, model: Model) -> Agent:
        """The agent on the writer, the writer taken first when it is not held: opened (a
        replay) in a worker thread, SessionLocked when another process holds it, and a turn
        a crashed process left open closed before anything else runs on it."""
        async with self._writer:
            if self.agent is not None:
                self._took()
                return self.agent
            loop = asyncio.get_running_loop()
            log = await anyio.to_thread.run_sync(self._open_writer, loop)
            agent = self._build(model, log)
            self._took()  # a store whose open never replays
        if self._repair:
            await agent.arepair()
        return agent

    def _open_writer(self, loop: asyncio.AbstractEventLoop) -> SessionLog:
        """The store's writer (in a worker thread); a submit hears when its lock is held."""
        with writer_taken(lambda: loop.call_soon_threadsafe(self._took)):
            return self.runtime.store.open(self.id)

    def _took(self) -> None:
        """The writer lock is held: the submit waiting for it answers, and whatever fails
        from here is its turn's error (`_in_turn`), not the request's."""
        taken, self._taken = self._taken, None
        queued, self._taking = self._taking, None
        if queued is not None:
            queued.answered = True
        if taken is not None and not taken.done():
            taken.set_result(None)

    def _build(self, model: Model | None, log: SessionLog) -> Agent:
        """The agent on the writer `log`, playing `model` until a turn names its own."""
        from ..loop import Agent

        self.log = log
        runtime = self.runtime
        model = model if model is not None else _NoModelYet()
        self.agent = Agent(
            self.log,
            model,
            self.tools,
            max_steps=runtime.max_steps(),
            store=runtime.store,
            on_event=self._event,
            on_delta=self._delta,
            compaction=runtime.compaction(model),
            approval=None if callable(self._approval) else self._approval,
        )
        return self.agent

    async def _let_go(self, *, if_idle: bool = False) -> None:
        """Commit what is left and release the writer, in a worker thread; a take waits.
        `if_idle`: unless a turn was submitted meanwhile, which goes on with the writer."""
        with anyio.CancelScope(shield=True):  # also from a cancelled turn's task
            async with self._writer:
                if if_idle and self.busy:
                    return
                log, self.log, self.agent = self.log, None, None
                if log is not None:
                    await in_thread_to_the_end(log.close)

    def _close_now(self) -> None:
        """`_let_go` before any event loop serves (a session opened and let go at once)."""
        if self.log is not None:
            self.log.close()
        self.log, self.agent = None, None

    def _event(self, log: SessionLog, event: Event) -> None:
        for sink in list(self._event_sinks):
            sink(log, event)

    def _delta(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        for sink in list(self._delta_sinks):
            sink(kind, chunk)


class _NoModelYet:
    """The model of an agent taken before any turn chose one (a repair needs none)."""

    name = "none"
    context_window = None
    remaining = None

    async def respond(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no model was chosen for this turn")

    async def aclose(self) -> None:
        return None


class _Queued:
    """A prompt waiting for its turn (compared by identity: the same text may wait twice)."""

    __slots__ = ("answered", "dropped", "prompt", "refusal", "spec", "submitted", "turn")

    def __init__(self, prompt: str, spec: str | None) -> None:
        self.prompt = prompt
        self.spec = spec
        self.submitted = False  # by `submit`: nobody awaits it, so it may be dropped
        self.answered = False  # queued, or its writer lock held: a failure is the turn's
        self.dropped = False
        self.turn: int | None = None  # its number, once it began
        self.refusal: Exception | None = None  # what failed it before that: the request's
