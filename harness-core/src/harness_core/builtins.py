"""The built-in plugin: the `bash` and `subagent` tools and the built-in model providers.

It is a namespace plugin like any other (the host registers it before entry points), so the
core exercises the same hooks a third-party plugin uses.

    [plugins.builtins]
    bash_timeout = 120        # seconds, or HARNESS_BUILTINS_BASH_TIMEOUT
    subagent_max_depth = 2    # or HARNESS_BUILTINS_SUBAGENT_MAX_DEPTH
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from .models import Model
from .models._presets import build_model
from .plugins import PluginContext, hookimpl
from .tools.bash import DEFAULT_TIMEOUT, BashTool
from .tools.subagent import DEFAULT_MAX_DEPTH, SubagentTool

name = "builtins"
inject = ("tools", "config")


class BuiltinsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bash_timeout: PositiveFloat = DEFAULT_TIMEOUT
    subagent_max_depth: PositiveInt = DEFAULT_MAX_DEPTH


@hookimpl
def harness_register_tools(ctx: PluginContext) -> None:
    config = ctx.config.parse(BuiltinsConfig)
    ctx.tools.register(BashTool(timeout=config.bash_timeout))
    ctx.tools.register(SubagentTool(max_depth=config.subagent_max_depth))


@hookimpl(trylast=True)
def harness_model(spec: str, options: dict[str, Any]) -> Model | None:
    return build_model(spec, options, os.environ)
