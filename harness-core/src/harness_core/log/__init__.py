"""The session log: an append-only, event-sourced JSON Lines file per session.

The core payload models (`UserMessage`, `ToolResultPayload`, ...) are imported on first use
(PEP 562): reading a session trusts what this version wrote and never loads pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._envelope import EnvelopeError, Event
from ._file import EventSink, LogWriteError, ReadOnlyLog, SessionLog, read_lines
from ._invariants import InvariantViolation, dev_mode
from ._listing import SessionSummary
from ._lock import SessionLocked
from ._open import NotASession
from ._projection import (
    INTERRUPTED_TEXT,
    SUMMARY_HEADER,
    Carry,
    CompactionRange,
    MessageProjection,
    derive_messages,
)
from ._store import SessionNotFound, SessionStore, default_home
from ._tail import find_latest, last_event
from ._types import (
    CORE_EVENT_TYPES,
    CarryProvider,
    EventType,
    EventTypeConflict,
    EventTypeRegistry,
)

if TYPE_CHECKING:  # the names __getattr__ serves, spelled out for type checkers
    from ._events import (
        ApprovalBy,
        ApprovalDecision,
        ApprovalScope,
        AssistantMessage,
        ContextCompact,
        SessionStart,
        ToolApproval,
        ToolCall,
        ToolResultPayload,
        TurnEnd,
        TurnStart,
        TurnStatus,
        Usage,
        UserMessage,
    )

__all__ = [
    "CORE_EVENT_TYPES",
    "INTERRUPTED_TEXT",
    "SUMMARY_HEADER",
    "ApprovalBy",
    "ApprovalDecision",
    "ApprovalScope",
    "AssistantMessage",
    "Carry",
    "CarryProvider",
    "CompactionRange",
    "ContextCompact",
    "EnvelopeError",
    "Event",
    "EventSink",
    "EventType",
    "EventTypeConflict",
    "EventTypeRegistry",
    "InvariantViolation",
    "LogWriteError",
    "MessageProjection",
    "NotASession",
    "ReadOnlyLog",
    "SessionLocked",
    "SessionLog",
    "SessionNotFound",
    "SessionStart",
    "SessionStore",
    "SessionSummary",
    "ToolApproval",
    "ToolCall",
    "ToolResultPayload",
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
    "read_lines",
]


def __getattr__(name: str) -> Any:
    # Only the payload models are listed in __all__ without being imported above.
    if name not in __all__:
        raise AttributeError(f"module 'harness_core.log' has no attribute {name!r}")
    value = getattr(importlib.import_module("harness_core.log._events"), name)
    globals()[name] = value
    return value
