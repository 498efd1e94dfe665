"""What a tool is: a name, a description, a pydantic argument model and an async execute."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from ._caller import CallingAgent

__all__ = ["ExecContext", "Tool", "ToolResult"]

ArgsT = TypeVar("ArgsT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call returns: the text the model reads, and optional structured data for hosts."""

    text: str
    is_error: bool = False
    data: Any = None


@dataclass(frozen=True, slots=True)
class ExecContext:
    """Who is calling: the agent (with its session), or None for a call from outside a loop."""

    agent: CallingAgent | None = None
    call_id: str | None = None


class Tool(ABC, Generic[ArgsT]):
    """A model-callable tool. Subclasses set the class attributes and implement `execute`."""

    name: ClassVar[str]
    # Usually a class attribute; a tool whose settings change what it does may set its own.
    description: str
    arguments: ClassVar[type[BaseModel]]
    # An exclusive tool never runs beside another call of the same assistant message: its
    # calls run alone, in call order (todo_write is one: the later list must win).
    exclusive: ClassVar[bool] = False
    # A log-only tool's sole effect is appending to the calling agent's session (todo_write).
    # The loop need not make the assistant message durable before running it: a crash then
    # loses the call and its effect together, which leaves a consistent log, and the step
    # saves an fsync.
    log_only: ClassVar[bool] = False

    @abstractmethod
    async def execute(self, args: ArgsT, exec_ctx: ExecContext) -> ToolResult:
        """Run the call. Raise for unexpected failures; the registry reports them."""

    def present_call(self, args: ArgsT) -> str:
        """One short line describing the call, for hosts."""
        return self.name

    def present_result(self, result: ToolResult) -> str | None:
        """A compact rendering of the result for hosts; None to show nothing extra."""
        return None
