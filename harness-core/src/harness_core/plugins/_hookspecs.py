"""Hook specifications: everything a plugin can do to harness.

Each spec has a docstring and a mode (broadcast, firstresult or historic, set on its marker);
`scripts/gen_hook_catalog.py` builds docs/hook-catalog.md from them, and CI fails when the
catalog is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import pluggy

if TYPE_CHECKING:
    from ..log import Event, EventType, SessionLog
    from ..models import Model
    from ._context import PluginContext

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT: Final = "harness"
hookspec: Final = pluggy.HookspecMarker(PROJECT)
hookimpl: Final = pluggy.HookimplMarker(PROJECT)


@hookspec
def harness_event_types() -> Sequence[EventType]:
    """Declare the session event types this plugin appends.

    Return `EventType(name, payload, surface)` declarations; `payload` is the pydantic model,
    or `"package.module:Model"` so that reading a session never imports it. Called once for
    each plugin, the first time the host needs event types (a command that opens a session),
    and again when a plugin loads late or is reloaded. A plugin's own types must be
    `surface=False`: they ride on the log without reaching the model's message history.
    Declaring one surface, or a name another package owns, fails the plugin's load.
    """
    raise NotImplementedError


@hookspec
def harness_register_tools(ctx: PluginContext) -> None:
    """Register this plugin's tools with `ctx.tools.register(tool)`.

    Called once for each plugin as it loads, with that plugin's own context: the services it
    named in `inject` and its configuration section. Registrations are disposed when the
    plugin is unloaded or reloaded.
    """


@hookspec
def harness_event_appended(session: SessionLog, event: Event) -> None:
    """Observe every event appended to a session this process writes.

    Observers are isolated: an exception is reported with the plugin's name and neither stops
    the other observers nor the turn. Do not append from here; observers see, never steer.
    """


@hookspec(firstresult=True)
def harness_model(spec: str, options: dict[str, Any]) -> Model | None:
    """Build the model for a `--model` SPEC such as `ollama:llama3`.

    Return a Model for a spec this plugin understands, or None to let the next plugin try;
    the first non-None answer wins. The built-in `scripted:`, `openai:` and `deepseek:`
    providers answer last, so a plugin may override them. `options` carries `base_url`.
    """
