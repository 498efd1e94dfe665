"""harness on a PostgreSQL store, as a user runs it (real CLI processes, a real server):
run, show, todos, events and sessions on `--store postgresql://...`; `harness store init`;
`harness store copy` between files and Postgres, lossless and idempotent; the password in no
output; a never-initialised database named in one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness_store_postgres.testing import fresh_schema, initialised, server_url
from test_cli_support import run_cli, session_ids, todo_call, write_script

PLAN = [
    {
        "text": "Plan first.",
        "tool_calls": [todo_call(("Read", "in_progress"), ("Ship", "pending"))],
    },
    {"tool_calls": [todo_call(("Read", "completed"), ("Ship", "in_progress"))]},
    {"text": "Half way."},
]


@pytest.fixture
def url() -> Iterator[str]:
    """A fresh, initialised store; its URL carries the test server's password."""
    with fresh_schema(server_url()) as fresh:
        yield initialised(fresh)


def password(url: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    value = conninfo_to_dict(url).get("password")
    assert value and len(str(value)) >= 8, "HARNESS_TEST_POSTGRES: name a password of 8+"
    return str(value)


def assert_no_password(url: str, *results: object) -> None:
    for result in results:
        assert password(url) not in f"{result.stdout}{result.stderr}"  # type: ignore[attr-defined]


def test_every_command_works_on_postgres(url: str, harness_home: Path, tmp_path: Path) -> None:
    """run, then sessions, show, todos and events read the session back from the database;
    nothing lands under HARNESS_HOME; `events` prints the envelopes as the file store would."""
    model = write_script(tmp_path / "plan.json", PLAN)
    ran = run_cli("run", "--store", url, "--model", model, "work")
    assert ran.returncode == 0, ran.stderr
    assert session_ids(harness_home) == []
    listed = run_cli("sessions", "--json", "--store", url)
    (session,) = json.loads(listed.stdout)
    assert (session["title"], session["events"]) == ("work", session["events"])
    session_id = session["id"]
    show = run_cli("show", session_id, "--store", url)
    assert show.returncode == 0 and "Half way." in show.stdout, show.stderr
    todos = run_cli("todos", session_id, "--store", url, env={"HARNESS_STORE": None})
    assert todos.returncode == 0 and "Ship" in todos.stdout, todos.stderr
    events = run_cli("events", session_id, env={"HARNESS_STORE": url})
    envelopes = [json.loads(line) for line in events.stdout.splitlines()]
    assert [e["seq"] for e in envelopes] == list(range(session["events"]))
    assert all(list(e)[:4] == ["seq", "type", "ts", "data"] for e in envelopes)
    assert envelopes[-1]["type"] == "turn/end" and envelopes[-1]["turn"] == 1
    again = run_cli("run", "--store", url, "--model", model, "--session", session_id, "more")
    assert again.returncode == 0, again.stderr
    assert_no_password(url, ran, listed, show, todos, events, again)


def test_a_database_never_initialised_is_one_line_naming_store_init() -> None:
    with fresh_schema(server_url()) as url:
        for command in (["sessions"], ["show", "x"], ["events", "x"], ["todos", "x"]):
            result = run_cli(*command, "--store", url)
            assert result.returncode == 1
            (line,) = result.stderr.splitlines()
            assert "never initialised: run `harness store init --store URL`" in line
            assert_no_password(url, result)
        init = run_cli("store", "init", "--store", url)
        assert init.returncode == 0 and "created the tables" in init.stdout, init.stderr
        again = run_cli("store", "init", "--store", url)
        assert again.returncode == 0 and "up to date" in again.stdout
        assert run_cli("sessions", "--store", url).returncode == 0
        assert_no_password(url, init, again)


def test_copy_file_to_postgres_to_file_is_byte_identical_and_idempotent(
    url: str, harness_home: Path, tmp_path: Path
) -> None:
    for prompt in ("one", "two"):
        model = write_script(tmp_path / f"{prompt}.json", PLAN)
        assert run_cli("run", "--model", model, prompt).returncode == 0
    there = run_cli("store", "copy", f"file://{harness_home}", url)
    assert there.returncode == 0, there.stderr
    assert there.stdout.count(": copied (") == 2
    again = run_cli("store", "copy", f"file://{harness_home}", url)
    assert again.returncode == 0 and again.stdout.count("already there") == 2
    # The summary rows the copy's commits wrote list as the files do (a row has no path).
    listings = [
        run_cli("sessions", "--json", "--store", s) for s in (f"file://{harness_home}", url)
    ]
    files, rows = ([{**s, "path": None} for s in json.loads(r.stdout)] for r in listings)
    assert rows == files and len(rows) == 2
    back = tmp_path / "back"
    home = run_cli("store", "copy", url, f"file://{back}")
    assert home.returncode == 0, home.stderr
    originals = sorted((harness_home / "sessions").glob("*.jsonl"))
    assert len(originals) == 2
    for original in originals:
        assert (back / "sessions" / original.name).read_bytes() == original.read_bytes()
    assert_no_password(url, there, again, home)


def test_copy_extends_a_prefix_and_refuses_a_divergence(
    url: str, harness_home: Path, tmp_path: Path
) -> None:
    """A destination that holds the first turn gets the second; one whose events differ is
    refused with exit 1, one line naming the session, and is left as it was."""
    model = write_script(tmp_path / "plan.json", PLAN)
    assert run_cli("run", "--model", model, "one").returncode == 0
    (session_id,) = session_ids(harness_home)
    assert run_cli("store", "copy", f"file://{harness_home}", url).returncode == 0
    assert run_cli("run", "--model", model, "--session", session_id, "two").returncode == 0
    extended = run_cli("store", "copy", f"file://{harness_home}", url, "--session", session_id)
    assert extended.returncode == 0 and f"{session_id}: extended" in extended.stdout
    stored = run_cli("events", session_id, "--store", url).stdout
    path = harness_home / "sessions" / f"{session_id}.jsonl"
    assert stored == path.read_text()

    other = tmp_path / "other"
    (other / "sessions").mkdir(parents=True)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"turn"', b'"turn" ', 1)  # same event, other bytes
    (other / "sessions" / path.name).write_bytes(b"".join(lines))
    refused = run_cli("store", "copy", f"file://{other}", url)
    assert refused.returncode == 1
    (line,) = refused.stderr.splitlines()
    assert f"session {session_id} differs" in line and "nothing was copied" in line
    assert run_cli("events", session_id, "--store", url).stdout == stored
    assert_no_password(url, extended, refused)


def test_two_servers_on_one_store_show_each_others_turns_live(
    url: str, harness_home: Path, tmp_path: Path
) -> None:
    """Two `harness serve` processes on one Postgres store list the same sessions, and a turn
    run through one reaches a stream served by the other as it is committed (the store's
    notification, not a look at a file)."""
    from web_support import serve, sse_events

    script = write_script(tmp_path / "plan.json", PLAN)
    env = {"HARNESS_STORE": url}
    with (
        serve(tmp_path / "a", "--model", script, env=env) as first,
        serve(tmp_path / "b", env=env) as second,
        first.client() as client_a,
        second.client(timeout=60) as client_b,
    ):
        created = client_a.post("/api/sessions", json={})
        assert created.status_code == 201, created.text
        session = created.json()["id"]
        listed = client_b.get("/api/sessions").json()["sessions"]
        assert session in [s["id"] for s in listed]
        with client_b.stream("GET", f"/api/sessions/{session}/events") as stream:
            started = client_a.post(f"/api/sessions/{session}/turns", json={"prompt": "work"})
            assert started.status_code == 202, started.text
            received = sse_events(stream, until=10)
    types = [e["data"]["type"] for e in received if e["event"] == "message"]
    assert "turn/start" in types and "todo/write" in types
    assert all(password(url) not in line for line in (first.stderr, second.stderr))


@pytest.fixture(params=["file", "postgres"])
def store_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The environment of a host on the file store (none), or on a fresh Postgres one."""
    if request.param == "file":
        yield {}
        return
    with fresh_schema(server_url()) as fresh:
        yield {"HARNESS_STORE": initialised(fresh)}


def test_a_nul_in_a_session_id_is_not_found_on_every_store(
    store_env: dict[str, str], tmp_path: Path
) -> None:
    """`/api/sessions/ID%00x/...` is 404 on every store, never a 500 (a database refuses a
    NUL in text) and never the session whose id the NUL cuts it to."""
    from web_support import serve

    with serve(tmp_path / "home", env=store_env) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        bad = f"/api/sessions/{session}%00x"
        requests = [
            ("GET", f"{bad}/history", None),
            ("GET", f"{bad}/events", None),
            ("POST", f"{bad}/turns", {"prompt": "hello"}),
            ("PATCH", bad, {"title": "renamed"}),
            ("DELETE", bad, None),
            ("POST", f"{bad}/cancel", None),
            ("DELETE", f"{bad}/queue", {"position": 0, "prompt": "hello"}),
            ("POST", f"{bad}/approvals", {"call_id": "c1", "answer": "once"}),
        ]
        for method, path, body in requests:
            answer = client.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
        assert client.get(f"/api/sessions/{session}/history").status_code == 200
        assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [session]


def test_an_approval_is_on_the_log_before_its_call_runs_on_every_store(
    store_env: dict[str, str], tmp_path: Path
) -> None:
    """`harness run` killed with -9 while a call runs: the call's `tool/approval` (the policy's
    allow, no person asked) is on the log afterwards, as the approval contract promises."""
    import os
    import signal
    import subprocess
    import time

    from test_cli_support import HARNESS, bash_call, child_env

    work = tmp_path / "work"
    work.mkdir()
    model = write_script(
        tmp_path / "slow.json",
        [{"tool_calls": [bash_call("touch started; sleep 60")]}, {"text": "done"}],
    )
    env = {"HARNESS_HOME": str(tmp_path / "home"), **store_env}
    running = subprocess.Popen(
        [HARNESS, "run", "--approval", "auto", "--model", model, "go"],
        env=child_env(env),
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the call's processes die with it
    )
    try:
        deadline = time.monotonic() + 60
        while not (work / "started").exists():
            assert running.poll() is None and time.monotonic() < deadline, "the call never ran"
            time.sleep(0.05)
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
    (session,) = [s["id"] for s in json.loads(run_cli("sessions", "--json", env=env).stdout)]
    events = [json.loads(line) for line in run_cli("events", session, env=env).stdout.splitlines()]
    (call,) = next(e for e in events if e["type"] == "message/assistant")["data"]["tool_calls"]
    approvals = [e["data"] for e in events if e["type"] == "tool/approval"]
    assert approvals == [
        {"call_id": call["id"], "decision": "allow", "by": "policy", "scope": "once"}
    ], [e["type"] for e in events]
