"""A typed facade over `pm.hook`: core code calls these methods, never `pm.hook.*` untyped.

Implementations are called with the arguments they ask for (pluggy's `argnames`), so a hook
that takes a subset of its spec's arguments works as it does in pluggy. Hooks whose callers
isolate plugins from each other (observers, registrations, host contributions) call one
implementation at a time: a plugin that raises is reported with its name and skipped, and the
others still run. Such hooks cannot honour wrappers, so `check_wrappers` rejects them at load.

They call `tryfirst` implementations first and `trylast` ones last, as pluggy does; within
each of the three groups, in plugin load order, so hosts show contributions in the order
`harness plugins` lists them (pluggy itself calls the last registered first: `harness_model`,
which goes through pluggy, asks the built-ins last).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

import pluggy

if TYPE_CHECKING:
    from ..hosts import (
        Command,
        DockEntry,
        SessionMcp,
        SnapshotFields,
        TerminalStrip,
        TurnQueue,
    )
    from ..log import Event, EventSink, EventType, EventTypeRegistry, History, SessionLog, Store
    from ..models import Model
    from ._context import PluginContext

__all__ = ["WRAPPABLE", "Hooks", "ObserverError", "check_wrappers"]

logger = logging.getLogger("harness.plugins")

# Hooks called through pluggy's own caller, where wrapper implementations run as pluggy says.
WRAPPABLE: Final = frozenset({"harness_model"})


class ObserverError:
    """A hook implementation that raised where the host isolates plugins: who, where, what."""

    __slots__ = ("error", "hook", "plugin")

    def __init__(self, plugin: str, hook: str, error: BaseException) -> None:
        self.plugin = plugin
        self.hook = hook
        self.error = error

    def __str__(self) -> str:
        kind = type(self.error).__name__
        return f"plugin {self.plugin!r} raised in {self.hook}: {kind}: {self.error}"


def check_wrappers(pm: pluggy.PluginManager, plugin: object) -> str | None:
    """The name of a hook `plugin` wraps although it cannot be wrapped, or None."""
    for caller in pm.get_hookcallers(plugin) or ():
        if caller.name in WRAPPABLE:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and (impl.wrapper or impl.hookwrapper):
                return caller.name
    return None


def _call(impl: pluggy.HookImpl, kwargs: dict[str, Any]) -> Any:
    """Call one implementation with the spec arguments it names, as pluggy would."""
    return impl.function(*[kwargs[name] for name in impl.argnames])


def _call_order(pm: pluggy.PluginManager, impls: list[pluggy.HookImpl]) -> list[pluggy.HookImpl]:
    """`tryfirst`, then unmarked, then `trylast` implementations, each group in load order."""
    # Ranked by name, not read off get_hookimpls(): pluggy keeps its trylast group there in
    # reverse registration order. list_name_plugin() is in registration order.
    if len(impls) < 2:  # the common case (one observer, one carrier): nothing to order
        return impls
    loaded = {name: rank for rank, (name, _) in enumerate(pm.list_name_plugin())}
    return sorted(impls, key=lambda impl: (impl.trylast - impl.tryfirst, loaded[impl.plugin_name]))


def _merged(seen: bool | int, value: bool | int) -> bool | int:
    """Two plugins' figure for one key: a flag any of them sets, or the sum of their counts."""
    if isinstance(seen, bool) and isinstance(value, bool):
        return seen or value
    return seen + value


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
                _call(impl, {"ctx": ctx})

    def event_appended(self, session: SessionLog, event: Event) -> None:
        """Tell every observer; one that raises is reported and skipped, the rest still run."""
        kwargs = {"session": session, "event": event}
        for _ in self._isolated("harness_event_appended", kwargs):
            pass

    def compaction_carry(self, history: History) -> list[str]:
        """Each plugin's text that survives a compaction, in call order."""
        kwargs = {"history": history}
        return [text for _, text in self._isolated("harness_compaction_carry", kwargs) if text]

    def session_store(
        self, url: str, registry: EventTypeRegistry, on_append: EventSink | None
    ) -> Store | None:
        result: Store | None = self._pm.hook.harness_session_store(
            url=url, registry=registry, on_append=on_append
        )
        return result

    def model(self, spec: str, options: dict[str, Any]) -> Model | None:
        result: Model | None = self._pm.hook.harness_model(spec=spec, options=options)
        return result

    def turn_usage(self, events: Sequence[Event]) -> dict[str, bool | int]:
        """Every plugin's answer about one turn, merged: flags or-ed, counts added."""
        merged: dict[str, bool | int] = {}
        for _, answer in self._isolated("harness_turn_usage", {"events": events}):
            for key, value in (answer or {}).items():
                merged[key] = value if key not in merged else _merged(merged[key], value)
        return merged

    # -- host extension points -------------------------------------------------------------

    def cli_commands(self) -> list[tuple[str, Command]]:
        """(plugin, command) for every command a plugin adds, in call order."""
        return [
            (name, command)
            for name, result in self._isolated("harness_cli_commands", {})
            for command in result or ()
        ]

    def terminal_strips(self) -> list[TerminalStrip]:
        """A fresh strip fold from each plugin that contributes one."""
        return [strip for _, strip in self._isolated("harness_terminal_strip", {}) if strip]

    def snapshot_fields(self) -> list[tuple[str, SnapshotFields]]:
        """(plugin, fresh fold) for each plugin that contributes snapshot fields."""
        return [(n, fold) for n, fold in self._isolated("harness_snapshot_fields", {}) if fold]

    def web_dock(self) -> list[tuple[str, DockEntry]]:
        """(plugin, entry) for every web dock entry, in call order."""
        return [
            (name, entry)
            for name, result in self._isolated("harness_web_dock", {})
            for entry in result or ()
        ]

    def session_mcp(self) -> SessionMcp | None:
        """The first plugin's offer to run a client's MCP servers, or None."""
        offers = (offer for _, offer in self._isolated("harness_session_mcp", {}) if offer)
        return next(offers, None)

    def turn_queue(self, store: Store) -> TurnQueue | None:
        """The first plugin's queue for `store`'s turns, or None (`serve --queue`)."""
        for _, queue in self._isolated("harness_turn_queue", {"store": store}):
            if queue is not None:
                return cast("TurnQueue", queue)
        return None

    def _isolated(self, hook: str, kwargs: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """Each implementation's result in call order; one that raises is reported."""
        for impl in _call_order(self._pm, getattr(self._pm.hook, hook).get_hookimpls()):
            try:
                result = _call(impl, kwargs)
            except Exception as exc:
                error = ObserverError(impl.plugin_name, hook, exc)
                logger.warning("%s", error)
                self._on_observer_error(error)
                continue
            yield impl.plugin_name, result
