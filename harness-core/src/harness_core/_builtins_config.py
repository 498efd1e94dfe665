"""The built-in plugin's `[plugins.builtins]` section, validated when its tools register."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from .tools.bash import DEFAULT_TIMEOUT
from .tools.subagent import DEFAULT_MAX_DEPTH

__all__ = ["BuiltinsConfig"]


class BuiltinsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bash_timeout: PositiveFloat = DEFAULT_TIMEOUT
    subagent_max_depth: PositiveInt = DEFAULT_MAX_DEPTH
