"""Secrets: redaction of key values and bearer tokens, in text and on the log; the environment
a tool process gets."""

from __future__ import annotations

from typing import Any

import pytest
from harness_core import secret
from harness_core.log import SessionStore, TurnEnd, TurnStart
from harness_core.loop import Agent
from harness_core.models import ModelBase, ModelError, ModelResponse
from harness_core.secret import REDACTED, Secrets
from harness_core.tools import ExecContext, ToolRegistry
from harness_core.tools.bash import BashArgs, BashTool

KEY = "sk-marker-0123456789abcdef"
ENV = {"OPENAI_API_KEY": KEY, "HOME": "/home/me", "GITHUB_TOKEN": "ghp_0123456789abcdef"}


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Secrets:
    """The process's secrets, for this test only: those of ENV."""
    secrets = Secrets(ENV)
    monkeypatch.setattr(secret, "_installed", secrets)
    return secrets


def test_redact_replaces_key_values_and_bearer_tokens() -> None:
    """Every configured value and any `Bearer TOKEN` becomes [redacted]; the rest stays."""
    secrets = Secrets(ENV)
    text = f"401: bad key {KEY}; header Authorization: Bearer abc.DEF-123456; ghp_0123456789abcdef"
    assert secrets.redact(text) == (
        f"401: bad key {REDACTED}; header Authorization: Bearer {REDACTED}; {REDACTED}"
    )
    assert secrets.redact("Bearer tokens go in a header") == "Bearer tokens go in a header"


def test_short_values_and_plain_variables_are_not_secret() -> None:
    """A placeholder key shorter than 8 characters would blank common words: it is left; a
    variable whose name says nothing secret is not redacted."""
    secrets = Secrets({"OPENAI_API_KEY": "test", "EDITOR": "/usr/bin/vim.basic"})
    assert secrets.redact("test /usr/bin/vim.basic") == "test /usr/bin/vim.basic"
    assert secrets.names == {"OPENAI_API_KEY"}


def test_secret_names_and_url_passwords_are_redacted() -> None:
    """Keys, tokens, secrets, passwords by name; a URL's password (any variable, the configured
    store), as written and decoded; names `secret_env` adds."""
    env = {
        "PGPASSWORD": "pg-password-1",
        "AWS_SECRET_ACCESS_KEY": "aws/secret+key",
        "GITHUB_TOKEN": "ghp_token_value",
        "FOO_PASSWORD": "foo-password",
        "DATABASE_URL": "postgresql://app:p%40ssword-db@db/app",
        "SENTRY_DSN": "https://abcdef123456@sentry.invalid/1",
        "HARNESS_HOME": "/srv/harness/home",
    }
    secrets = Secrets(env, secret_env=["SENTRY_DSN"], store="postgres://u:store-pw-99@h/db")
    text = " ".join([*env.values(), "p@ssword-db", "store-pw-99"])
    r = REDACTED
    assert secrets.redact(text) == f"{r} {r} {r} {r} postgresql://app:{r}@db/app {r} " + (
        f"/srv/harness/home {r} {r}"
    )


def test_tool_environment_is_the_allowlist_and_tool_env() -> None:
    """Only the basic variables, LC_*, and what `tool_env` names; secret or not, nothing
    else, HARNESS_* and PG* included."""
    env = {
        **ENV,
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "PGPASSWORD": "pg-password-1",
        "PGHOST": "db",
        "HARNESS_WEB_TOKEN": "t0ken-for-the-web-host",
        "EDITOR": "vim",
        "NPM_CONFIG_REGISTRY": "https://registry.invalid",
    }
    secrets = Secrets(env, tool_env=["GITHUB_TOKEN", "NPM_CONFIG_REGISTRY"])
    assert secrets.tool_environment(env) == {
        "HOME": "/home/me",
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "GITHUB_TOKEN": "ghp_0123456789abcdef",
        "NPM_CONFIG_REGISTRY": "https://registry.invalid",
    }
    assert Secrets(env).tool_environment(env) == {
        "HOME": "/home/me",
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
    }


def test_the_log_never_stores_a_key(log_store: SessionStore, installed: Secrets) -> None:
    """A turn/end error echoing the key is redacted on disk and in memory alike."""
    with log_store.create() as log:
        log.append("turn/start", TurnStart(), turn=1)
        log.append("turn/end", TurnEnd(status="error", error=f"HTTP 401: key {KEY}"), turn=1)
        log.commit()
        assert log.events[-1].data["error"] == f"HTTP 401: key {REDACTED}"
        raw = log.path.read_bytes()
    assert KEY.encode() not in raw
    assert f"HTTP 401: key {REDACTED}".encode() in raw


async def test_bash_does_not_see_keys(installed: Secrets, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt-injected `echo $OPENAI_API_KEY` prints nothing; other variables still pass."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    command = 'echo "[$OPENAI_API_KEY][$GITHUB_TOKEN][$HOME]"'
    result = await BashTool(timeout=30).execute(BashArgs(command=command), ExecContext())
    assert result.text.startswith("[][][/home/me]\n")


async def test_tool_env_lets_a_chosen_secret_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented escape hatch: a variable listed in tool_env reaches the tool."""
    monkeypatch.setattr(secret, "_installed", Secrets(ENV, tool_env=["OPENAI_API_KEY"]))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    command = 'echo "$OPENAI_API_KEY"'
    result = await BashTool(timeout=30).execute(BashArgs(command=command), ExecContext())
    assert result.text.startswith(KEY)


class _EchoingProvider(ModelBase):
    """A model whose provider echoes the key in its error, as a 401 body can."""

    name = "echoing"

    async def respond(self, messages: Any, tools: Any, on_delta: Any = None) -> ModelResponse:
        raise ModelError(f"HTTP 401: incorrect key {KEY}")


async def test_the_turn_outcome_says_what_the_log_says(
    log_store: SessionStore, installed: Secrets
) -> None:
    """Hosts that show the outcome (web, ACP) get the redacted error, not the raw one."""
    with log_store.create() as log:
        outcome = await Agent(log, _EchoingProvider(), ToolRegistry()).run_turn("hi")
    assert outcome.error == f"HTTP 401: incorrect key {REDACTED}"
