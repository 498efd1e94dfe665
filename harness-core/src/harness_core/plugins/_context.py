"""The per-plugin context: only the host services a plugin named in `inject`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the tools package loads with the host's tools phase
    from ..config import PluginConfig
    from ..tools import Disposer, Tool, ToolRegistry

__all__ = ["PluginContext", "ProviderTools", "ServiceNotInjected"]


class ServiceNotInjected(AttributeError):
    """A plugin used a host service it did not name in `inject`."""


class ProviderTools:
    """`ctx.tools`: registers on the host registry as this plugin, remembering disposers."""

    def __init__(self, registry: ToolRegistry, provider: str) -> None:
        self._registry = registry
        self._provider = provider
        self.disposers: list[Disposer] = []
        self.names: list[str] = []

    def register(self, tool: Tool[Any]) -> Disposer:
        dispose = self._registry.register(tool, provider=self._provider)
        self.disposers.append(dispose)
        self.names.append(tool.name)
        return dispose

    def dispose_all(self) -> None:
        while self.disposers:
            self.disposers.pop()()
        self.names.clear()


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
