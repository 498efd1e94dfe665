"""The agent loop: one turn of model calls and tool calls, every step on the log.

    turn/start, message/user                                        commit
    repeat up to max_steps:
        [compact when the last request neared the context window]   context/compact
        model.respond(history, tools)  ->  message/assistant        commit
          (context length exceeded: compact once, then ask again)
        no tool calls?  ->  turn/end completed
        run the calls, batch by batch  ->  tool/result...           commit per batch
    turn/end                                                        commit

A turn always ends with turn/end, and every tool call with a result: a cancelled call gets
an "interrupted" one, and a turn a crashed process left open is closed by `repair` before
the next turn starts. Every commit runs in a worker thread (`_commit`): an fsync or a
database round trip never holds the event loop a host serves other sessions on. See
docs/loop.md.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..log import (
    INTERRUPTED_TEXT,
    AssistantMessage,
    EventSink,
    SessionLog,
    ThinkingBlock,
    ToolApproval,
    ToolCall,
    ToolResultPayload,
    TurnEnd,
    TurnStart,
    TurnStatus,
    Usage,
    UserMessage,
    in_thread_to_the_end,
)
from ..models import (
    ContextLengthExceeded,
    DeltaSink,
    Model,
    ModelError,
    ModelResponse,
    ResponseToolCall,
)
from ..tools import ChildOutcome, ExecContext, Tool, ToolRegistry, ToolResult
from ._approval import Approval, ApprovalRequest, SessionGrants, denied_text
from ._compact import BY_HAND_KEEP, CompactionPolicy, request_summary

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..log import Event, Store

__all__ = [
    "CANCELLED_TEXT",
    "CRASHED_TURN",
    "DEFAULT_MAX_STEPS",
    "STOPPED_CALL_TEXT",
    "Agent",
    "TurnAbandoned",
    "TurnOutcome",
]

logger = logging.getLogger("harness.loop")

DEFAULT_MAX_STEPS: Final = 50
CANCELLED_TEXT: Final = "cancelled"
CRASHED_TURN: Final = "the process running this turn stopped before the turn ended"
# The answer to a call whose process stopped (died, or froze and was taken for dead): unlike
# a cancelled call, nothing is known of how far it got, and the model must not assume it
# did nothing.
STOPPED_CALL_TEXT: Final = (
    "Error: the tool call was interrupted: the process running it stopped before it returned "
    "a result, so the call may have run in part or in full; check what it did before running "
    "it again."
)


class TurnAbandoned(Exception):
    """What `run_turn` and `resume_turn` raise after `Agent.abandon()`: the turn is open."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended: its status, the final answer or the error, and the steps it took."""

    status: TurnStatus
    text: str | None = None
    error: str | None = None
    steps: int = 0


class Agent:
    """Drives one session: a model, the tools it may call, and the log they write to.

    It is the `CallingAgent` its tools see (`exec_ctx.agent`). `store` is where a child
    agent's session is created (the subagent tool); without it `run_child` fails.
    """

    def __init__(
        self,
        session: SessionLog,
        model: Model,
        tools: ToolRegistry,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        on_event: EventSink | None = None,
        on_delta: DeltaSink | None = None,
        depth: int = 0,
        store: Store | None = None,
        compaction: CompactionPolicy | None = None,
        approval: Approval | None = None,
        granted: frozenset[str] = frozenset(),
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.session = session
        self.model = model
        self.tools = tools
        self.max_steps = max_steps
        self.on_event = on_event
        self.on_delta = on_delta
        self.depth = depth
        self.store = store
        self.compaction = compaction or CompactionPolicy()
        self.approval = approval or Approval()
        self._grants = SessionGrants(granted)
        # One question at a time, even for calls that run side by side: an answer ("allow
        # for this session") can answer the next call's question before it is asked.
        self._deciding = anyio.Lock()
        # Held while a commit runs in its thread: an append meanwhile (a result of a call
        # that ran beside one a person just approved) waits, so a store's commit takes
        # exactly what was appended when it began.
        self._writing = anyio.Lock()
        self.turn: int | None = None
        self._turn_seq = 0  # the seq of the running turn's turn/start
        self._steps = 0
        self._scope: anyio.CancelScope | None = None
        self._cancel_pending = False
        self._abandoned = False
        self._observing = False
        self._compacting = False  # a compaction by hand is running (cancel() reaches it)
        self._auto_compact = True  # off for the rest of a turn whose compaction failed

    # -- what tools may use (CallingAgent) -------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def cwd(self) -> str | None:
        start = self.session.start
        cwd = start.data.get("cwd") if start is not None else None
        return cwd if isinstance(cwd, str) and cwd else None

    def append(self, type: str, payload: BaseModel | dict[str, Any]) -> None:
        """Append an event to this agent's session inside the open turn (tools use this)."""
        if self.turn is None:
            raise RuntimeError(f"no turn is open on session {self.session.session_id}")
        self.session.append(type, payload, turn=self.turn)

    async def run_child(self, task: str, *, call_id: str | None = None) -> ChildOutcome:
        """Run `task` as one turn of a child agent: same model and tools, its own session.

        The child's session/start names this session and `call_id`, so the tree of sessions
        can be rebuilt from the logs alone.
        """
        if self.store is None:  # a host wiring bug, not the model's: raise so it is logged
            raise RuntimeError(
                "a child agent needs the session store: build the Agent with store=store"
            )
        start = self.session.start.data if self.session.start is not None else {}
        with self.store.create(
            system_prompt=start.get("system_prompt"),
            cwd=start.get("cwd"),
            parent_session=self.session_id,
            parent_call_id=call_id,
        ) as log:
            child = Agent(
                log,
                self.model,
                self.tools,
                max_steps=self.max_steps,
                on_event=self.on_event,
                depth=self.depth + 1,
                store=self.store,
                compaction=self.compaction,
                approval=self.approval,
                granted=self._grants.tools(self.session),
            )
            outcome = await child.run_turn(task)
        return ChildOutcome(log.session_id, outcome.status, outcome.text, outcome.error)

    def cancel(self) -> None:
        """Stop the running turn (a host's stop button): it ends as `cancelled` and returns.

        With no turn running (a host's Ctrl-C that lands before the turn got going), the
        cancel is remembered: the next turn ends `cancelled` at once. Call it from the event
        loop's thread; another thread uses `anyio.from_thread`.
        """
        # No await separates entering the turn's scope from opening the turn (or closing the
        # turn from leaving it), so an open turn means its scope is the live one.
        if (self.turn is not None or self._compacting) and self._scope is not None:
            self._scope.cancel()
        else:
            self._cancel_pending = True

    def abandon(self) -> None:
        """Stop the running turn and leave it open, as a process that died leaves it, for
        another process to go on with (`resume_turn`): nothing more is appended for it (a
        call cut off gets no result; the process that goes on answers it with
        STOPPED_CALL_TEXT), and `run_turn` raises TurnAbandoned. From then on every turn of
        this agent raises it before it opens.

        For a host that hands its unfinished turns to another process when it stops
        (harness-worker): closing the turn `cancelled` would tell that process the turn is
        over. Every other host cancels. Call it from the event loop's thread.
        """
        self._abandoned = True
        if (self.turn is not None or self._compacting) and self._scope is not None:
            self._scope.cancel()

    async def run_turn(self, prompt: str) -> TurnOutcome:
        """Run one user turn to a text answer, the step limit, an error or cancellation.

        `cancel()` makes this return a `cancelled` outcome; a cancellation from outside (an
        enclosing cancel scope, Ctrl-C) closes the turn the same way and propagates.
        """
        return await self._drive(partial(self._open_turn, prompt))

    async def resume_turn(self) -> TurnOutcome | None:
        """Go on with the turn a crashed process left open, from where its log stops; None
        when no turn is open.

        Its unanswered calls are answered "interrupted" with STOPPED_CALL_TEXT (never run
        again behind the log's back: the model reads that they may have run in part or in
        full, and decides), then the turn's steps go on
        as if it had never stopped, counting those it took. A host that runs queued turns
        (harness-worker) does this when the process that ran a turn died; every other host
        closes such a turn instead (`repair`).
        """
        boundary = self._open_boundary()
        if boundary is None:
            return None
        return await self._drive(partial(self._reopen_turn, boundary))

    async def _drive(self, begin: Callable[[], Awaitable[None]]) -> TurnOutcome:
        self._ensure_idle()
        self._ensure_not_abandoned()
        with self._observed(), anyio.CancelScope() as self._scope:
            if self._cancel_pending:  # cancel() came before this turn did
                self._cancel_pending = False
                self._scope.cancel()
            await begin()
            try:
                while self._steps < self.max_steps:
                    self._steps += 1
                    # A cancel reaches the turn before each model call, and the event loop's
                    # other tasks (a host's streams) get their turn, even when the model and
                    # the tools never yield (the scripted model does not).
                    await anyio.lowlevel.checkpoint()
                    response = await self._step()
                    await self._append_assistant(response)
                    if not response.tool_calls:
                        return await self._close_turn("completed", text=response.text)
                    await self._run_calls(response.tool_calls)
                error = f"stopped after {self._steps} steps"
                return await self._close_turn("max_steps", error=error)
            except ModelError as exc:
                return await self._close_turn("error", error=str(exc) or type(exc).__name__)
            except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
                if self._abandoned:
                    self.turn = None  # left open, as it stands in the log
                    raise
                await self._close_turn("cancelled", error=CANCELLED_TEXT)
                raise
            except BaseException as exc:
                await self._close_after_failure(exc)
                raise
        # Reached only when `cancel()` or `abandon()` cancelled this turn's own scope, which
        # absorbed it.
        if self._abandoned:
            raise TurnAbandoned(f"{self.session_id}: turn left open after {self._steps} steps")
        return TurnOutcome("cancelled", error=CANCELLED_TEXT, steps=self._steps)

    async def compact(self) -> int | None:
        """Compact the session by hand, between turns: how many events it summarized.

        It summarizes the whole history (the next turn starts from the summary). The
        compaction gets a turn of its own (every event sits inside a turn), appended only
        once the summary is in: a failure (ModelError, NothingToCompact) appends nothing, and
        so does `cancel()`, which makes this return None.
        """
        self._ensure_idle()
        await self.arepair()
        with self._observed(), anyio.CancelScope() as self._scope:
            self._compacting = True
            try:
                payload = await request_summary(self.session, self.model, self.tools, BY_HAND_KEEP)
            finally:
                self._compacting = False
            turn = self.session.next_turn
            self.session.append("turn/start", TurnStart(), turn=turn)
            self.session.append("context/compact", payload, turn=turn)
            self.session.append("turn/end", TurnEnd(status="completed"), turn=turn)
            await self._commit()
            return payload.last_seq - payload.first_seq + 1
        return None  # cancel() cancelled this scope, which absorbed the cancellation

    def repair(self) -> bool:
        """Close a turn a crashed process left open: answer its calls, end it as `error`,
        commit. Whether there was anything to close. `arepair` commits off the event loop."""
        closed = self._close_crashed()
        if closed:
            self.session.commit()
        return closed

    async def arepair(self) -> bool:
        """`repair`, its commit in a worker thread (`_commit`)."""
        closed = self._close_crashed()
        if closed:
            await self._commit()
        return closed

    def _close_crashed(self) -> bool:
        """Append the end of a turn a crashed process left open (`run_turn` does this first,
        committing it with the new turn's start)."""
        if self.turn is not None:
            return False  # our own turn is running: it is open, not crashed
        boundary = self._open_boundary()
        if boundary is None:
            return False
        logger.warning("%s: closing turn %s left open", self.session.session_id, boundary.turn)
        with self._observed():
            self.turn, self._turn_seq = boundary.turn, boundary.seq
            self._steps = 0
            try:
                self._answer_open_calls({}, STOPPED_CALL_TEXT)
                self._end_turn("error", CRASHED_TURN)
            finally:
                self.turn = None
        return True

    async def _commit(self) -> None:
        """Make what was appended durable, in a worker thread: an fsync or a database round
        trip must not hold the event loop, where a host serves other sessions meanwhile.
        Shielded: a cancel waits for the commit under way, so the turn closes on a log in a
        known state; appends wait meanwhile (`_writing`)."""
        with anyio.CancelScope(shield=True):
            async with self._writing:
                await in_thread_to_the_end(self.session.commit)

    # -- turn structure --------------------------------------------------------------------

    @contextmanager
    def _observed(self) -> Iterator[None]:
        """Report this agent's appends to `on_event` while it writes (never twice)."""
        if self.on_event is None or self._observing:
            yield
            return
        # Registered per turn, not per Agent: a host that builds an Agent for every turn of
        # one session must not have each event reported once per Agent it ever built.
        listener = partial(self.on_event, self.session)
        self.session.listeners.append(listener)
        self._observing = True
        try:
            yield
        finally:
            self._observing = False
            self.session.listeners.remove(listener)

    def _ensure_idle(self) -> None:
        if self.turn is not None:
            raise RuntimeError(
                f"turn {self.turn} is still running on session {self.session.session_id}; "
                "wait for it to end (or cancel it) before starting another"
            )

    def _ensure_not_abandoned(self) -> None:
        if self._abandoned:
            raise TurnAbandoned(f"{self.session_id}: this agent's turns were abandoned")

    def _open_boundary(self) -> Event | None:
        """The turn/start of a turn left open, if the newest turn is one."""
        boundary = self.session.latest(("turn/start", "turn/end"))
        if boundary is None or boundary.type == "turn/end" or boundary.turn is None:
            # A turn/start without its number is damage, not a turn a crash left open: no
            # turn/end could name it, and the next turn/start closes it for every reader.
            return None
        return boundary

    async def _reopen_turn(self, boundary: Event) -> None:
        self.turn, self._turn_seq = boundary.turn, boundary.seq
        self._auto_compact = True
        self._steps = sum(
            1
            for event in self.session.history()
            if event.seq > boundary.seq and event.type == "message/assistant"
        )
        logger.warning(
            "%s: going on with turn %s after %d steps",
            self.session.session_id,
            boundary.turn,
            self._steps,
        )
        # A model that plays a fixed script goes on past the responses the turn already has.
        skip = getattr(self.model, "skip", None)
        if callable(skip):
            skip(self._steps)
        self._answer_open_calls({}, STOPPED_CALL_TEXT)
        await self._commit()

    async def _open_turn(self, prompt: str) -> None:
        self._close_crashed()  # committed with the new turn's start, below
        turn = self.session.next_turn
        start = self.session.append("turn/start", TurnStart(), turn=turn)
        self.turn, self._turn_seq = turn, start.seq
        self._steps, self._auto_compact = 0, True
        self.append("message/user", UserMessage(text=prompt))
        await self._commit()

    async def _close_turn(
        self, status: TurnStatus, *, text: str | None = None, error: str | None = None
    ) -> TurnOutcome:
        try:
            end = self._end_turn(status, error)
            await self._commit()
        finally:
            self.turn = None
        # The error as the log keeps it (a key a provider echoed is redacted there), so no
        # host can show more than the log holds.
        return TurnOutcome(status, text, end.data.get("error"), self._steps)

    def _end_turn(self, status: TurnStatus, error: str | None) -> Event:
        self._answer_open_calls({})
        return self.session.append("turn/end", TurnEnd(status=status, error=error), turn=self.turn)

    async def _close_after_failure(self, exc: BaseException) -> None:
        """A log write failure or a bug: record it if the log still takes writes."""
        turn = self.turn  # _close_turn forgets it even when it fails
        if turn is None:
            return
        try:
            await self._close_turn("error", error=f"{type(exc).__name__}: {exc}")
        except Exception:
            # The original exception is what the caller must see and report; this only
            # explains why the turn stays open (the next run_turn repairs it).
            logger.debug("could not close turn %s after %r", turn, exc, exc_info=True)

    # -- model calls and compaction ----------------------------------------------------------

    async def _step(self) -> ModelResponse:
        """One model call. Compacts first when the last request neared the context window,
        and once more, then asks again, when the provider says the context is too long."""
        if self._auto_compact and self._near_window():
            self._auto_compact = await self._compact_in_turn("the context window is nearly full")
        try:
            return await self._respond()
        except ContextLengthExceeded:
            if not await self._compact_in_turn("the provider said the context is too long"):
                raise
            return await self._respond()

    async def _respond(self) -> ModelResponse:
        # Tools that come late or change (MCP servers start, announce a new list) land now,
        # so this request carries the set the next call will find.
        await self.tools.ready()
        return await self.model.respond(
            self.session.projection.request_messages(),
            self.tools.schemas(),
            self._deltas if self.on_delta is not None else None,
        )

    def _near_window(self) -> bool:
        """Whether the last request's prompt tokens (provider usage) reached the limit."""
        limit = self.compaction.limit(self.model)
        if limit is None:
            return False
        last = self.session.latest(("message/assistant", "context/compact"))
        usage = last.data.get("usage") if last is not None else None
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return isinstance(tokens, int) and tokens >= limit

    async def _compact_in_turn(self, why: str) -> bool:
        """Compact inside the running turn; a failure is logged and appends nothing."""
        try:
            payload = await request_summary(
                self.session, self.model, self.tools, self.compaction.keep
            )
        except ModelError as exc:
            logger.warning("%s: compaction failed (%s): %s", self.session_id, why, exc)
            return False
        self.append("context/compact", payload)
        await self._commit()
        return True

    async def _append_assistant(self, response: ModelResponse) -> None:
        ids = [call.id for call in response.tool_calls]
        if len(set(ids)) != len(ids):
            # Results are matched to calls by id: a repeated id cannot be answered correctly.
            raise ModelError(f"model {self.model.name} sent tool calls with repeated ids {ids}")
        try:
            self.append("message/assistant", self._assistant_message(response))
        except ValueError as exc:
            # Text the log cannot store (a lone surrogate from a script or a provider's broken
            # escape): refused before anything was written, so it ends the turn as a model
            # error instead of crashing it.
            reason = str(exc).splitlines()[0]
            raise ModelError(
                f"model {self.model.name} sent a response the log cannot store: {reason}"
            ) from None
        # Durable before any tool with effects outside the log runs, so that after a crash
        # the log knows which calls were made. A response that runs none (a text answer, or
        # only log-only tools such as todo_write) is committed with what follows it, at the
        # next step boundary: a crash loses the call and its effect together.
        if any(self._reaches_outside(call.name) for call in response.tool_calls):
            await self._commit()

    def _assistant_message(self, response: ModelResponse) -> AssistantMessage:
        return AssistantMessage(
            text=response.text,
            tool_calls=tuple(
                ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in response.tool_calls
            ),
            reasoning_content=response.reasoning_content,
            model=response.model or self.model.name,
            usage=Usage(**response.usage) if response.usage else None,
            thinking=tuple(
                ThinkingBlock(text=t.text, signature=t.signature, redacted=t.redacted)
                for t in response.thinking
            )
            or None,
        )

    def _deltas(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        """Pass streamed text to the host, refusing what the log could never store.

        Checked before the host prints it: a terminal cannot print a lone surrogate either.
        """
        assert self.on_delta is not None  # passed to the model only when a host listens
        try:
            chunk.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(chunk[exc.start])
            raise ModelError(
                f"model {self.model.name} sent {kind} that is not valid Unicode "
                f"(a lone surrogate U+{code:04X}); the response was not stored"
            ) from None
        self.on_delta(kind, chunk)

    def _reaches_outside(self, name: str) -> bool:
        tool = self.tools.get(name)
        return tool is not None and tool.effect == "outside"

    # -- tool calls ------------------------------------------------------------------------

    async def _run_calls(self, calls: Sequence[ResponseToolCall]) -> None:
        """Run the batches in order; results land in call order, adjacent to their message."""
        finished: dict[str, ToolResult] = {}
        try:
            for batch in self._batches(calls):
                await self._run_batch(batch, finished)
                await self._commit()
        finally:
            # Cancelled mid-batch: calls that finished keep their result, the rest are
            # answered "interrupted", so the message history stays well formed. An abandoned
            # turn's calls are answered by whoever goes on with it.
            if not self._abandoned:
                self._answer_open_calls(finished)

    def _batches(self, calls: Sequence[ResponseToolCall]) -> list[list[ResponseToolCall]]:
        """Consecutive ordinary calls share a batch; an exclusive call is a batch of its own."""
        batches: list[list[ResponseToolCall]] = []
        current: list[ResponseToolCall] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.exclusive:
                batches += [current, [call]] if current else [[call]]
                current = []
            else:
                current.append(call)
        return [*batches, current] if current else batches

    async def _run_batch(
        self, batch: list[ResponseToolCall], finished: dict[str, ToolResult]
    ) -> None:
        """Run a batch concurrently; append each result once every earlier call's is in."""
        if len(batch) == 1:  # the common case: no task group to set up
            call = batch[0]
            finished[call.id] = await self._execute(call)
            self._append_result(call.id, call.name, finished.pop(call.id))
            return
        ready = {call.id: anyio.Event() for call in batch}

        async def run(call: ResponseToolCall) -> None:
            finished[call.id] = await self._execute(call)
            ready[call.id].set()

        async with anyio.create_task_group() as group:
            for call in batch:
                group.start_soon(run, call)
            for call in batch:
                await ready[call.id].wait()
                async with self._writing:  # not while another call's approval commits
                    self._append_result(call.id, call.name, finished.pop(call.id))

    async def _execute(self, call: ResponseToolCall) -> ToolResult:
        """Parse the call, decide whether it may run (approval), then run it."""
        parsed = self.tools.parse(call.name, call.arguments)
        if isinstance(parsed, ToolResult):
            return parsed  # a call that cannot run needs no one's approval
        tool, args = parsed
        if tool.effect == "outside":
            refused = await self._approve(call, tool, args)
            if refused is not None:
                return refused
        return await self.tools.run(tool, args, ExecContext(agent=self, call_id=call.id))

    async def _approve(
        self, call: ResponseToolCall, tool: Tool[Any], args: BaseModel
    ) -> ToolResult | None:
        """Decide the call and put the decision on the log; the refusal the model reads, or
        None when the call may run. A cancel while a person is being asked appends nothing:
        the call is then answered "interrupted" like any other cancelled call."""
        request = ApprovalRequest(
            self.session_id,
            call.id,
            tool.name,
            tool.present_call(args),
            tool.present_approval(args),
            call.arguments,
        )
        async with self._deciding:
            granted = tool.name in self._grants.tools(self.session)
            decision = await self.approval.decide(request, granted)
            self.append(
                "tool/approval",
                ToolApproval(
                    call_id=call.id,
                    decision=decision.decision,
                    by=decision.by,
                    scope=decision.scope,
                ),
            )
            # Durable before the call runs, whoever decided: on a store that keeps appends
            # until the commit (a database), a crash mid-call would otherwise lose it.
            await self._commit()
        if decision.decision == "deny":
            return ToolResult(denied_text(tool.name, decision.reason or "no reason"), True)
        return None

    def _append_result(self, call_id: str, tool_name: str, result: ToolResult) -> None:
        try:
            payload = ToolResultPayload(
                call_id=call_id,
                tool_name=tool_name,
                text=result.text,
                is_error=result.is_error,
                data=result.data,
            )
            self.append("tool/result", payload)
        except ValueError as exc:
            # The tool returned what the log cannot store (an object in `data`, a lone
            # surrogate in `text`); the append refused it before writing anything. The model
            # gets an error result instead and the turn goes on.
            logger.error("%s returned a result the log cannot store: %s", tool_name, exc)
            reason = str(exc).splitlines()[0].encode("utf-8", "replace").decode()
            self.append(
                "tool/result",
                ToolResultPayload(
                    call_id=call_id,
                    tool_name=tool_name,
                    text=f"Error: {tool_name} returned a result that cannot be stored: {reason}",
                    is_error=True,
                ),
            )

    def _answer_open_calls(
        self, finished: dict[str, ToolResult], unfinished: str = INTERRUPTED_TEXT
    ) -> None:
        """Give every call of the latest assistant message a result: its own, or `unfinished`.

        Only when that message is in this turn: in a damaged log (a turn/end lost, so a turn
        opens after an earlier one's calls), a result here would answer a call of another
        turn; the projection answers those as interrupted in every request instead.
        """
        if self.session.projection.pending_seq < self._turn_seq:
            return
        for call_id, tool_name in self.session.projection.pending_calls.items():
            result = finished.pop(call_id, None) or ToolResult(unfinished, is_error=True)
            self._append_result(call_id, tool_name, result)
