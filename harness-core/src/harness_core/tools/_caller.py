"""What a tool may use of the agent that calls it (`exec_ctx.agent`).

Tools see this protocol, never the loop: the loop imports tools, so a tool that imported the
loop back would close an import circle. `harness_core.loop.Agent` implements it; an embedding
host may hand tools its own implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..log import TurnStatus

__all__ = ["CallingAgent", "ChildOutcome"]


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """How a child agent's turn ended: its session, status, and final answer or error."""

    session_id: str
    status: TurnStatus
    text: str | None = None
    error: str | None = None


class CallingAgent(Protocol):
    """The calling agent, as far as a tool may use it."""

    @property
    def session_id(self) -> str:
        """The caller's session."""
        ...

    @property
    def cwd(self) -> str | None:
        """The working directory the caller's session started in (session/start `cwd`)."""
        ...

    @property
    def depth(self) -> int:
        """How deeply nested the caller is: 0 for a host's agent, 1 for its subagent, ..."""
        ...

    def append(self, type: str, payload: BaseModel | dict[str, Any]) -> None:
        """Append an event to the caller's session, inside its open turn."""
        ...

    async def run_child(self, task: str, *, call_id: str | None = None) -> ChildOutcome:
        """Run `task` as one turn of a child agent on a new session that names this one."""
        ...
