"""Configuration: `$HARNESS_HOME/config.toml` (or `$HARNESS_CONFIG`), overridden by env vars.

    model = "deepseek:MODEL"              # or HARNESS_MODEL
    max_steps = 50                        # or HARNESS_MAX_STEPS
    [plugins.todo]
    allow_parallel_in_progress = false    # or HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS

The top-level settings are validated together by `Config.settings()` (a wrong type is an error
naming the key and where it came from; an unknown key is an error too). A plugin reads its own
section through `ctx.config` (inject "config"); an env var `HARNESS_<PLUGIN>_<KEY>` wins over
the file. Env values are read as JSON when they parse (`true`, `3`, `"x"`), else as plain
strings.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:  # pydantic loads in `parse`: the query commands read config and never parse
    from pydantic import BaseModel

__all__ = ["Config", "ConfigError", "PluginConfig", "Settings", "parse_flag"]

ModelT = TypeVar("ModelT", bound="BaseModel")


class ConfigError(ValueError):
    """The config file or an env override is malformed."""


def _env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: JSON nested too deeply
        return raw


_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off", ""})
FLAG_SPELLINGS: Final = "1/0, true/false, yes/no, on/off"


def parse_flag(name: str, raw: str | None) -> bool:
    """An on/off environment variable; a spelling outside FLAG_SPELLINGS is a ConfigError."""
    if raw is None:
        return False
    word = raw.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ConfigError(f"{name}={raw!r} is not on or off: use {FLAG_SPELLINGS}")


# -- the top-level settings -------------------------------------------------------------------


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _positive_int(value: object) -> int | None:
    # `type(...) is int`: a bool is an int to Python, but `true` is not a number of steps.
    return value if type(value) is int and value >= 1 else None


def _count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 < value < float("inf") else None


def _fraction(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 < value <= 1 else None


def _window(value: object) -> int | dict[str, int] | None:
    """Tokens for any model, or a table of them by model name (`"deepseek:NAME" = 65536`)."""
    if isinstance(value, dict):
        good = all(_positive_int(v) is not None for v in value.values())
        return {str(k): int(v) for k, v in value.items()} if good else None
    return _positive_int(value)


_SIZE_KIND: Final = 'a size in bytes, or a string such as "512M" or "2G" (0: no cap)'


_SIZE: Final = re.compile(r"(\d+)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)


def _size(value: object) -> int | None:
    """Bytes from a whole number or a string such as "512M" or "2GiB"."""
    if type(value) is int:
        return _count(value)
    match = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    return int(match[1]) << (10 * " KMGT".index(match[2].upper() or " "))


def _choice(*choices: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return value if value in choices else None

    return check


def _switch(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _names(value: object) -> tuple[str, ...] | None:
    """A list of variable names; from the environment also `A,B` (comma-separated)."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return None


@dataclass(frozen=True, slots=True)
class Settings:
    """The top-level settings, validated. None means "not set": the component's default."""

    model: str | None = None
    models: tuple[str, ...] = ()
    max_steps: int | None = None
    system_prompt: str | None = None
    model_timeout: float | None = None
    model_retries: int | None = None
    compact_at: float | None = None
    context_window: int | dict[str, int] | None = None
    secret_env: tuple[str, ...] = ()
    tool_env: tuple[str, ...] = ()
    sandbox: str | None = None
    sandbox_network: bool = False
    sandbox_tmp_size: int | None = None
    sandbox_shm_size: int | None = None
    sandbox_memory: int | None = None
    sandbox_processes: int | None = None
    web_sessions: int | None = None
    store: str | None = None
    approval: str | None = None


# key -> (check returning the value or None when invalid, what a valid value is)
_CHECKS: Final[dict[str, tuple[Callable[[object], object], str]]] = {
    "model": (_text, "a model spec string such as openai:MODEL"),
    "models": (_names, "a list of model specs such as openai:MODEL"),
    "max_steps": (_positive_int, "a positive integer"),
    "system_prompt": (_text, "a string"),
    "model_timeout": (_seconds, "a positive number of seconds"),
    "model_retries": (_count, "a whole number, 0 or more"),
    "compact_at": (_fraction, "a fraction of the context window, above 0 and at most 1"),
    "context_window": (_window, "a positive number of tokens, or a table of them by model"),
    "secret_env": (_names, "a list of environment variable names"),
    "tool_env": (_names, "a list of environment variable names"),
    "sandbox": (_choice("workspace", "off"), "workspace or off"),
    "sandbox_network": (_switch, "true or false"),
    "sandbox_tmp_size": (_size, _SIZE_KIND),
    "sandbox_shm_size": (_size, _SIZE_KIND),
    "sandbox_memory": (_size, _SIZE_KIND),
    "sandbox_processes": (_count, "a whole number, 0 or more (0: no cap)"),
    "web_sessions": (_positive_int, "a positive number of sessions"),
    "store": (_text, "a store URL such as file:///path or postgresql://host/db"),
    "approval": (_choice("ask", "auto", "deny"), "ask, auto or deny"),
}

# A renamed setting, in the file or the environment, is an error saying what to write instead:
# ignored, it would silently take a variable from the tools that used to get it.
_RENAMED: Final = {
    "pass_env": "is now tool_env, which names every variable tools get beyond PATH, HOME and "
    "the other basic ones (docs/security.md)",
}


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
            env_name = _env_name(self.plugin, key)
            raw = self._env.get(env_name)
            if raw is not None:
                got = f", got {raw!r} from the environment"
            else:
                got = f", got {first['input']!r}" if first["type"] != "extra_forbidden" else ""
            raise ConfigError(
                f"plugins.{self.plugin}.{key} (or {env_name}): {first['msg']}{got}"
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
        import tomllib  # only with a config file to read

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

    def settings(self) -> Settings:
        """Every top-level setting checked; the first problem is a ConfigError naming it."""
        where = f"in {self.path}" if self.path else "in the config"
        for old, instead in _RENAMED.items():
            if old in self.data or _env_name(old) in self._env:
                raise ConfigError(f"{old} (or {_env_name(old)}) {instead}")
        unknown = sorted(set(self.data) - set(_CHECKS) - {"plugins"})
        if unknown:
            known = ", ".join([*_CHECKS, "plugins"])
            raise ConfigError(f"unknown setting {unknown[0]!r} {where} (known: {known})")
        plugins = self.data.get("plugins", {})
        if not isinstance(plugins, dict):
            raise ConfigError(f"plugins {where} must be a table of [plugins.NAME] sections")
        values: dict[str, object] = {}
        for key, (check, kind) in _CHECKS.items():
            raw = self._env.get(_env_name(key))
            if raw is None:
                value = self.data.get(key)
            else:  # a string setting takes the variable as written: HARNESS_SYSTEM_PROMPT=42
                value = raw if check is _text else _env_value(raw)
            if value is None:
                continue
            values[key] = check(value)
            if values[key] is None:
                got = f"{raw!r} from the environment" if raw is not None else f"{value!r} {where}"
                raise ConfigError(f"{key} (or {_env_name(key)}) must be {kind}, got {got}")
        return Settings(**values)  # type: ignore[arg-type]

    def plugin(self, name: str) -> PluginConfig:
        plugins = self.data.get("plugins", {})
        section = plugins.get(name, {}) if isinstance(plugins, dict) else {}
        if not isinstance(section, dict):
            raise ConfigError(f"plugins.{name} must be a table")
        return PluginConfig(name, section, self._env)
