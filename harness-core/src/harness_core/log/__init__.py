"""The session log: an append-only, event-sourced JSON Lines file per session.

Every name is imported on first use (PEP 562): `harness sessions` lists from the listing cache
without loading the envelope codec (orjson) or the log file's machinery, and reading a
session trusts what this version wrote and never loads pydantic (the payload models).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .._lazy import lazy_exports

if TYPE_CHECKING:  # the names __getattr__ serves, spelled out for type checkers
    from ._copy import CopyStep, Divergent, apply_copy, plan_copy
    from ._envelope import EnvelopeError, Event
    from ._events import (
        ApprovalBy,
        ApprovalDecision,
        ApprovalScope,
        AssistantMessage,
        ContextCompact,
        SessionStart,
        ThinkingBlock,
        ToolApproval,
        ToolCall,
        ToolResultPayload,
        TurnEnd,
        TurnStart,
        TurnStatus,
        Usage,
        UserMessage,
    )
    from ._file import FileLog, read_lines
    from ._folds import History, history_of
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
    from ._session import (
        EventSink,
        LogWriteError,
        ReadOnlyLog,
        SessionLog,
        replayed,
        writer_taken,
    )
    from ._store import SessionStore, default_home
    from ._stores import (
        TITLE_MAX,
        Notify,
        SessionNotFound,
        Store,
        StoreError,
        check_session_id,
        check_title,
        file_store_directory,
        redact_url,
        scheme_of,
    )
    from ._tail import find_latest, last_event
    from ._threads import in_thread_to_the_end
    from ._types import (
        CORE_EVENT_TYPES,
        CarryProvider,
        EventType,
        EventTypeConflict,
        EventTypeRegistry,
    )


_EXPORTS: Final = {
    "CORE_EVENT_TYPES": "_types",
    "INTERRUPTED_TEXT": "_projection",
    "SUMMARY_HEADER": "_projection",
    "ApprovalBy": "_events",
    "ApprovalDecision": "_events",
    "ApprovalScope": "_events",
    "AssistantMessage": "_events",
    "ThinkingBlock": "_events",
    "Carry": "_projection",
    "CarryProvider": "_types",
    "CompactionRange": "_projection",
    "ContextCompact": "_events",
    "CopyStep": "_copy",
    "Divergent": "_copy",
    "apply_copy": "_copy",
    "plan_copy": "_copy",
    "EnvelopeError": "_envelope",
    "Event": "_envelope",
    "EventSink": "_session",
    "EventType": "_types",
    "EventTypeConflict": "_types",
    "EventTypeRegistry": "_types",
    "History": "_folds",
    "history_of": "_folds",
    "InvariantViolation": "_invariants",
    "FileLog": "_file",
    "LogWriteError": "_session",
    "MessageProjection": "_projection",
    "NotASession": "_open",
    "ReadOnlyLog": "_session",
    "SessionLocked": "_lock",
    "SessionLog": "_session",
    "SessionNotFound": "_stores",
    "SessionStart": "_events",
    "SessionStore": "_store",
    "Notify": "_stores",
    "TITLE_MAX": "_stores",
    "check_session_id": "_stores",
    "check_title": "_stores",
    "Store": "_stores",
    "StoreError": "_stores",
    "redact_url": "_stores",
    "scheme_of": "_stores",
    "file_store_directory": "_stores",
    "SessionSummary": "_listing",
    "ToolApproval": "_events",
    "ToolCall": "_events",
    "ToolResultPayload": "_events",
    "TurnEnd": "_events",
    "TurnStart": "_events",
    "TurnStatus": "_events",
    "Usage": "_events",
    "UserMessage": "_events",
    "default_home": "_store",
    "derive_messages": "_projection",
    "dev_mode": "_invariants",
    "find_latest": "_tail",
    "last_event": "_tail",
    "replayed": "_session",
    "writer_taken": "_session",
    "in_thread_to_the_end": "_threads",
    "read_lines": "_file",
}

__all__ = [
    "CORE_EVENT_TYPES",
    "INTERRUPTED_TEXT",
    "SUMMARY_HEADER",
    "TITLE_MAX",
    "ApprovalBy",
    "ApprovalDecision",
    "ApprovalScope",
    "AssistantMessage",
    "Carry",
    "CarryProvider",
    "CompactionRange",
    "ContextCompact",
    "CopyStep",
    "Divergent",
    "EnvelopeError",
    "Event",
    "EventSink",
    "EventType",
    "EventTypeConflict",
    "EventTypeRegistry",
    "FileLog",
    "History",
    "InvariantViolation",
    "LogWriteError",
    "MessageProjection",
    "NotASession",
    "Notify",
    "ReadOnlyLog",
    "SessionLocked",
    "SessionLog",
    "SessionNotFound",
    "SessionStart",
    "SessionStore",
    "SessionSummary",
    "Store",
    "StoreError",
    "ThinkingBlock",
    "ToolApproval",
    "ToolCall",
    "ToolResultPayload",
    "TurnEnd",
    "TurnStart",
    "TurnStatus",
    "Usage",
    "UserMessage",
    "apply_copy",
    "check_session_id",
    "check_title",
    "default_home",
    "derive_messages",
    "dev_mode",
    "file_store_directory",
    "find_latest",
    "history_of",
    "in_thread_to_the_end",
    "last_event",
    "plan_copy",
    "read_lines",
    "redact_url",
    "replayed",
    "scheme_of",
    "writer_taken",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
