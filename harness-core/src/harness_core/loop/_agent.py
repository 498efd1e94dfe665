"""The agent loop: one turn of model calls and tool calls, every step on the log.

turn/start, message/user
repeat up to max_steps:
    model.respond(history, tools)  ->  message/assistant         commit
    no tool calls?  -> done
    run the calls (batches; exclusive ones alone)  ->  tool/result...   commit
turn/end                                                          commit
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio

from ..log import (
    INTERRUPTED_TEXT,
    AssistantMessage,
    Event,
    SessionLog,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStatus,
    Usage,
    UserMessage,
)
from ..models import DeltaSink, Model, ModelError, ModelResponse, ResponseToolCall
from ..tools import ExecContext, ToolRegistry
from ..tools import ToolResult as CallResult

__all__ = ["DEFAULT_MAX_STEPS", "Agent", "TurnOutcome"]

logger = logging.getLogger("harness.loop")

DEFAULT_MAX_STEPS: Final = 50
CRASHED_TURN: Final = "the process running this turn stopped before the turn ended"

EventSink = Callable[[SessionLog, Event], None]


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    status: TurnStatus
    text: str | None = None
    error: str | None = None
    steps: int = 0


class Agent:
    """Drives one session: a model, the tools it may call, and the log they write to."""

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
        services: dict[str, Any] | None = None,
    ) -> None:
        self.session = session
        self.model = model
        self.tools = tools
        self.max_steps = max_steps
        self.on_delta = on_delta
        self.on_event = on_event
        self.depth = depth
        # What tools may need beyond the session (the subagent tool uses the store and model).
        self.services = services or {}
        self.turn: int | None = None
        if on_event is not None:
            session.listeners.append(lambda event: on_event(session, event))

    def append(self, type: str, payload: Any) -> Event:
        """Append an event to this agent's session inside the open turn (tools use this)."""
        if self.turn is None:
            raise RuntimeError("no turn is open on this agent")
        return self.session.append(type, payload, turn=self.turn)

    async def run_turn(self, prompt: str) -> TurnOutcome:
        """Run one user turn to a text answer, the step limit, an error or cancellation."""
        self._open_turn(prompt)
        steps = 0
        try:
            while steps < self.max_steps:
                steps += 1
                response = await self.model.respond(
                    self.session.projection.request_messages(), self.tools.schemas(), self.on_delta
                )
                self._append_assistant(response)
                if not response.tool_calls:
                    return self._close_turn("completed", steps, text=response.text)
                await self._run_calls(response.tool_calls)
                self.session.commit()
            return self._close_turn("max_steps", steps, error=f"stopped after {steps} steps")
        except ModelError as exc:
            return self._close_turn("error", steps, error=str(exc))
        except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
            self._close_turn("cancelled", steps, error="cancelled")
            raise
        except BaseException as exc:
            # A log write failure or a bug: record what we can, then re-raise.
            if self.turn is not None:
                self._close_turn("error", steps, error=f"{type(exc).__name__}: {exc}")
            raise

    # -- turn structure --------------------------------------------------------------------

    def _open_turn(self, prompt: str) -> None:
        self.repair()
        last = self.session.latest(("turn/start",))
        self.turn = (last.turn or 0) + 1 if last is not None else 1
        self.session.append("turn/start", {}, turn=self.turn)
        self.append("message/user", UserMessage(text=prompt))
        self.session.commit()

    def repair(self) -> None:
        """Close a turn a crashed process left open: answer its calls, end it as `error`."""
        boundary = self.session.latest(("turn/start", "turn/end"))
        if boundary is None or boundary.type == "turn/end":
            return
        self.turn = boundary.turn
        self._close_turn("error", 0, error=CRASHED_TURN)

    def _close_turn(
        self, status: TurnStatus, steps: int, *, text: str | None = None, error: str | None = None
    ) -> TurnOutcome:
        self._answer_open_calls({})
        self.append("turn/end", TurnEnd(status=status, error=error))
        self.session.commit()
        self.turn = None
        return TurnOutcome(status, text, error, steps)

    def _append_assistant(self, response: ModelResponse) -> None:
        self.append(
            "message/assistant",
            AssistantMessage(
                text=response.text,
                tool_calls=tuple(
                    ToolCall(id=c.id, name=c.name, arguments=c.arguments)
                    for c in response.tool_calls
                ),
                reasoning_content=response.reasoning_content,
                model=response.model or self.model.name,
                usage=Usage(**response.usage) if response.usage else None,
            ),
        )
        self.session.commit()

    # -- tool calls ------------------------------------------------------------------------

    async def _run_calls(self, calls: Sequence[ResponseToolCall]) -> None:
        """Run calls in batches; append results in call order, adjacent to their message."""
        done: dict[str, CallResult] = {}
        try:
            for batch in self._batches(calls):
                async with anyio.create_task_group() as group:
                    for call in batch:
                        group.start_soon(self._run_call, call, done)
                for call in batch:
                    self._append_result(call.id, call.name, done.pop(call.id))
        finally:
            # Cancelled mid-batch: keep what finished; the turn's close interrupts the rest.
            self._answer_open_calls(done)

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

    async def _run_call(self, call: ResponseToolCall, done: dict[str, CallResult]) -> None:
        context = ExecContext(agent=self, call_id=call.id)
        done[call.id] = await self.tools.execute(call.name, call.arguments, context)

    def _append_result(self, call_id: str, tool_name: str, result: CallResult) -> None:
        self.append(
            "tool/result",
            ToolResult(
                call_id=call_id,
                tool_name=tool_name,
                text=result.text,
                is_error=result.is_error,
                data=result.data,
            ),
        )

    def _answer_open_calls(self, finished: dict[str, CallResult]) -> None:
        """Give every call of the latest assistant message a result: its own, or interrupted."""
        for call_id, tool_name in self.session.projection.pending_calls.items():
            result = finished.pop(call_id, None) or CallResult(INTERRUPTED_TEXT, is_error=True)
            self._append_result(call_id, tool_name, result)
