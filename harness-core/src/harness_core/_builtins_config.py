"""The built-in plugin's `[plugins.builtins]` section, validated when its tools register."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from .tools.bash import DEFAULT_TIMEOUT
from .tools.subagent import DEFAULT_MAX_DEPTH

__all__ = ["BuiltinsConfig"]


class BuiltinsConfig(BaseModel):
    # Strict numbers: `true` (HARNESS_BUILTINS_BASH_TIMEOUT=true) is not 1 second.
    model_config = ConfigDict(extra="forbid")
    bash_timeout: Annotated[float, Field(gt=0, strict=True, allow_inf_nan=False)] = DEFAULT_TIMEOUT
    subagent_max_depth: Annotated[int, Field(gt=0, strict=True)] = DEFAULT_MAX_DEPTH
