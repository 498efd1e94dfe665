"""Event types: a name, a payload model and a surface flag; the registry plugins extend.

Surface events are the ones `derive_messages` turns into the model's message history;
everything else (turn structure, UI state such as a todo list) rides on the log without
perturbing that history.

This module imports no pydantic: reading a session needs the types' names and surface flags
only. A payload model may be named as `"module:Class"` and is imported when something first
asks for it (the write path validating an append), so the query commands never pay for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, cast

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._folds import History

# The history before a compaction -> what plugins carry across it.
CarryProvider = Callable[["History"], list[str]]

__all__ = [
    "CORE_EVENT_TYPES",
    "CORE_SURFACE",
    "EventType",
    "EventTypeConflict",
    "EventTypeRegistry",
]


class EventType:
    """A named event type: its payload model and whether it reaches the model history.

    `payload` is the model class, or `"package.module:Class"` to import it on first use.
    Only core types are rendered into messages, so a plugin's type must be `surface=False`
    (UI or bookkeeping state): the registry refuses anything else.
    """

    __slots__ = ("_model", "_ref", "name", "surface")

    def __init__(self, name: str, payload: type[BaseModel] | str, surface: bool) -> None:
        self.name = name
        self.surface = surface
        self._model: type[BaseModel] | None = None if isinstance(payload, str) else payload
        self._ref = payload if isinstance(payload, str) else None
        if self._ref is not None and ":" not in self._ref:
            raise ValueError(f"event type {name!r}: payload {self._ref!r} is not 'module:Class'")

    @property
    def payload(self) -> type[BaseModel]:
        """The payload model, imported on first use when it was given as a reference."""
        model = self._model
        if model is None:
            assert self._ref is not None
            module, _, qualname = self._ref.partition(":")
            found: object = importlib.import_module(module)
            for attr in qualname.split("."):
                found = getattr(found, attr)
            # Not checked here: the first append validates through it, and fails loudly.
            model = self._model = cast("type[BaseModel]", found)
        return model

    @property
    def owner(self) -> str:
        """The top-level package that defines the payload: the type's owner."""
        module = self._ref.partition(":")[0] if self._ref is not None else self.payload.__module__
        return module.split(".", 1)[0]

    @property
    def where(self) -> str:
        """`module:Class` of the payload model, without importing it."""
        return self._ref or f"{self.payload.__module__}:{self.payload.__qualname__}"

    def _key(self) -> tuple[str, str, bool]:
        return (self.name, self.where, self.surface)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EventType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"EventType({self.name!r}, {self.where!r}, surface={self.surface})"


_CORE: Final = "harness_core.log._events"

CORE_EVENT_TYPES: Final[tuple[EventType, ...]] = (
    EventType("session/start", f"{_CORE}:SessionStart", surface=True),
    EventType("turn/start", f"{_CORE}:TurnStart", surface=False),
    EventType("turn/end", f"{_CORE}:TurnEnd", surface=False),
    EventType("message/user", f"{_CORE}:UserMessage", surface=True),
    EventType("message/assistant", f"{_CORE}:AssistantMessage", surface=True),
    EventType("tool/approval", f"{_CORE}:ToolApproval", surface=False),
    EventType("tool/result", f"{_CORE}:ToolResultPayload", surface=True),
    EventType("context/compact", f"{_CORE}:ContextCompact", surface=True),
)


# The types the message projection renders; no other type may be declared surface.
CORE_SURFACE: Final = frozenset(t.name for t in CORE_EVENT_TYPES if t.surface)


class EventTypeConflict(ValueError):
    """Two owners declared the same event type name."""


class EventTypeRegistry:
    """Maps event type names to their declarations. Plugins add types; core types are fixed.

    `pending` runs once, before the first lookup: the plugin host declares the plugins' types
    there, so a command that never looks a type up (`harness sessions`) never asks them.
    `carry` asks the plugins that own the types what their state carries across a compaction
    (the plugin host passes its `harness_compaction_carry` call); sessions opened through
    this registry render it after each compaction's summary.
    """

    __slots__ = ("_carry", "_pending", "_types", "surface")

    def __init__(
        self, pending: Callable[[], None] | None = None, carry: CarryProvider | None = None
    ) -> None:
        self._types: dict[str, EventType] = {t.name: t for t in CORE_EVENT_TYPES}
        self.surface: Final = CORE_SURFACE
        self._pending = pending
        self._carry = carry

    def carried(self, history: History) -> list[str]:
        """What survives a compaction, given the history before it."""
        return self._carry(history) if self._carry is not None else []

    def _settle(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending()

    def declare(self, event_type: EventType) -> None:
        """Add a type. Re-declaring by the same owner replaces it (a plugin reload does this)."""
        existing = self._types.get(event_type.name)
        if existing is not None and existing.owner != event_type.owner:
            raise EventTypeConflict(
                f"event type {event_type.name!r} is declared by both {existing.owner!r} "
                f"and {event_type.owner!r}; rename one of them"
            )
        if event_type.surface and event_type.name not in CORE_SURFACE:
            # The message projection renders core types only: a plugin's surface type would
            # be accepted and then silently never reach the model.
            raise ValueError(
                f"event type {event_type.name!r} ({event_type.owner}) is declared surface=True, "
                "but only harness_core's own types reach the model history; declare it with "
                "surface=False"
            )
        self._types[event_type.name] = event_type

    def get(self, name: str) -> EventType | None:
        if self._pending is not None:
            self._settle()
        return self._types.get(name)

    def names(self) -> list[str]:
        self._settle()
        return sorted(self._types)
