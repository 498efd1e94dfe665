"""A Postgres store that cannot be reached, as a user sees it: `sessions`, `todos`, `show` and
`events` fail in one line naming host, port and database and the server's reason, never the
password (psycopg's errors, read through the store). Real CLI processes on a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
from harness_store_postgres.testing import fresh_schema, initialised, server_url
from test_cli_support import run_cli, todo_call, write_script

PLAN = [
    {"text": "Plan.", "tool_calls": [todo_call(("Read", "in_progress"), ("Ship", "pending"))]},
    {"text": "Half way."},
]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A store holding a session with a plan; (its URL, the session's id)."""
    with fresh_schema(server_url()) as url:
        initialised(url)
        model = write_script(tmp_path_factory.mktemp("script") / "plan.json", PLAN)
        ran = run_cli("run", "--store", url, "--model", model, "go")
        assert ran.returncode == 0, ran.stderr
        listed = run_cli("sessions", "--json", "--store", url)
        yield url, json.loads(listed.stdout)[0]["id"]


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
def test_a_connection_failure_is_one_line_without_the_password(
    filled: tuple[str, str], broken: dict[str, object]
) -> None:
    url = _with(filled[0], **broken)  # type: ignore[arg-type]
    secret = urlsplit(url).password
    assert secret
    for args in (["sessions"], ["todos", filled[1]], ["show", filled[1]], ["events", filled[1]]):
        result = run_cli(*args, env={"HARNESS_STORE": url})
        (line,) = result.stderr.splitlines()
        assert result.returncode == 1
        where = f"{urlsplit(url).hostname}:{urlsplit(url).port}/"
        assert line.startswith(f"harness: error: PostgreSQL store {where}"), line
        assert "cannot connect: " in line and secret not in line


def test_a_malformed_url_is_shown_without_its_password() -> None:
    """libpq quotes a URL it cannot parse whole: the password must not come with it."""
    url = "postgresql://harness:my-pw-is-s3cret@[::1:5432/db"
    result = run_cli("sessions", env={"HARNESS_STORE": url})
    assert result.returncode == 1
    assert "my-pw-is-s3cret" not in result.stderr and "[redacted]" in result.stderr
