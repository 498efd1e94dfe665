"""The environment tools get, through the real CLI: only the allowlist and `tool_env` reach
`bash`, and no secret value the process holds lands in the log, `show` or `events`, not even
when a command prints it from a file."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from harness_core.testing.openai_server import OpenAIServer, reply
from test_cli_support import Terminal, bash_call, run_cli, session_ids, write_script

# Variables a user's shell may well hold, each secret; none may reach a tool or the log.
HELD = {
    "PGPASSWORD": f"pg-{secrets.token_hex(10)}",
    "GITHUB_TOKEN": f"ghp_{secrets.token_hex(10)}",
    "AWS_SECRET_ACCESS_KEY": f"aws/{secrets.token_hex(10)}",
    "FOO_PASSWORD": f"foo-{secrets.token_hex(10)}",
}
DB_PASSWORD = f"db-{secrets.token_hex(10)}"
DATABASE_URL = f"postgresql://app:{DB_PASSWORD}@db.invalid:5432/app"
SECRET_VALUES = (*HELD.values(), DB_PASSWORD)
# Not secret-named, just not named anywhere: tools do not get it either.
UNNAMED = f"plain-{secrets.token_hex(6)}"
VISIBLE = f"visible-{secrets.token_hex(6)}"
NPM_TOKEN = f"npm_{secrets.token_hex(10)}"
CONFIG = 'tool_env = ["TOOL_VISIBLE", "NPM_TOKEN"]\n'


def environment(home: Path) -> dict[str, str | None]:
    return {
        **HELD,
        "DATABASE_URL": DATABASE_URL,
        "SOME_SETTING": UNNAMED,
        "TOOL_VISIBLE": VISIBLE,
        "NPM_TOKEN": NPM_TOKEN,
        "HARNESS_CONFIG": str(home / "config.toml"),
        "HARNESS_APPROVAL": "auto",
    }


def tool_outputs(events: list[dict[str, object]]) -> str:
    results = [e["data"] for e in events if e["type"] == "tool/result"]
    return "\n".join(str(r["text"]) for r in results)  # type: ignore[index]


@pytest.mark.parametrize("sandbox", ["workspace", "off"])
def test_bash_gets_the_allowlist_and_secrets_stay_out_of_everything(
    tmp_path: Path, harness_home: Path, sandbox: str
) -> None:
    """`env` in bash lists no secret and nothing unnamed; `tool_env` names pass (a secret one
    still redacted); a held secret read from a file is redacted in the log, show and events."""
    harness_home.mkdir()
    (harness_home / "config.toml").write_text(CONFIG)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "leaked.txt").write_text(f"pw={HELD['PGPASSWORD']} db={DB_PASSWORD}\n")
    model = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [bash_call("env | sort")]},
            {"tool_calls": [bash_call('test "$NPM_TOKEN" && echo npm-token-passed')]},
            {"tool_calls": [bash_call("cat leaked.txt")]},
            {"text": "done"},
        ],
    )
    env = environment(harness_home)
    ran = run_cli(
        "run", "--json", "--sandbox", sandbox, "--model", model, "go", env=env, cwd=workspace
    )
    assert ran.returncode == 0, ran.stderr
    (session,) = session_ids(harness_home)
    shown = run_cli("show", session, env=env)
    listed = run_cli("events", session, env=env)
    assert shown.returncode == 0 and listed.returncode == 0, shown.stderr + listed.stderr
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    output = tool_outputs(events)
    names = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
    assert {"PATH", "HOME"} <= names and "TOOL_VISIBLE" in names, output
    for name in (*HELD, "DATABASE_URL", "SOME_SETTING", "HARNESS_HOME", "HARNESS_CONFIG"):
        assert name not in names, output
    assert f"TOOL_VISIBLE={VISIBLE}" in output and "npm-token-passed" in output
    assert "pw=[redacted] db=[redacted]" in output and "pw=[redacted]" in shown.stdout
    stored = b"".join(p.read_bytes() for p in harness_home.rglob("*") if p.is_file())
    for value in (*SECRET_VALUES, NPM_TOKEN, UNNAMED):
        for where in (ran.stdout, ran.stderr, shown.stdout, listed.stdout):
            assert value not in where, where
        assert value.encode() not in stored


@pytest.fixture
def pg_store() -> Iterator[tuple[str, str]]:
    """A fresh Postgres store: its URL without the password, and the password (PGPASSWORD)."""
    from harness_store_postgres.testing import fresh_schema, initialised, server_url

    with fresh_schema(server_url()) as url:
        parts = urlsplit(initialised(url))
        password = parts.password or ""
        assert len(password) >= 8, "HARNESS_TEST_POSTGRES: name a password of 8+"
        host = parts.netloc.rsplit("@", 1)[1]
        yield urlunsplit(parts._replace(netloc=f"{parts.username}@{host}")), password


def test_pgpassword_as_the_readme_recommends_never_reaches_bash_or_the_log(
    pg_store: tuple[str, str], tmp_path: Path, harness_home: Path
) -> None:
    """The store's password in PGPASSWORD, as the README says: bash's `env` lacks it, and
    the password printed from a file is redacted in the database's log, show and events."""
    url, password = pg_store
    (tmp_path / "pw.txt").write_text(f"the password is {password}\n")
    model = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [bash_call("env; cat pw.txt")]}, {"text": "done"}],
    )
    env = {"PGPASSWORD": password, "HARNESS_STORE": url, "HARNESS_APPROVAL": "auto"}
    ran = run_cli("run", "--sandbox", "off", "--model", model, "go", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    session = ran.stdout.splitlines()[-1].split()[1]
    shown = run_cli("show", session, env=env)
    listed = run_cli("events", session, env=env)
    assert listed.returncode == 0, listed.stderr
    output = tool_outputs([json.loads(line) for line in listed.stdout.splitlines()])
    assert "PGPASSWORD" not in output and "HARNESS_STORE" not in output, output
    assert "the password is [redacted]" in output
    for result in (ran, shown, listed):
        assert password not in result.stdout + result.stderr


def test_a_password_in_the_configured_store_url_is_redacted(
    pg_store: tuple[str, str], tmp_path: Path, harness_home: Path
) -> None:
    """`store` in config.toml with the password in its URL: a command printing that password
    stores and shows [redacted], as for the variables."""
    url, password = pg_store
    parts = urlsplit(url)
    with_password = urlunsplit(parts._replace(netloc=parts.netloc.replace("@", f":{password}@")))
    harness_home.mkdir()
    (harness_home / "config.toml").write_text(f"store = {json.dumps(with_password)}\n")
    (tmp_path / "pw.txt").write_text(f"the password is {password}\n")
    model = write_script(
        tmp_path / "s.json", [{"tool_calls": [bash_call("cat pw.txt")]}, {"text": "done"}]
    )
    env = {"HARNESS_STORE": None, "PGPASSWORD": None, "HARNESS_APPROVAL": "auto"}
    ran = run_cli("run", "--sandbox", "off", "--model", model, "go", env=env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    session = ran.stdout.splitlines()[-1].split()[1]
    listed = run_cli("events", session, env=env)
    assert "the password is [redacted]" in tool_outputs(
        [json.loads(line) for line in listed.stdout.splitlines()]
    )
    for result in (ran, listed):
        assert password not in result.stdout + result.stderr


def test_show_and_events_redact_what_this_process_holds(tmp_path: Path, harness_home: Path) -> None:
    """A log written before a value was a secret (or by a process without it) still holds
    it; `show`, `show --json` and `events` print it redacted all the same."""
    value = HELD["FOO_PASSWORD"]
    model = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [bash_call(f"echo was {value}")]}, {"text": f"it was {value}"}],
    )
    ran = run_cli("run", "--sandbox", "off", "--model", model, "go", cwd=tmp_path)
    assert ran.returncode == 0 and value in ran.stdout, ran.stderr  # not a secret then
    (session,) = session_ids(harness_home)
    env = {"FOO_PASSWORD": value}
    results = [run_cli(*command, session, env=env) for command in (["show"], ["events"])]
    results.append(run_cli("show", "--json", session, env=env))
    for result in results:
        assert result.returncode == 0, result.stderr
        assert value not in result.stdout and "was [redacted]" in result.stdout, result.stdout
    json.loads(results[2].stdout)
    assert [json.loads(line)["seq"] for line in results[1].stdout.splitlines()][:2] == [0, 1]


def test_a_secret_streamed_in_pieces_is_redacted_on_the_terminal(
    openai_server: OpenAIServer, tmp_path: Path, harness_home: Path
) -> None:
    """The provider streams a held value back in seven pieces: the lines `run` prints, plain
    and live on a terminal, show it redacted, as the log does."""
    value = HELD["PGPASSWORD"]
    env = {
        "PGPASSWORD": value,
        "OPENAI_API_KEY": "sk-test-key-123",
        "OPENAI_BASE_URL": openai_server.base_url,
    }
    text = f"The password is {value}, as asked.\nNothing more."
    openai_server.expect(reply(text, pieces=7), reply(text, pieces=7))
    plain = run_cli("run", "--model", "openai:m", "go", env=env, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "The password is [redacted], as asked." in plain.stdout.splitlines()
    terminal = Terminal("run", "--model", "openai:m", "go", env=env, cwd=tmp_path)
    assert terminal.wait() == 0, terminal.text
    assert "The password is [redacted], as asked." in terminal.text
    for output in (plain.stdout + plain.stderr, terminal.raw.decode("utf-8", "replace")):
        assert value not in output


async def test_acp_sends_no_held_secret(tmp_path: Path, harness_home: Path) -> None:
    """Over ACP a tool's output and the model's text carry a held value: the client gets it
    redacted in every update."""
    from test_acp import bridge, prompt

    value = HELD["AWS_SECRET_ACCESS_KEY"]
    (tmp_path / "leaked.txt").write_text(f"key {value}\n")
    model = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [bash_call("cat leaked.txt")]}, {"text": f"The key is {value}."}],
    )
    env: dict[str, str | None] = {"AWS_SECRET_ACCESS_KEY": value}
    async with bridge(tmp_path, "--model", model, "--sandbox", "off", env=env) as (conn, rec):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=prompt("go"))
    assert answer.stop_reason == "end_turn"
    assert rec.text() == "The key is [redacted]."
    sent = json.dumps([update.model_dump(mode="json") for update in rec.updates])
    assert value not in sent and "key [redacted]" in sent
