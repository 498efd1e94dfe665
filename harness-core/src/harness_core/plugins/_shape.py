"""The plugin module shape: a namespace module (`name`, `inject`, hooks) or a `default` object.

See docs/postmortem/0001-default-beside-namespace-exports.md for why a module exporting both
is rejected instead of being unwrapped to `default`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from types import ModuleType

__all__ = ["PluginShape", "ShapeError", "resolve_shape"]

_IMPL_MARK = "harness_impl"  # the attribute pluggy's HookimplMarker("harness") sets


class ShapeError(ValueError):
    """A plugin that does not have the plugin module shape. `fix` says what to change."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


@dataclass(frozen=True, slots=True)
class PluginShape:
    plugin: object
    name: str
    inject: tuple[str, ...]


def resolve_shape(loaded: object, where: str, known_hooks: Collection[str]) -> PluginShape:
    """Unwrap and check what an entry point loaded. `where` names it in errors."""
    plugin = _unwrap_default(loaded, where)
    name = getattr(plugin, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise ShapeError(f"{where} has no `name`", 'export `name = "<plugin name>"` (a str)')
    inject = getattr(plugin, "inject", ())
    if isinstance(inject, str) or not all(isinstance(s, str) for s in inject):
        raise ShapeError(
            f"{where}: `inject` must be a tuple of service names, got {inject!r}",
            'write it as a tuple, e.g. inject = ("tools",)',
        )
    _check_hook_names(plugin, where, known_hooks)
    return PluginShape(plugin, name, tuple(inject))


def _unwrap_default(loaded: object, where: str) -> object:
    if not isinstance(loaded, ModuleType) or not hasattr(loaded, "default"):
        return loaded
    namespace = [n for n in vars(loaded) if n in ("name", "inject") or n.startswith("harness_")]
    if namespace:
        # Unwrapping to `default` here would silently drop `inject` and the module's hooks:
        # the plugin would load "fine" and crash at its first tool call (postmortem 0001).
        raise ShapeError(
            f"module {loaded.__name__} ({where}) exports both namespace plugin exports "
            f"({', '.join(sorted(namespace))}) and `default`; it is ambiguous which is the plugin",
            "remove the stray `default`, or move name, inject and the hooks onto the `default` "
            "object and export only that",
        )
    return loaded.default


def _check_hook_names(plugin: object, where: str, known_hooks: Collection[str]) -> None:
    for attr in dir(plugin):
        if not attr.startswith("harness_") or not callable(getattr(plugin, attr, None)):
            continue
        marked = hasattr(getattr(plugin, attr), _IMPL_MARK)
        if attr not in known_hooks:
            import difflib  # only to reject a misspelt hook: every command loads plugins

            close = difflib.get_close_matches(attr, known_hooks, n=1)
            hint = f"did you mean {close[0]}?" if close else "see docs/hook-catalog.md"
            raise ShapeError(f"{where}: {attr} is not a known hook", f"rename it ({hint})")
        if not marked:
            raise ShapeError(
                f"{where}: {attr} is not marked as a hook implementation, so it would never run",
                "decorate it with @harness_core.hookimpl",
            )
