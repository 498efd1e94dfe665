"""Helpers shared by the todo plugin's unit tests (a unique module name, unlike conftest)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from harness_core.log import SessionLog
from harness_core.loop import Agent
from harness_core.tools import ToolResult as CallResult
from harness_tool_todo import EVENT_TYPE

Call = Callable[..., Awaitable[CallResult]]
NewAgent = Callable[[], Agent]


def open_turn(agent: Agent) -> int:
    """Open the next turn on `agent`'s session the way the loop does (turn/start + user)."""
    turn = agent.session.next_turn
    if agent.turn is not None:
        agent.session.append("turn/end", {"status": "completed"}, turn=agent.turn)
    agent.session.append("turn/start", {}, turn=turn)
    agent.turn = turn
    agent.append("message/user", {"text": f"prompt {turn}"})
    return turn


def raw(arguments: Any) -> str:
    """The raw argument string a model would send for `arguments`."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def todo_events(log: SessionLog) -> list[dict[str, Any]]:
    """The payloads of every `todo/write` on `log`, oldest first."""
    return [e.data for e in log.events if e.type == EVENT_TYPE]
