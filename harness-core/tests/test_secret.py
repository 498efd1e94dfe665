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
    """The process's secrets, for this test only: ENV with GITHUB_TOKEN configured secret."""
    secrets = Secrets(ENV, secret_env=["GITHUB_TOKEN"])
    monkeypatch.setattr(secret, "_installed", secrets)
    return secrets


def test_redact_replaces_key_values_and_bearer_tokens() -> None:
    """Every configured value and any `Bearer TOKEN` becomes [redacted]; the rest stays."""
    secrets = Secrets(ENV, secret_env=["GITHUB_TOKEN"])
    text = f"401: bad key {KEY}; header Authorization: Bearer abc.DEF-123456; ghp_0123456789abcdef"
    assert secrets.redact(text) == (
        f"401: bad key {REDACTED}; header Authorization: Bearer {REDACTED}; {REDACTED}"
    )
    assert secrets.redact("Bearer tokens go in a header") == "Bearer tokens go in a header"


def test_short_values_and_unlisted_variables_are_not_secret() -> None:
    """A placeholder key shorter than 8 characters would blank common words: it is left."""
    secrets = Secrets({"OPENAI_API_KEY": "test", "GITHUB_TOKEN": "ghp_0123456789abcdef"})
    assert secrets.redact("test ghp_0123456789abcdef") == "test ghp_0123456789abcdef"
    assert secrets.names == {"OPENAI_API_KEY"}


def test_tool_environment_drops_secrets_unless_passed_through() -> None:
    """Keys, the web token and configured secrets go; `pass_env` lets chosen ones through."""
    secrets = Secrets(ENV, secret_env=["GITHUB_TOKEN"], pass_env=["GITHUB_TOKEN"])
    web = {**ENV, "HARNESS_WEB_TOKEN": "t0ken-for-the-web-host"}
    assert "HARNESS_WEB_TOKEN" not in Secrets(web).tool_environment(web)
    assert secrets.tool_environment(ENV) == {
        "HOME": "/home/me",
        "GITHUB_TOKEN": "ghp_0123456789abcdef",
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


async def test_pass_env_lets_a_chosen_secret_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented escape hatch: a variable listed in pass_env reaches the tool."""
    monkeypatch.setattr(secret, "_installed", Secrets(ENV, pass_env=["OPENAI_API_KEY"]))
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
