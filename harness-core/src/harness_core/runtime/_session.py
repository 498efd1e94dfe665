"""One session a host drives: its writer, its models, its agent, its turn queue.

    session = runtime.open(id_or_None, model, approval=..., hold=...)
    session.observe(on_event, on_delta)      the stream of changes a host renders
    outcome = await session.run(prompt)      turns run one at a time, in submission order
    await session.submit(prompt)             the same, without waiting for the turn (a web request)
    session.cancel()                         the running turn ends `cancelled`
    session.abandon()                        the running turn stops and stays open (TurnAbandoned)
    await session.go_on()                    a crashed turn goes on (opened with go_on=True)
    await session.aclose()                   models closed, writer let go

Every host (the terminal, the web host, the ACP bridge) runs turns through this and nothing
else: none of them builds an `Agent`. A turn a crashed process left open is closed as soon as
the writer is taken, before anything else runs on it.

Taking the writer (a replay of the whole session) and letting it go (a last commit) run in
worker threads, one at a time (`_writer`), like the agent's commits: the event loop a host
serves other sessions on never waits for the store.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread

from ..log import EventSink, SessionLog

if TYPE_CHECKING:
    from ..log import Event
    from ..loop import Agent, Approval, TurnOutcome
    from ..models import DeltaSink, Model
    from ..tools import ToolRegistry
    from ._runtime import Runtime

__all__ = ["ApprovalFor", "ModelFactory", "SessionRuntime"]

logger = logging.getLogger("harness.runtime")

# The approval a turn on a model spec runs under (None: the session's own model).
ApprovalFor = Callable[[str | None], "Approval"]
# A model spec (None: the host's default) -> a new model for it; raises when it cannot.
ModelFactory = Callable[[str | None], "Model"]


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

    def observe(self, on_event: EventSink | None = None, on_delta: DeltaSink | None = None) -> None:
        """Report every event this session's turns append (a subagent's session's too: the
        sink gets the log it went to) and every streamed chunk, as they happen."""
        if on_event is not None:
            self._event_sinks.append(on_event)
        if on_delta is not None:
            self._delta_sinks.append(on_delta)

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

        The writer is taken here when the session was idle (off the event loop), so a
        session another process writes is refused (SessionLocked) before anything is
        queued; the model for `spec` must be ready (`await model_for(spec)`), so only the
        turn itself can fail. A session working in a system place is refused here too
        (SetupError), not in the task.
        """
        model = self._models[spec or self.default_spec]
        busy = self.busy
        queued = self._enqueue(prompt, spec)  # busy from here: a submit meanwhile queues
        if busy:  # the writer is held, or being taken, for the turn before: checked there
            answer = {"queued": len(self.queued)}
        else:
            try:
                agent = await self._agent(model)
                self.runtime.check_workspace(agent.cwd)
            except BaseException:
                self._waiting.remove(queued)
                if not self._hold and not self.busy:
                    await self._let_go()
                raise
            answer = {"turn": agent.session.next_turn}
        queued.submitted = True
        task = _spawn(self._in_turn(queued, model))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return answer

    def _enqueue(self, prompt: str, spec: str | None) -> _Queued:
        queued = _Queued(prompt, spec)
        self._waiting.append(queued)
        return queued

    async def _in_turn(self, queued: _Queued, model: Model) -> TurnOutcome:
        try:
            async with self._turns:
                if queued.dropped:
                    from ..loop import TurnOutcome

                    return TurnOutcome("cancelled", error="removed from the queue")
                self._waiting.remove(queued)
                return await self._turn(queued.prompt, queued.spec, model)
        finally:
            if queued in self._waiting:  # cancelled while it waited
                self._waiting.remove(queued)
            if not self._hold and not self.busy:
                await self._let_go()

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
        button, pressed as the turn begins); False when none runs or is about to."""
        if self.agent is None or not self.busy:
            return False
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
        """Close every model, let the writer go, and run the host's closers."""
        for task in list(self._tasks):
            task.cancel()
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

    async def _turn(self, prompt: str, spec: str | None, model: Model) -> TurnOutcome:
        agent = await self._ready(spec, model)
        self.running = True
        try:
            return await agent.run_turn(prompt)
        finally:
            self.running = False

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
                return self.agent
            log = await anyio.to_thread.run_sync(self.runtime.store.open, self.id)
            agent = self._build(model, log)
        if self._repair:
            await agent.arepair()
        return agent

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

    async def _let_go(self) -> None:
        """Commit what is left and release the writer, in a worker thread; a take waits."""
        with anyio.CancelScope(shield=True):  # also from a cancelled turn's task
            async with self._writer:
                log, self.log, self.agent = self.log, None, None
                if log is not None:
                    await anyio.to_thread.run_sync(log.close)

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

    __slots__ = ("dropped", "prompt", "spec", "submitted")

    def __init__(self, prompt: str, spec: str | None) -> None:
        self.prompt = prompt
        self.spec = spec
        self.submitted = False  # by `submit`: nobody awaits it, so it may be dropped
        self.dropped = False


def _spawn(coroutine: Any) -> Any:
    import asyncio  # the web host's loop: submit is called from its request handlers

    return asyncio.get_running_loop().create_task(coroutine)
