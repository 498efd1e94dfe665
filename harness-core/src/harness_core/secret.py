"""Secrets: which environment variables hold them, the one redactor that keeps their values out
of everything harness prints or logs, and the environment tool processes get without them.

A variable is secret when its name ends in `_API_KEY` (OPENAI_API_KEY, DEEPSEEK_API_KEY, any
provider's key), is HARNESS_WEB_TOKEN, or is listed in the `secret_env` setting
(HARNESS_SECRET_ENV). Tool processes get the environment minus the secret variables, except
those listed in `pass_env` (HARNESS_PASS_ENV). Redaction replaces every secret value, and any
`Bearer TOKEN`, by `[redacted]`, whether or not the variable is passed through.

The host installs the process's secrets once (`install`, after the config is read); the log
writer and the stderr writer both redact through `current()`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["REDACTED", "Secrets", "current", "install"]

REDACTED: Final = "[redacted]"
SECRET_SUFFIX: Final = "_API_KEY"
# The web host's token: a tool that could read it could drive the web API.
ALWAYS_SECRET: Final = frozenset({"HARNESS_WEB_TOKEN"})
# The session store's URL: kept from tools (it may reach a database), and its password, not
# the rest of it, redacted wherever harness writes.
STORE_VARIABLE: Final = "HARNESS_STORE"
_URL_PASSWORD: Final = re.compile(r"^[a-z][a-z0-9+.-]*://[^:/?#@]*:([^@/?#]+)@", re.IGNORECASE)
# Shorter values are not redacted: a placeholder key such as "x" or "test" would otherwise
# blank out every occurrence of a common word.
MIN_LENGTH: Final = 8
# A token has a digit and 8+ characters, so prose about "Bearer tokens" stays readable.
_BEARER: Final = re.compile(r"\b(Bearer\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,}")


class Secrets:
    """The secret variables of one environment and their values."""

    __slots__ = ("_pattern", "names", "needles", "pass_env", "values")

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        secret_env: Iterable[str] = (),
        pass_env: Iterable[str] = (),
    ) -> None:
        extra = ALWAYS_SECRET | {STORE_VARIABLE} | set(secret_env)
        self.names = frozenset(n for n in env if n.endswith(SECRET_SUFFIX) or n in extra)
        self.pass_env = frozenset(pass_env)
        values = {_secret_part(n, env[n]) for n in self.names}
        values = {v for v in values if len(v.strip()) >= MIN_LENGTH}
        # Longest first, so a value containing another is replaced whole.
        self.values = tuple(sorted(values, key=len, reverse=True))
        self._pattern = re.compile("|".join(re.escape(v) for v in self.values or ("(?!)",)))
        # What a value looks like inside a JSON line (the log's quick check before redacting).
        self.needles = (*(_json_form(v) for v in self.values), b"Bearer")

    def redact(self, text: str) -> str:
        """`text` with every secret value and bearer token replaced by `[redacted]`."""
        if self.values:
            text = self._pattern.sub(REDACTED, text)
        if "Bearer" in text:
            text = _BEARER.sub(r"\1" + REDACTED, text)
        return text

    def redact_json(self, value: Any) -> Any:
        """A JSON value with `redact` applied to every string in it, keys included."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(k): self.redact_json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_json(v) for v in value]
        return value

    def in_line(self, line: bytes) -> bool:
        """Whether an encoded JSON line may hold a secret (cheap: substring searches)."""
        return any(needle in line for needle in self.needles)

    def tool_environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` for a tool process: secret variables removed unless passed through."""
        return {k: v for k, v in env.items() if k not in self.names or k in self.pass_env}


def _secret_part(name: str, value: str) -> str:
    """The part of a variable's value to redact: a store URL's password, else all of it."""
    if name != STORE_VARIABLE:
        return value
    match = _URL_PASSWORD.match(value)
    return match[1] if match else ""


def _json_form(value: str) -> bytes:
    return json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")


_installed: Secrets | None = None


def install(secrets: Secrets) -> None:
    """Make `secrets` the process's secrets (the CLI does this once the config is read)."""
    global _installed
    _installed = secrets


def current() -> Secrets:
    """The installed secrets; without an install, those of the process environment."""
    global _installed
    if _installed is None:
        _installed = Secrets(os.environ)
    return _installed
