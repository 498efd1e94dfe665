"""What a tool is: a name, a description, a pydantic argument model and an async execute."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from ._caller import CallingAgent

__all__ = ["Effect", "ExecContext", "RawArguments", "Tool", "ToolResult"]

ArgsT = TypeVar("ArgsT", bound=BaseModel)

# What a call may change. "log_only": only the calling session's log (todo_write);
# "read_only": nothing; "outside": anything else (files, processes, the network, another
# system). The approval policy asks only about "outside" calls.
Effect = Literal["log_only", "read_only", "outside"]


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


class RawArguments(BaseModel):
    """The arguments of a tool with a `json_schema`: every key kept, as the model sent it."""

    model_config = ConfigDict(extra="allow")


class Tool(ABC, Generic[ArgsT]):
    """A model-callable tool. Subclasses set the class attributes and implement `execute`."""

    # Usually class attributes; a tool that wraps another system's tools (an MCP server's)
    # names and describes each instance.
    name: str
    description: str
    arguments: ClassVar[type[BaseModel]]
    # None: the schema is derived from `arguments` and sent strict. A dict: a schema someone
    # else owns (an MCP server's), sent non-strict because strict mode rejects most of them;
    # the registry checks the arguments against it with jsonschema before the call, and
    # `arguments` must then be RawArguments.
    json_schema: dict[str, Any] | None = None
    # An exclusive tool never runs beside another call of the same assistant message: its
    # calls run alone, in call order (todo_write is one: the later list must win).
    exclusive: ClassVar[bool] = False
    # Unless a tool says otherwise, it may change anything: approval asks before it runs,
    # and the loop makes the assistant message durable first, so after a crash the log
    # knows which calls were made. A log-only call needs neither: a crash loses the call and
    # its effect together, which leaves a consistent log, and the step saves an fsync.
    effect: ClassVar[Effect] = "outside"

    @abstractmethod
    async def execute(self, args: ArgsT, exec_ctx: ExecContext) -> ToolResult:
        """Run the call. Raise for unexpected failures; the registry reports them."""

    def present_call(self, args: ArgsT) -> str:
        """One short line describing the call, for hosts."""
        return self.name

    def present_approval(self, args: ArgsT) -> str | None:
        """What a person must see to approve the call, beyond its one line (bash: the whole
        command); None when the one line says it all."""
        return None

    def present_result(self, result: ToolResult) -> str | None:
        """A compact rendering of the result for hosts; None to show nothing extra."""
        return None
