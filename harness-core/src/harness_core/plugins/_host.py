"""The plugin host: a pluggy manager, the services plugins use, and per-plugin transactions.

Loading runs in phases, each a transaction per plugin (see `_discovery.py` for discovery):

1. register: read entry-point metadata, filter, import each selected plugin, check its shape
   and register its hooks. Every command does this; it imports what the plugin module imports
   and nothing more, so a query command (`harness todos`, `events`) stays cheap.
2. event types: each plugin's `harness_event_types`, before the registry's first lookup (a
   session opened or written; listing sessions needs none).
3. tools: each plugin's `harness_register_tools` (config parsing, pydantic models), the first
   time `host.tools` is read: only the commands that run or show tool calls pay for it. What
   a plugin defers there (`ctx.tools.defer`: servers to start) runs only before a model
   request, or in `harness plugins`.

A plugin that fails any phase is unregistered, whatever it registered is disposed, and the
failure is recorded with how to fix it, in the same record `harness plugins` reports (which
runs every phase); the other plugins load regardless. A plugin added once a phase has run
goes through that phase at once, so a reload leaves the host as a fresh load would.
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
from typing import TYPE_CHECKING, Final, Literal, NoReturn

import pluggy

from ..config import Config, ConfigError, parse_flag
from ..log import EventType, EventTypeRegistry
from . import _hookspecs
from ._context import PluginContext, ProviderTools
from ._discovery import GROUP, Candidate, discover, select
from ._facade import WRAPPABLE, Hooks, ObserverError, check_wrappers
from ._shape import PluginShape, ShapeError, resolve_shape

if TYPE_CHECKING:  # the tools package (and pydantic) loads with the tools phase
    from ..tools import ToolRegistry

__all__ = ["SERVICES", "PluginHost", "PluginLoadError", "PluginRecord"]

SERVICES: Final = ("config", "logger", "tools")

PluginStatus = Literal["loaded", "disabled", "rejected"]


@dataclass(slots=True)
class PluginRecord:
    """What `harness plugins` reports about one plugin.

    A later phase updates the record in place: `tools` fill in when the tools phase runs, and a
    plugin that fails there turns `rejected`.
    """

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
    """A registered plugin and what its later phases added, to dispose on unload."""

    plugin: object
    inject: tuple[str, ...]
    source: Callable[[], object]
    module_prefix: str | None
    required: bool = False
    event_types: tuple[EventType, ...] = ()
    tools: ProviderTools | None = None


Phase = Callable[[str, _Loaded], None]


class PluginHost:
    """Owns the plugin manager, the tool and event-type registries, and the load records.

    It holds no plugin of its own: the composition root (the CLI's `App`, the test fixtures,
    an embedding host) adds the built-in plugin with `harness_core.builtins.add_to(host)`.
    """

    def __init__(self, config: Config | None = None) -> None:
        self.config = config if config is not None else Config({}, env=os.environ)
        self.pm = pluggy.PluginManager(_hookspecs.PROJECT)
        self.pm.add_hookspecs(_hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.observer_errors: list[ObserverError] = []
        self.hooks = Hooks(self.pm, self.observer_errors.append)
        self._loaded: dict[str, _Loaded] = {}
        self._event_types = EventTypeRegistry(
            pending=self._declare_all_event_types, carry=self.hooks.compaction_carry
        )
        self._types_declared = False
        self._tools: ToolRegistry | None = None
        self._strict = False

    @property
    def known_hooks(self) -> list[str]:
        return [name for name in dir(_hookspecs) if name.startswith("harness_")]

    @property
    def event_types(self) -> EventTypeRegistry:
        """Core and plugin event types; plugins declare theirs before the first lookup."""
        return self._event_types

    @property
    def tools(self) -> ToolRegistry:
        """Every plugin's tools; plugins register them the first time this is read."""
        if self._tools is None:
            from ..tools import ToolRegistry

            self._declare_all_event_types()  # a plugin rejected there registers no tools
            self._tools = ToolRegistry()
            self._run_phase(self._register_tools)
        return self._tools

    def finish_loading(self) -> list[PluginRecord]:
        """Run every deferred phase now and return every record (`harness plugins`, tests)."""
        self._declare_all_event_types()
        if self._tools is None:
            self.tools  # noqa: B018  # reading it runs the tools phase
        return list(self.records.values())

    def _declare_all_event_types(self) -> None:
        if not self._types_declared:
            self._types_declared = True
            self._run_phase(self._declare_event_types)

    # -- loading ---------------------------------------------------------------------------

    def load_entry_points(
        self, env: Mapping[str, str] | None = None, *, group: str = GROUP
    ) -> list[PluginRecord]:
        """Discover, filter, sort and register every `harness.plugins` entry point.

        The later phases run on demand; with HARNESS_STRICT_PLUGINS=1 a rejection in any
        phase raises PluginLoadError.
        """
        env = os.environ if env is None else env
        self._strict = parse_flag("HARNESS_STRICT_PLUGINS", env.get("HARNESS_STRICT_PLUGINS"))
        chosen, disabled = select(discover(group), env)
        records = [self._record_disabled(c, why) for c, why in disabled]
        records += [self._load_candidate(candidate) for candidate in chosen]
        self._raise_if_strict([r for r in records if r.status == "rejected"])
        return records

    def _raise_if_strict(self, rejected: list[PluginRecord]) -> None:
        if rejected and self._strict:
            details = "; ".join(r.describe() for r in rejected)
            raise PluginLoadError(f"HARNESS_STRICT_PLUGINS=1 and a plugin was rejected: {details}")

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
        required: bool = False,
    ) -> PluginRecord:
        """Load an already imported plugin module or object (tests, embedding hosts).

        A `required` plugin (the built-ins) that fails any phase raises instead of being
        recorded as rejected: ConfigError for a bad setting, else PluginLoadError.
        """
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
            required=required,
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
        required: bool = False,
    ) -> PluginRecord:
        started = time.perf_counter()
        record = PluginRecord(name, dist, version, entry_point, "loaded")
        plugin: object | None = None
        loaded: _Loaded | None = None
        try:
            shape = self._shape(self._import(source), f"{dist} entry point {name} = {entry_point}")
            plugin = shape.plugin
            self._check_inject(shape.inject)
            self._register(plugin, name)
            loaded = _Loaded(plugin, shape.inject, source, module_prefix, required)
            record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or ())
            self.records[name] = record
            # Phases that already ran for the others run for this plugin now (a late add, a
            # reload): the host ends up as if it had been there from the start.
            if self._types_declared:
                self._declare_event_types(name, loaded)
            if self._tools is not None:
                self._register_tools(name, loaded)
        except _Rejection as rejection:
            self._undo(plugin, loaded)
            if required:
                _raise_required(record, rejection)
            self._mark_rejected(record, rejection)
            self.records[name] = record
            return record
        self._loaded[name] = loaded
        record.load_ms += (time.perf_counter() - started) * 1000
        return record

    def _run_phase(self, phase: Phase) -> None:
        """Run `phase` for every registered plugin; a plugin that fails it is rejected."""
        rejected = []
        for name, loaded in list(self._loaded.items()):
            record = self.records[name]
            started = time.perf_counter()
            try:
                phase(name, loaded)
            except _Rejection as rejection:
                del self._loaded[name]
                self._undo(loaded.plugin, loaded)
                if loaded.required:
                    _raise_required(record, rejection)
                self._mark_rejected(record, rejection)
                rejected.append(record)
            record.load_ms += (time.perf_counter() - started) * 1000
        self._raise_if_strict(rejected)

    def _undo(self, plugin: object | None, loaded: _Loaded | None) -> None:
        if loaded is not None and loaded.tools is not None:
            loaded.tools.dispose_all()
        if plugin is not None and self.pm.is_registered(plugin):
            self.pm.unregister(plugin)

    @staticmethod
    def _mark_rejected(record: PluginRecord, rejection: _Rejection) -> None:
        record.status = "rejected"
        record.reason, record.fix = rejection.reason, rejection.fix
        record.hooks, record.tools = [], []
        _log_record(record)

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
        except Exception as exc:  # a name conflict, a plugin object pluggy cannot inspect
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            raise _Rejection(
                f"registration failed: {type(exc).__name__}: {exc}",
                "fix the plugin's hook implementations (docs/hook-catalog.md)",
            ) from exc
        wrapped = check_wrappers(self.pm, plugin)
        if wrapped is not None:
            self.pm.unregister(plugin)
            raise _Rejection(
                f"{wrapped} is a wrapper implementation, but the host calls {wrapped} one "
                "plugin at a time, so a wrapper would have nothing to wrap",
                f"drop wrapper=True/hookwrapper=True from {wrapped}; only "
                f"{', '.join(sorted(WRAPPABLE))} runs wrappers",
            )

    def _declare_event_types(self, name: str, loaded: _Loaded) -> None:
        """Phase 2: the plugin's `harness_event_types`, declared on the host registry."""
        try:
            types = tuple(self.hooks.event_types(loaded.plugin))
            if not all(isinstance(t, EventType) for t in types):
                raise TypeError("harness_event_types must return a sequence of EventType")
            for event_type in types:
                self._event_types.declare(event_type)
        except Exception as exc:
            raise _Rejection(
                f"registration failed: {type(exc).__name__}: {exc}",
                "fix the plugin's harness_event_types declarations",
            ) from exc
        loaded.event_types = types

    def _register_tools(self, name: str, loaded: _Loaded) -> None:
        """Phase 3: the payload models its event types name, then its tools."""
        for event_type in loaded.event_types:
            try:
                event_type.payload  # noqa: B018  # imports a `module:Class` reference
            except Exception as exc:
                raise _Rejection(
                    f"event type {event_type.name!r}: its payload {event_type.where} cannot be "
                    f"imported: {type(exc).__name__}: {exc}",
                    "fix the payload reference in the plugin's harness_event_types",
                ) from exc
        assert self._tools is not None
        loaded.tools = ProviderTools(self._tools, provider=name)
        services = self._services(name, loaded.tools)
        try:
            self.hooks.register_tools(loaded.plugin, PluginContext(name, services, loaded.inject))
        except ConfigError as exc:
            raise _Rejection(
                f"invalid configuration: {exc}",
                f"correct the value in [plugins.{name}] of the config file, or in the "
                "environment variable the reason names",
            ) from exc
        except Exception as exc:
            raise _Rejection(
                f"harness_register_tools raised {type(exc).__name__}: {exc}",
                "fix the plugin's tool registration (see the traceback with HARNESS_DEBUG=1)",
            ) from exc
        # The same list: tools a plugin registers later (deferred, see ToolRegistry.defer)
        # show in its record too.
        self.records[name].tools = loaded.tools.names

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

    # -- unloading and reloading -----------------------------------------------------------

    def unload(self, name: str) -> None:
        """Dispose the plugin's tools, unregister its hooks, forget it."""
        loaded = self._loaded.pop(name, None)
        if loaded is None:
            raise KeyError(f"no loaded plugin named {name!r}")
        self._undo(loaded.plugin, loaded)
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


def _raise_required(record: PluginRecord, rejection: _Rejection) -> NoReturn:
    """Without the built-ins no model provider answers and commands fail later with a
    misleading message ("no installed plugin provides the model"): say what is wrong, once."""
    if isinstance(rejection.__cause__, ConfigError):
        raise ConfigError(str(rejection.__cause__)) from None
    record.status, record.reason, record.fix = "rejected", rejection.reason, rejection.fix
    raise PluginLoadError(record.describe()) from rejection


def _log_record(record: PluginRecord) -> None:
    logging.getLogger("harness.plugins").warning("%s", record.describe())


def _purge_modules(prefix: str) -> None:
    for module_name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[module_name]
