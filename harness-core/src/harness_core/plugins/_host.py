"""The plugin host: a pluggy manager, the services plugins use, and per-plugin transactions.

Loading is two-phase (see `_discovery.py`): metadata first, then each selected plugin is
imported and registered in its own transaction. A plugin that fails any step is unregistered,
whatever it registered is disposed, and the failure is recorded with how to fix it; the other
plugins load regardless.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Final, Literal

import pluggy

from ..config import Config, ConfigError
from ..log import EventType, EventTypeRegistry
from ..tools import ToolRegistry
from . import _hookspecs
from ._context import PluginContext, ProviderTools
from ._discovery import GROUP, Candidate, discover, select
from ._facade import Hooks, ObserverError
from ._shape import PluginShape, ShapeError, resolve_shape

__all__ = ["SERVICES", "PluginHost", "PluginLoadError", "PluginRecord"]

SERVICES: Final = ("config", "logger", "tools")

PluginStatus = Literal["loaded", "disabled", "rejected"]


@dataclass(slots=True)
class PluginRecord:
    """What `harness plugins` reports about one plugin."""

    name: str
    dist: str
    version: str
    entry_point: str
    status: PluginStatus
    reason: str | None = None
    fix: str | None = None
    hooks: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    load_ms: float = 0.0

    def describe(self) -> str:
        where = f"{self.name} ({self.dist} {self.version}, entry point {self.entry_point})"
        if self.status == "rejected":
            return f"{where}: rejected: {self.reason}; fix: {self.fix}"
        if self.status == "disabled":
            return f"{where}: disabled: {self.reason}"
        return f"{where}: loaded"


class PluginLoadError(RuntimeError):
    """Strict mode (HARNESS_STRICT_PLUGINS=1) and at least one plugin was rejected."""


class _Rejection(Exception):
    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


@dataclass(slots=True)
class _Loaded:
    plugin: object
    tools: ProviderTools
    source: Callable[[], object]
    module_prefix: str | None


class PluginHost:
    """Owns the plugin manager, the tool and event-type registries, and the load records."""

    def __init__(self, config: Config | None = None, *, builtins: bool = True) -> None:
        self.config = config if config is not None else Config({}, env=os.environ)
        self.pm = pluggy.PluginManager(_hookspecs.PROJECT)
        self.pm.add_hookspecs(_hookspecs)
        self.tools = ToolRegistry()
        self.event_types = EventTypeRegistry()
        self.records: dict[str, PluginRecord] = {}
        self.observer_errors: list[ObserverError] = []
        self.hooks = Hooks(self.pm, self.observer_errors.append)
        self.hooks.start_event_types(self._declare_event_types)
        self._loaded: dict[str, _Loaded] = {}
        if builtins:
            from .. import builtins as builtin_plugin

            self.add(builtin_plugin, dist="harness-core", entry_point="harness_core.builtins")

    @property
    def known_hooks(self) -> list[str]:
        return [name for name in dir(_hookspecs) if name.startswith("harness_")]

    # -- loading ---------------------------------------------------------------------------

    def load_entry_points(
        self, env: Mapping[str, str] | None = None, *, group: str = GROUP
    ) -> list[PluginRecord]:
        """Discover, filter, sort and load every `harness.plugins` entry point."""
        env = os.environ if env is None else env
        chosen, disabled = select(discover(group), env)
        records = [self._record_disabled(c, why) for c, why in disabled]
        records += [self._load_candidate(candidate) for candidate in chosen]
        rejected = [r for r in records if r.status == "rejected"]
        if rejected and env.get("HARNESS_STRICT_PLUGINS") == "1":
            details = "; ".join(r.describe() for r in rejected)
            raise PluginLoadError(f"HARNESS_STRICT_PLUGINS=1 and a plugin was rejected: {details}")
        return records

    def _record_disabled(self, candidate: Candidate, why: str) -> PluginRecord:
        record = PluginRecord(
            candidate.name, candidate.dist, candidate.version, candidate.value, "disabled", why
        )
        self.records[candidate.name] = record
        return record

    def _load_candidate(self, candidate: Candidate) -> PluginRecord:
        if candidate.name in self._loaded:
            holder = self.records[candidate.name]
            record = PluginRecord(
                candidate.name,
                candidate.dist,
                candidate.version,
                candidate.value,
                "rejected",
                f"plugin name {candidate.name!r} is already taken by {holder.dist}",
                "uninstall one of the two distributions, or disable one by name",
            )
            # Keyed apart so the loaded plugin's record is not overwritten.
            self.records[f"{candidate.name}@{candidate.dist}"] = record
            _log_record(record)
            return record
        return self._transaction(
            candidate.name,
            candidate.entry_point.load,
            dist=candidate.dist,
            version=candidate.version,
            entry_point=candidate.value,
            module_prefix=candidate.value.split(":", 1)[0].split(".", 1)[0],
        )

    def add(
        self,
        plugin: object,
        *,
        dist: str = "(in-process)",
        version: str = "",
        entry_point: str | None = None,
    ) -> PluginRecord:
        """Load an already imported plugin module or object (tests, embedding hosts)."""
        if isinstance(plugin, ModuleType):
            module_name = plugin.__name__
            label = entry_point or module_name

            def source() -> object:
                return importlib.import_module(module_name)

            prefix: str | None = module_name.split(".", 1)[0]
        else:
            label = entry_point or type(plugin).__name__

            def source() -> object:
                return plugin

            prefix = None  # nothing to re-import: the object is handed in
        name = getattr(plugin, "name", None)
        return self._transaction(
            name if isinstance(name, str) and name else label,
            source,
            dist=dist,
            version=version,
            entry_point=label,
            module_prefix=prefix,
        )

    def _transaction(
        self,
        name: str,
        source: Callable[[], object],
        *,
        dist: str,
        version: str,
        entry_point: str,
        module_prefix: str | None,
    ) -> PluginRecord:
        started = time.perf_counter()
        tools = ProviderTools(self.tools, provider=name)
        plugin: object | None = None
        try:
            shape = self._shape(self._import(source), f"{dist} entry point {name} = {entry_point}")
            plugin = shape.plugin
            self._check_inject(shape.inject)
            self._register(plugin, name)
            self._call_register_tools(plugin, name, shape.inject, tools)
        except _Rejection as rejection:
            tools.dispose_all()
            if plugin is not None and self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            record = PluginRecord(
                name, dist, version, entry_point, "rejected", rejection.reason, rejection.fix
            )
            self.records[name] = record
            _log_record(record)
            return record
        self._loaded[name] = _Loaded(plugin, tools, source, module_prefix)
        record = PluginRecord(
            name,
            dist,
            version,
            entry_point,
            "loaded",
            hooks=sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()),
            tools=list(tools.names),
            load_ms=(time.perf_counter() - started) * 1000,
        )
        self.records[name] = record
        return record

    @staticmethod
    def _import(source: Callable[[], object]) -> object:
        try:
            return source()
        except (Exception, SystemExit) as exc:  # a plugin calling sys.exit() must not end us
            raise _Rejection(
                f"import failed: {type(exc).__name__}: {exc}",
                "reinstall the distribution and check that its dependencies are installed",
            ) from exc

    def _shape(self, loaded: object, where: str) -> PluginShape:
        try:
            return resolve_shape(loaded, where, self.known_hooks)
        except ShapeError as exc:
            raise _Rejection(exc.reason, exc.fix) from exc

    def _check_inject(self, inject: Sequence[str]) -> None:
        missing = [s for s in inject if s not in SERVICES]
        if missing:
            raise _Rejection(
                f"it needs host service(s) {', '.join(missing)} that this host does not provide "
                f"(available: {', '.join(SERVICES)})",
                "upgrade harness-core, or remove the service from the plugin's `inject`",
            )

    def _register(self, plugin: object, name: str) -> None:
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise _Rejection(
                f"hook signature mismatch: {exc}",
                "make each hook's parameters a subset of the spec's (docs/hook-catalog.md)",
            ) from exc
        except Exception as exc:  # a historic harness_event_types call raising, a conflict
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            raise _Rejection(
                f"registration failed: {type(exc).__name__}: {exc}",
                "fix the plugin's harness_event_types declarations",
            ) from exc

    def _call_register_tools(
        self, plugin: object, name: str, inject: tuple[str, ...], tools: ProviderTools
    ) -> None:
        services = self._services(name, tools)
        try:
            self.hooks.register_tools(plugin, PluginContext(name, services, inject))
        except ConfigError as exc:
            raise _Rejection(
                f"invalid configuration: {exc}",
                f"fix [plugins.{name}] in the config file or the environment variable named",
            ) from exc
        except Exception as exc:
            raise _Rejection(
                f"harness_register_tools raised {type(exc).__name__}: {exc}",
                "fix the plugin's tool registration (see the traceback with HARNESS_DEBUG=1)",
            ) from exc

    def _services(self, name: str, tools: ProviderTools) -> dict[str, object]:
        try:
            plugin_config = self.config.plugin(name)
        except ConfigError as exc:
            raise _Rejection(str(exc), "fix the [plugins] section of the config file") from exc
        return {
            "tools": tools,
            "config": plugin_config,
            "logger": logging.getLogger(f"harness.plugins.{name}"),
        }

    def _declare_event_types(self, types: Sequence[EventType]) -> None:
        if not all(isinstance(t, EventType) for t in types):
            raise TypeError("harness_event_types must return a sequence of EventType")
        for event_type in types:
            self.event_types.declare(event_type)

    # -- unloading and reloading -----------------------------------------------------------

    def unload(self, name: str) -> None:
        """Dispose the plugin's tools, unregister its hooks, forget it."""
        loaded = self._loaded.pop(name, None)
        if loaded is None:
            raise KeyError(f"no loaded plugin named {name!r}")
        loaded.tools.dispose_all()
        self.pm.unregister(loaded.plugin)
        self.records.pop(name, None)

    def reload(self, name: str) -> PluginRecord:
        """Unload, drop the plugin's modules from sys.modules, import and load again."""
        loaded = self._loaded.get(name)
        if loaded is None:
            raise KeyError(f"no loaded plugin named {name!r}")
        if loaded.module_prefix == "harness_core":
            raise ValueError("the built-in plugin cannot be reloaded")
        previous = self.records[name]
        self.unload(name)
        if loaded.module_prefix:
            _purge_modules(loaded.module_prefix)
        return self._transaction(
            name,
            loaded.source,
            dist=previous.dist,
            version=previous.version,
            entry_point=previous.entry_point,
            module_prefix=loaded.module_prefix,
        )


def _log_record(record: PluginRecord) -> None:
    logging.getLogger("harness.plugins").warning("%s", record.describe())


def _purge_modules(prefix: str) -> None:
    for module_name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[module_name]
