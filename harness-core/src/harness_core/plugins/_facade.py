"""A typed facade over `pm.hook`: core code calls these methods, never `pm.hook.*` untyped."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import pluggy

if TYPE_CHECKING:
    from ..log import Event, EventType, SessionLog
    from ..models import Model
    from ._context import PluginContext

__all__ = ["Hooks", "ObserverError"]

logger = logging.getLogger("harness.plugins")


class ObserverError:
    """An observer hook that raised: which plugin, which hook, what."""

    __slots__ = ("error", "hook", "plugin")

    def __init__(self, plugin: str, hook: str, error: BaseException) -> None:
        self.plugin = plugin
        self.hook = hook
        self.error = error

    def __str__(self) -> str:
        kind = type(self.error).__name__
        return f"plugin {self.plugin!r} raised in {self.hook}: {kind}: {self.error}"


class Hooks:
    """Typed calls of every hook spec."""

    def __init__(
        self, pm: pluggy.PluginManager, on_observer_error: Callable[[ObserverError], None]
    ):
        self._pm = pm
        self._on_observer_error = on_observer_error

    def event_types(self, plugin: object) -> Sequence[EventType]:
        """Call `plugin`'s own harness_event_types (the host declares them per plugin)."""
        declared: list[EventType] = []
        for impl in self._pm.hook.harness_event_types.get_hookimpls():
            if impl.plugin is plugin:
                declared.extend(cast("Sequence[EventType]", impl.function()))
        return declared

    def register_tools(self, plugin: object, ctx: PluginContext) -> None:
        """Call `plugin`'s own harness_register_tools (each plugin gets its own context)."""
        for impl in self._pm.hook.harness_register_tools.get_hookimpls():
            if impl.plugin is plugin:
                impl.function(ctx=ctx)

    def event_appended(self, session: SessionLog, event: Event) -> None:
        """Tell every observer; one that raises is reported and skipped, the rest still run."""
        for impl in reversed(self._pm.hook.harness_event_appended.get_hookimpls()):
            try:
                impl.function(session=session, event=event)
            except Exception as exc:
                error = ObserverError(impl.plugin_name, "harness_event_appended", exc)
                logger.warning("%s", error)
                self._on_observer_error(error)

    def model(self, spec: str, options: dict[str, Any]) -> Model | None:
        result: Model | None = self._pm.hook.harness_model(spec=spec, options=options)
        return result
