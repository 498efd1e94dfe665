"""The per-plugin context: only the host services a plugin named in `inject`."""

from __future__ import annotations

import logging
from contextlib import suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the tools package loads with the host's tools phase
    from ..config import PluginConfig
    from ..tools import Disposer, Preparation, Tool, ToolRegistry

__all__ = ["PluginContext", "ProviderTools", "ServiceNotInjected"]


class ServiceNotInjected(AttributeError):
    """A plugin used a host service it did not name in `inject`."""


class ProviderTools:
    """`ctx.tools`: registers on the host registry as this plugin, remembering disposers.

    `names` stays current as registrations come and go (deferred ones, re-registrations), and
    once the plugin is unloaded its deferred registrations no longer run.
    """

    def __init__(self, registry: ToolRegistry, provider: str) -> None:
        self._registry = registry
        self._provider = provider
        self._disposed = False
        self.disposers: list[Disposer] = []
        self.names: list[str] = []

    def register(self, tool: Tool[Any]) -> Disposer:
        dispose = self._registry.register(tool, provider=self._provider)

        def dispose_this() -> None:
            dispose()
            with suppress(ValueError):
                self.disposers.remove(dispose_this)
            with suppress(ValueError):
                self.names.remove(tool.name)

        self.disposers.append(dispose_this)
        self.names.append(tool.name)
        return dispose_this

    def defer(self, prepare: Preparation) -> None:
        """Run `prepare` before the next model request; see `ToolRegistry.defer`."""

        async def unless_unloaded() -> None:
            if not self._disposed:
                await prepare()

        self._registry.defer(unless_unloaded, provider=self._provider)

    def dispose_all(self) -> None:
        self._disposed = True
        while self.disposers:
            self.disposers[-1]()


class PluginContext:
    """What a plugin's hooks receive: `tools`, `config`, `logger`, as injected."""

    def __init__(self, plugin: str, services: dict[str, Any], inject: tuple[str, ...]) -> None:
        self.plugin = plugin
        self._services = {name: services[name] for name in inject}

    def __getattr__(self, name: str) -> Any:
        services = self.__dict__.get("_services", {})
        if name in services:
            return services[name]
        raise ServiceNotInjected(
            f"plugin {self.__dict__.get('plugin')!r} uses ctx.{name} but does not inject it; "
            f'add "{name}" to its `inject` tuple'
        )

    if TYPE_CHECKING:
        tools: ProviderTools
        config: PluginConfig
        logger: logging.Logger
