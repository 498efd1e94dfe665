"""The Postgres store's light read path, as a user sees it: `sessions`, `todos`, `show` and
`events` print the same through libpq (ctypes, no psycopg import) as through psycopg, which
serves them when libpq cannot be loaded; a connection failure is the same one line, without
the password, either way. Real CLI processes on a real server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
from harness_store_postgres.testing import fresh_schema, initialised, server_url
from test_cli_support import child_env, run_cli, todo_call, write_script

PLAN = [
    {"text": "Plan.", "tool_calls": [todo_call(("Read", "in_progress"), ("Ship", "pending"))]},
    {"tool_calls": [todo_call(("Read", "completed"), ("Ship", "in_progress"))]},
    {"text": "Half way, \u00e9t\u00e9 \u2713."},
]

# The CLI in a process of its own; it says on stderr whether psycopg was imported. Given
# `fallback`, libpq is never found, as on a machine without it.
CLI = """
import sys
if sys.argv[1] == "fallback":
    import harness_store_postgres._libpq as libpq
    libpq._candidates = lambda: iter(())
from harness_core.cli import main
status = main(sys.argv[2:])
sys.stderr.write("[psycopg imported]\\n" if "psycopg" in sys.modules else "")
sys.exit(status)
"""
IMPORTED = "[psycopg imported]\n"


def harness(path: str, *args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, path, *args],
        env=child_env({"HARNESS_STORE": url}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A store holding two sessions with plans; (its URL, the newest session's id)."""
    with fresh_schema(server_url()) as url:
        initialised(url)
        model = write_script(tmp_path_factory.mktemp("script") / "plan.json", PLAN)
        for prompt in ("first", "second, with \u201cquotes\u201d"):
            ran = run_cli("run", "--store", url, "--model", model, prompt)
            assert ran.returncode == 0, ran.stderr
        listed = run_cli("sessions", "--json", "--store", url)
        yield url, json.loads(listed.stdout)[0]["id"]


@pytest.mark.parametrize(
    "command",
    [
        ["sessions"],
        ["sessions", "--json"],
        ["todos", "{id}"],
        ["todos", "{id}", "--json"],
        ["todos", "{id}", "--history"],
        ["show", "{id}"],
        ["events", "{id}"],
        ["todos", "no-such-session"],
    ],
)
def test_libpq_and_psycopg_print_the_same(filled: tuple[str, str], command: list[str]) -> None:
    url, session = filled
    args = [part.format(id=session) for part in command]
    light, fallback = harness("libpq", *args, url=url), harness("fallback", *args, url=url)
    assert (light.returncode, light.stdout) == (fallback.returncode, fallback.stdout)
    assert light.stderr.replace(IMPORTED, "") == fallback.stderr.replace(IMPORTED, "")
    assert light.stdout.strip() or light.returncode == 1, light.stderr
    if command[0] in ("sessions", "todos") and "--history" not in command:
        assert IMPORTED not in light.stderr  # one-shot queries; --history reads it all
    assert IMPORTED in fallback.stderr


def _with(url: str, *, password: str | None = None, port: int | None = None) -> str:
    parts = urlsplit(url)
    host = f"{parts.hostname}:{port or parts.port or 5432}"
    user = f"{parts.username}:{quote(password or parts.password or '')}@"
    return urlunsplit(parts._replace(netloc=user + host))


@pytest.mark.parametrize(
    "broken",
    [
        {"password": "not-the-s3cret-pw"},  # the server refuses
        {"port": 1},  # nothing listens
    ],
)
def test_a_connection_failure_is_one_line_without_the_password_on_both_paths(
    filled: tuple[str, str], broken: dict[str, object]
) -> None:
    url = _with(filled[0], **broken)  # type: ignore[arg-type]
    secret = urlsplit(url).password
    assert secret
    for path in ("libpq", "fallback"):
        for args in (["sessions"], ["todos", filled[1]]):
            result = harness(path, *args, url=url)
            (line,) = result.stderr.replace(IMPORTED, "").splitlines()
            assert result.returncode == 1
            where = f"{urlsplit(url).hostname}:{urlsplit(url).port}/"
            assert line.startswith(f"harness: error: PostgreSQL store {where}"), line
            assert "cannot connect: " in line and secret not in line


def test_a_malformed_url_is_shown_without_its_password(filled: tuple[str, str]) -> None:
    """libpq quotes a URL it cannot parse whole: the password must not come with it."""
    url = "postgresql://harness:my-pw-is-s3cret@[::1:5432/db"
    for path in ("libpq", "fallback"):
        result = harness(path, "sessions", url=url)
        assert result.returncode == 1
        assert "my-pw-is-s3cret" not in result.stderr and "[redacted]" in result.stderr
