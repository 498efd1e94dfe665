"""`harness run --model anthropic:MODEL` end to end against the scripted Messages API server:
the key is nowhere in what harness prints or writes, and `harness show` reports each turn's
cache reads and writes."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness_model_anthropic.testing import FakeMessages, error, message, tool_use
from test_cli_support import run_cli
from test_secrets import PROBE

MARKER = f"sk-ant-marker-{secrets.token_hex(12)}"


@pytest.fixture
def fake() -> Iterator[FakeMessages]:
    server = FakeMessages()
    yield server
    server.close()
    server.check()


def _harness(fake: FakeMessages, *args: str) -> tuple[int, str, str]:
    env = {
        "ANTHROPIC_API_KEY": MARKER,
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_MODEL": None,
        "HARNESS_MODEL_RETRIES": "1",
    }
    result = run_cli(*args, env=env)
    return result.returncode, result.stdout, result.stderr


def test_the_key_is_nowhere_and_show_reports_cache_usage(
    fake: FakeMessages, harness_home: Path
) -> None:
    """A 401 echoing the key, a tool printing the environment, the model echoing the key:
    none of it leaves the key in output or on disk; `harness show` sums each turn's usage."""
    cached = {
        "input_tokens": 20,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 50,
    }
    fake.expect(
        error(401, f"invalid x-api-key {MARKER}", "authentication_error"),
        message(tool_uses=(tool_use("bash", {"command": PROBE}),), usage=cached),
        message(
            f"The key is {MARKER}.", usage={"input_tokens": 30, "cache_read_input_tokens": 3100}
        ),
    )
    code, out, err = _harness(fake, "run", "--model", "anthropic:claude-test", "hi")
    assert code == 1
    assert "anthropic:claude-test returned HTTP 401: invalid x-api-key [redacted]" in err
    assert "(check ANTHROPIC_API_KEY)" in err
    code, out, err = _harness(fake, "run", "--json", "--model", "anthropic:claude-test", "go")
    assert code == 0, err
    assert "key=[] github=[]" in out  # the tool ran without the key in its environment
    files = [p for p in harness_home.rglob("*") if p.is_file()]
    assert files and not any(MARKER.encode() in p.read_bytes() for p in files)
    assert MARKER not in err
    session = next(
        p.stem for p in (harness_home / "sessions").glob("*.jsonl") if b"go" in p.read_bytes()
    )
    code, shown, err = _harness(fake, "show", session)
    assert code == 0, err
    assert (
        "usage: 2 requests · 6,200 input tokens (6,100 read from the cache, 50 written to it) "
        "· 14 output"
    ) in shown.splitlines()
    assert MARKER not in shown and "The key is [redacted]." in shown
