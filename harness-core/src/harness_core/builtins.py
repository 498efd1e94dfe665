"""The built-in plugin: the `bash` and `subagent` tools and the built-in model providers.

It is a namespace plugin like any other (the composition root adds it with `add_to(host)`
before the entry points), so the core exercises the same hooks a third-party plugin uses.

    [plugins.builtins]
    bash_timeout = 120        # seconds, or HARNESS_BUILTINS_BASH_TIMEOUT
    subagent_max_depth = 2    # or HARNESS_BUILTINS_SUBAGENT_MAX_DEPTH
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .plugins import PluginContext, hookimpl

if TYPE_CHECKING:  # tools, models and pydantic load inside the hooks, when they are called
    from .models import Model
    from .plugins import PluginHost, PluginRecord

__all__ = ["add_to", "harness_model", "harness_register_tools", "inject", "name"]

name = "builtins"
inject = ("tools", "config")


def add_to(host: PluginHost) -> PluginRecord:
    """Register the built-in plugin on `host`: what a composition root does first.

    The host does not add it itself, so the plugin layer never imports the tools and models
    this plugin brings (the CLI's `App`, the test fixtures and embedding hosts call this).
    """
    return host.add(
        importlib.import_module(__name__),
        dist="harness-core",
        version=__version__,
        entry_point=__name__,
        required=True,  # a bad [plugins.builtins] setting is an error, not a quiet rejection
    )


@hookimpl
def harness_register_tools(ctx: PluginContext) -> None:
    from ._builtins_config import BuiltinsConfig
    from .tools.bash import BashTool
    from .tools.subagent import SubagentTool

    config = ctx.config.parse(BuiltinsConfig)
    ctx.tools.register(BashTool(timeout=config.bash_timeout))
    ctx.tools.register(SubagentTool(max_depth=config.subagent_max_depth))


@hookimpl(trylast=True)
def harness_model(spec: str, options: dict[str, Any]) -> Model | None:
    from .models._presets import build_model

    return build_model(spec, options, os.environ)
