"""Secrets: the environment tool processes get, which variables hold secret values, and the one
redactor that keeps those values out of everything harness prints or stores.

Tools get an allowlist, not the user's environment: `TOOL_ENV` (the variables a shell needs to
work: where programs are, who and where the user is, the locale, the terminal, the time zone,
the temporary directory), `LC_*`, and the names the `tool_env` setting (HARNESS_TOOL_ENV) adds.
A denylist cannot keep up with what a user's environment holds (`PGPASSWORD`, `DATABASE_URL`,
`AWS_SECRET_ACCESS_KEY`, a CI's `*_TOKEN`); an allowlist needs no guess. The model of it is
Codex's `shell_environment_policy` with `inherit = "core"`.

A variable holds a secret when its name contains KEY, SECRET, TOKEN, PASSWORD, PASSWD,
PASSPHRASE or CREDENTIAL (any case: Codex's default excludes, and more), or when the
`secret_env` setting (HARNESS_SECRET_ENV) names it; a URL with a password, in any variable or
as the configured store, holds that password. Redaction replaces every such value, and any
`Bearer TOKEN`, by `[redacted]`, whether or not `tool_env` passes the variable to tools.

The host installs the process's secrets once (`install`, after the config is read); the log
writer and the stderr writer both redact through `current()`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import unquote

__all__ = ["REDACTED", "TOOL_ENV", "Secrets", "current", "install"]

REDACTED: Final = "[redacted]"
# What every tool process gets (with LC_*): enough for a shell and the programs it starts.
TOOL_ENV: Final = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TZ", "TMPDIR"}
)
TOOL_ENV_PREFIX: Final = "LC_"
_SECRET_NAME: Final = re.compile(
    r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL", re.IGNORECASE
)
_URL_PASSWORD: Final = re.compile(r"^[a-z][a-z0-9+.-]*://[^:/?#@]*:([^@/?#]+)@", re.IGNORECASE)
# Shorter values are not redacted: a placeholder key such as "x" or "test" would otherwise
# blank out every occurrence of a common word.
MIN_LENGTH: Final = 8
# A token has a digit and 8+ characters, so prose about "Bearer tokens" stays readable.
_BEARER: Final = re.compile(r"\b(Bearer\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,}")


class Secrets:
    """The secret values of one environment (and store URL), and the environment for tools."""

    __slots__ = ("_pattern", "names", "needles", "tool_env", "values")

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        secret_env: Iterable[str] = (),
        tool_env: Iterable[str] = (),
        store: str | None = None,
    ) -> None:
        listed = frozenset(secret_env)
        self.names = frozenset(n for n in env if n in listed or _SECRET_NAME.search(n))
        self.tool_env = TOOL_ENV | frozenset(tool_env)
        values = {env[n] for n in self.names}
        for value in (*env.values(), store or ""):
            values.update(_url_password(value))
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
        """`env` for a tool process: the allowlist, `LC_*` and the `tool_env` names only."""
        allowed = self.tool_env
        return {k: v for k, v in env.items() if k in allowed or k.startswith(TOOL_ENV_PREFIX)}


def _url_password(value: str) -> tuple[str, ...]:
    """The password of a URL such as postgresql://user:PASSWORD@host/db, as written and
    decoded (`p%40ss` is `p@ss` to the server, and in its messages); none without one."""
    match = _URL_PASSWORD.match(value)
    return (match[1], unquote(match[1])) if match else ()


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
