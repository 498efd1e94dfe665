"""harness: an agent harness whose session is an event-sourced log and whose tools are plugins.

Names are imported on first use (PEP 562), so `import harness_core` and `harness --help`
stay fast and never load pydantic, pluggy or the openai SDK before they are needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from ._version import __version__

if TYPE_CHECKING:  # the names __getattr__ serves, spelled out for type checkers
    from .config import Config, PluginConfig
    from .log import Event, EventType, EventTypeRegistry, SessionLog, SessionStore, derive_messages
    from .loop import Agent, Approval, TurnOutcome
    from .models import Model, ModelResponse, ScriptedModel
    from .plugins import PluginContext, PluginHost, hookimpl, hookspec
    from .tools import ExecContext, Tool, ToolRegistry, ToolResult

_EXPORTS = {
    "Agent": "loop",
    "Approval": "loop",
    "Config": "config",
    "Event": "log",
    "EventType": "log",
    "EventTypeRegistry": "log",
    "ExecContext": "tools",
    "Model": "models",
    "ModelResponse": "models",
    "PluginConfig": "config",
    "PluginContext": "plugins",
    "PluginHost": "plugins",
    "ScriptedModel": "models",
    "SessionLog": "log",
    "SessionStore": "log",
    "Tool": "tools",
    "ToolRegistry": "tools",
    "ToolResult": "tools",
    "TurnOutcome": "loop",
    "derive_messages": "log",
    "hookimpl": "plugins",
    "hookspec": "plugins",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


__getattr__ = lazy_exports(__name__, _EXPORTS)
