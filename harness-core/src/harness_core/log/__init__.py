"""The session log: an append-only, event-sourced JSON Lines file per session."""

from ._envelope import EnvelopeError, Event
from ._events import (
    CORE_EVENT_TYPES,
    AssistantMessage,
    EventType,
    EventTypeConflict,
    EventTypeRegistry,
    SessionStart,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    TurnStatus,
    Usage,
    UserMessage,
)
from ._file import LogWriteError, ReadOnlyLog, SessionLog
from ._invariants import InvariantViolation, dev_mode
from ._lock import SessionLocked
from ._projection import INTERRUPTED_TEXT, MessageProjection, derive_messages
from ._store import SessionNotFound, SessionStore, SessionSummary, default_home
from ._tail import find_latest, last_event

__all__ = [
    "CORE_EVENT_TYPES",
    "INTERRUPTED_TEXT",
    "AssistantMessage",
    "EnvelopeError",
    "Event",
    "EventType",
    "EventTypeConflict",
    "EventTypeRegistry",
    "InvariantViolation",
    "LogWriteError",
    "MessageProjection",
    "ReadOnlyLog",
    "SessionLocked",
    "SessionLog",
    "SessionNotFound",
    "SessionStart",
    "SessionStore",
    "SessionSummary",
    "ToolCall",
    "ToolResult",
    "TurnEnd",
    "TurnStart",
    "TurnStatus",
    "Usage",
    "UserMessage",
    "default_home",
    "derive_messages",
    "dev_mode",
    "find_latest",
    "last_event",
]
