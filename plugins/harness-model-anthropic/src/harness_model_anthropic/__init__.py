"""harness-model-anthropic: `--model anthropic:MODEL`, Claude on the native Messages API.

A provider plugin: `name` and a `harness_model` hook. The key comes from ANTHROPIC_API_KEY,
the base URL from `--base-url` or ANTHROPIC_BASE_URL, the model from the spec or
ANTHROPIC_MODEL; no model name is built in, because providers retire them. The module stays
light: the SDK loads only when an `anthropic:` model is built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    from ._model import AnthropicModel

__all__ = ["build", "harness_model", "name"]

name = "anthropic"

KEY_ENV: Final = "ANTHROPIC_API_KEY"
BASE_URL_ENV: Final = "ANTHROPIC_BASE_URL"
MODEL_ENV: Final = "ANTHROPIC_MODEL"
MAX_TOKENS_ENV: Final = "ANTHROPIC_MAX_TOKENS"
THINKING_ENV: Final = "ANTHROPIC_THINKING_BUDGET"


@hookimpl
def harness_model(spec: str, options: dict[str, Any]) -> AnthropicModel | None:
    provider, _, rest = spec.partition(":")
    if provider != name:
        return None
    return build(rest, options, os.environ)


def build(model: str, options: Mapping[str, Any], env: Mapping[str, str]) -> AnthropicModel:
    """The model for `anthropic:MODEL`; a ModelError (one line) says what is missing."""
    # Here, not at the top: harness loads every plugin for a query command too (`harness
    # sessions` with a store plugin), which must not pay for the models package (anyio).
    from harness_core.models import ModelError

    model_name = model or env.get(MODEL_ENV, "")
    if not model_name:
        raise ModelError(
            f"no anthropic model named: use --model anthropic:MODEL or set {MODEL_ENV}"
        )
    api_key = env.get(KEY_ENV, "")
    if not api_key:
        raise ModelError(f"anthropic:{model_name} needs an API key: set {KEY_ENV}")
    max_tokens = _count(env, MAX_TOKENS_ENV)
    import anthropic
    from harness_core.models import read_timeout

    from ._model import DEFAULT_MAX_TOKENS, AnthropicModel, RetryPolicy

    timeout, retries = options.get("timeout"), options.get("retries")
    return AnthropicModel(
        model_name,
        api_key=api_key,
        base_url=options.get("base_url") or env.get(BASE_URL_ENV) or None,
        retry=RetryPolicy() if retries is None else RetryPolicy(attempts=retries + 1),
        timeout=read_timeout(anthropic.Timeout, timeout),
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        thinking_budget=_count(env, THINKING_ENV),
    )


def _count(env: Mapping[str, str], variable: str) -> int | None:
    value = env.get(variable, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) <= 0:
        from harness_core.models import ModelError

        raise ModelError(f"{variable} must be a positive number of tokens, got {value!r}")
    return int(value)
