"""The agent loop."""

from ._agent import DEFAULT_MAX_STEPS, Agent, TurnOutcome

__all__ = ["DEFAULT_MAX_STEPS", "Agent", "TurnOutcome"]
