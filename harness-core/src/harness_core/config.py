"""Configuration: `$HARNESS_HOME/config.toml` (or `$HARNESS_CONFIG`), overridden by env vars.

    model = "deepseek:MODEL"              # or HARNESS_MODEL
    max_steps = 50                        # or HARNESS_MAX_STEPS
    [plugins.todo]
    allow_parallel_in_progress = false    # or HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS

A plugin reads its own section through `ctx.config` (inject "config"); an env var
`HARNESS_<PLUGIN>_<KEY>` wins over the file. Env values are read as JSON when they parse
(`true`, `3`, `"x"`), else as plain strings.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pydantic loads in `parse`: the query commands read config and never parse
    from pydantic import BaseModel

__all__ = ["Config", "ConfigError", "PluginConfig"]

ModelT = TypeVar("ModelT", bound="BaseModel")


class ConfigError(ValueError):
    """The config file or an env override is malformed."""


def _env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _env_name(*parts: str) -> str:
    return "_".join(["HARNESS", *(p.upper().replace("-", "_") for p in parts)])


class PluginConfig:
    """One plugin's section, with env overrides."""

    def __init__(self, plugin: str, section: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.plugin = plugin
        self._section = dict(section)
        self._env = env

    def get(self, key: str, default: Any = None) -> Any:
        raw = self._env.get(_env_name(self.plugin, key))
        if raw is not None:
            return _env_value(raw)
        return self._section.get(key, default)

    def parse(self, model: type[ModelT]) -> ModelT:
        """The whole section validated against `model`, env overrides on top.

        Unknown keys reach the model too, so one with `extra="forbid"` rejects a misspelt
        setting instead of silently ignoring it.
        """
        from pydantic import ValidationError

        values = dict(self._section)
        for key in model.model_fields:
            raw = self._env.get(_env_name(self.plugin, key))
            if raw is not None:
                values[key] = _env_value(raw)
        try:
            return model.model_validate(values)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"plugins.{self.plugin}.{key} (or {_env_name(self.plugin, key)}): {first['msg']}"
            ) from None


class Config:
    """The whole configuration: top-level keys and plugin sections."""

    def __init__(
        self, data: Mapping[str, Any], *, path: Path | None = None, env: Mapping[str, str]
    ) -> None:
        self.data = dict(data)
        self.path = path
        self._env = env

    @classmethod
    def load(cls, home: Path, env: Mapping[str, str] | None = None) -> Config:
        env = os.environ if env is None else env
        path = Path(env["HARNESS_CONFIG"]) if env.get("HARNESS_CONFIG") else home / "config.toml"
        if not path.is_file():
            if env.get("HARNESS_CONFIG"):
                raise ConfigError(f"HARNESS_CONFIG names {path}, which does not exist")
            return cls({}, path=None, env=env)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
        return cls(data, path=path, env=env)

    def get(self, key: str, default: Any = None) -> Any:
        raw = self._env.get(_env_name(key))
        if raw is not None:
            return _env_value(raw)
        return self.data.get(key, default)

    def plugin(self, name: str) -> PluginConfig:
        plugins = self.data.get("plugins", {})
        section = plugins.get(name, {}) if isinstance(plugins, dict) else {}
        if not isinstance(section, dict):
            raise ConfigError(f"plugins.{name} must be a table")
        return PluginConfig(name, section, self._env)
