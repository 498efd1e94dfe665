"""The plugin system: hook specs, the entry-point loader, and the host that owns the registries."""

from ._context import PluginContext, ProviderTools, ServiceNotInjected
from ._discovery import GROUP, Candidate, discover
from ._facade import Hooks, ObserverError
from ._hookspecs import PROJECT, hookimpl, hookspec
from ._host import SERVICES, PluginHost, PluginLoadError, PluginRecord

__all__ = [
    "GROUP",
    "PROJECT",
    "SERVICES",
    "Candidate",
    "Hooks",
    "ObserverError",
    "PluginContext",
    "PluginHost",
    "PluginLoadError",
    "PluginRecord",
    "ProviderTools",
    "ServiceNotInjected",
    "discover",
    "hookimpl",
    "hookspec",
]
