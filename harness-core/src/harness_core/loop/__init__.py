"""The agent loop: `Agent.run_turn` and the default system prompt."""

from ._agent import CANCELLED_TEXT, CRASHED_TURN, DEFAULT_MAX_STEPS, Agent, TurnOutcome
from ._prompt import DEFAULT_SYSTEM_PROMPT

__all__ = [
    "CANCELLED_TEXT",
    "CRASHED_TURN",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_SYSTEM_PROMPT",
    "Agent",
    "TurnOutcome",
]
