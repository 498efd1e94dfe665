"""The agent loop: `Agent.run_turn`, approval, compaction and the default system prompt."""

from ._agent import (
    CANCELLED_TEXT,
    CRASHED_TURN,
    DEFAULT_MAX_STEPS,
    STOPPED_CALL_TEXT,
    Agent,
    TurnAbandoned,
    TurnOutcome,
)
from ._approval import (
    POLICIES,
    Answer,
    Approval,
    ApprovalRequest,
    Asker,
    CannotAsk,
    Decision,
    Policy,
    SessionGrants,
    denied_text,
)
from ._compact import DEFAULT_COMPACT_AT, SUMMARY_PROMPT, CompactionPolicy, NothingToCompact
from ._prompt import DEFAULT_SYSTEM_PROMPT

__all__ = [
    "CANCELLED_TEXT",
    "CRASHED_TURN",
    "DEFAULT_COMPACT_AT",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_SYSTEM_PROMPT",
    "POLICIES",
    "STOPPED_CALL_TEXT",
    "SUMMARY_PROMPT",
    "Agent",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "Asker",
    "CannotAsk",
    "CompactionPolicy",
    "Decision",
    "NothingToCompact",
    "Policy",
    "SessionGrants",
    "TurnAbandoned",
    "TurnOutcome",
    "denied_text",
]
