"""`--model` specs for the built-in providers: `scripted:PATH`, `openai:MODEL`, `deepseek:MODEL`.

Keys, base URLs and default model names come from the environment; no model name is
hard-coded, because providers retire them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ._base import Model

__all__ = ["PRESETS", "ModelConfigError", "Preset", "build_model"]


class ModelConfigError(ValueError):
    """A model spec that cannot be built: unknown provider, no key, no model name."""


@dataclass(frozen=True, slots=True)
class Preset:
    key_env: str
    base_url_env: str
    model_env: str
    default_base_url: str | None
    # Tokens, for compaction; the config's `context_window` overrides it for another model.
    context_window: int


PRESETS: Final = {
    "openai": Preset("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", None, 128_000),
    "deepseek": Preset(
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "DEEPSEEK_MODEL",
        "https://api.deepseek.com",
        128_000,
    ),
}


def build_model(spec: str, options: Mapping[str, Any], env: Mapping[str, str]) -> Model | None:
    """The built-in model for `spec`, or None when the provider is not a built-in one."""
    provider, _, rest = spec.partition(":")
    if provider == "scripted":
        from .scripted import ScriptedModel

        if not rest:
            raise ModelConfigError("scripted needs a script file: --model scripted:PATH")
        return ScriptedModel.from_file(Path(rest), record=False)
    preset = PRESETS.get(provider)
    if preset is None:
        return None
    model_name = rest or env.get(preset.model_env, "")
    if not model_name:
        raise ModelConfigError(
            f"no {provider} model named: use --model {provider}:MODEL or set {preset.model_env}"
        )
    api_key = env.get(preset.key_env, "")
    if not api_key:
        raise ModelConfigError(f"{provider}:{model_name} needs an API key: set {preset.key_env}")
    base_url = options.get("base_url") or env.get(preset.base_url_env) or preset.default_base_url
    # the openai SDK loads only here
    import openai

    from ._retry import read_timeout
    from .openai_compat import OpenAICompatModel, RetryPolicy

    timeout, retries = options.get("timeout"), options.get("retries")
    return OpenAICompatModel(
        model_name,
        api_key=api_key,
        base_url=base_url,
        provider=provider,
        key_env=preset.key_env,
        retry=RetryPolicy() if retries is None else RetryPolicy(attempts=retries + 1),
        timeout=read_timeout(openai.Timeout, timeout),
        context_window=preset.context_window,
    )


def known_providers() -> list[str]:
    return ["scripted", *PRESETS]
