"""Event types: the core payload models and the registry plugins extend.

An event *type* pairs a name with a pydantic payload model and a surface flag. Surface events
are the ones `derive_messages` turns into the model's message history; everything else (turn
structure, UI state such as a todo list) rides on the log without perturbing that history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CORE_EVENT_TYPES",
    "AssistantMessage",
    "EventType",
    "EventTypeConflict",
    "EventTypeRegistry",
    "SessionStart",
    "ToolCall",
    "ToolResult",
    "TurnEnd",
    "TurnStart",
    "TurnStatus",
    "Usage",
    "UserMessage",
]


class _Payload(BaseModel):
    # Unknown keys are kept, not rejected: a newer harness may add optional fields and an
    # older reader must still fold the event.
    model_config = ConfigDict(extra="allow", frozen=True)


class SessionStart(_Payload):
    """The first event of every session."""

    id: str
    created: str
    harness_version: str
    cwd: str | None = None
    system_prompt: str | None = None
    parent_session: str | None = None
    parent_call_id: str | None = None


class TurnStart(_Payload):
    """Opens a turn; every later event up to `turn/end` belongs to it."""


TurnStatus = Literal["completed", "cancelled", "error", "max_steps"]


class TurnEnd(_Payload):
    """Closes the open turn with how it ended."""

    status: TurnStatus
    error: str | None = None


class UserMessage(_Payload):
    text: str


class ToolCall(_Payload):
    id: str
    name: str
    # The raw argument string exactly as the model produced it, so malformed JSON is kept and
    # the model's history is replayed byte for byte.
    arguments: str


class Usage(_Payload):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class AssistantMessage(_Payload):
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning_content: str | None = None
    model: str | None = None
    usage: Usage | None = None


class ToolResult(_Payload):
    call_id: str
    tool_name: str
    text: str
    is_error: bool = False
    data: Any = Field(default=None)


@dataclass(frozen=True, slots=True)
class EventType:
    """A named event type: its payload model and whether it reaches the model history.

    Only core types are rendered into messages; a plugin's type should be `surface=False`
    (UI or bookkeeping state), which is what keeps it from perturbing the model history.
    """

    name: str
    payload: type[BaseModel]
    surface: bool

    @property
    def owner(self) -> str:
        """The top-level package that defines the payload: the type's owner."""
        return self.payload.__module__.split(".", 1)[0]


CORE_EVENT_TYPES: Final[tuple[EventType, ...]] = (
    EventType("session/start", SessionStart, surface=True),
    EventType("turn/start", TurnStart, surface=False),
    EventType("turn/end", TurnEnd, surface=False),
    EventType("message/user", UserMessage, surface=True),
    EventType("message/assistant", AssistantMessage, surface=True),
    EventType("tool/result", ToolResult, surface=True),
)


class EventTypeConflict(ValueError):
    """Two owners declared the same event type name."""


class EventTypeRegistry:
    """Maps event type names to their declarations. Plugins add types; core types are fixed."""

    __slots__ = ("_types", "surface")

    def __init__(self) -> None:
        self._types: dict[str, EventType] = {t.name: t for t in CORE_EVENT_TYPES}
        # Updated in place on declare: projections hold this very set, so a type declared
        # after a log was opened is still folded (or skipped) correctly.
        self.surface: set[str] = {t.name for t in CORE_EVENT_TYPES if t.surface}

    def declare(self, event_type: EventType) -> None:
        """Add a type. Re-declaring by the same owner replaces it (a plugin reload does this)."""
        existing = self._types.get(event_type.name)
        if existing is not None and existing.owner != event_type.owner:
            raise EventTypeConflict(
                f"event type {event_type.name!r} is declared by both {existing.owner!r} "
                f"and {event_type.owner!r}; rename one of them"
            )
        self._types[event_type.name] = event_type
        if event_type.surface:
            self.surface.add(event_type.name)
        else:
            self.surface.discard(event_type.name)

    def get(self, name: str) -> EventType | None:
        return self._types.get(name)

    def names(self) -> list[str]:
        return sorted(self._types)
