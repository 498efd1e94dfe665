"""The read-only commands: `sessions`, `show`, `events`, and the todo plugin's `todos`;
none needs the writer lock."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness_core.testing.openai_server import OpenAIServer, reply
from test_cli_support import (
    bash_call,
    child_env,
    one_error_line,
    read_events,
    run_cli,
    session_ids,
    todo_call,
    write_script,
)

PLAN = [
    {
        "text": "Plan first.",
        "tool_calls": [
            todo_call(
                ("Read the code", "in_progress"), ("Write a test", "pending"), ("Ship", "pending")
            )
        ],
    },
    {"tool_calls": [bash_call("printf 'one\\ntwo\\n'")]},
    {"tool_calls": [todo_call(("Read the code", "completed"), ("Write the tests", "in_progress"))]},
    {"text": "Half way."},
]


def new_session(home: Path, script: Path) -> str:
    """A session with one turn that planned, ran a command and revised the plan."""
    model = write_script(script, PLAN)
    result = run_cli("run", "--model", model, "work", env={"HARNESS_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    return session_ids(home)[-1]


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One such session for the tests that only read it (each run costs a process start)."""
    home = tmp_path_factory.mktemp("shared") / "harness-home"
    return home, new_session(home, home.parent / "plan.json")


@pytest.fixture
def shared(shared_home: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The shared session's id, with HARNESS_HOME pointing at its home for this test."""
    home, session_id = shared_home
    monkeypatch.setenv("HARNESS_HOME", str(home))
    return session_id


@pytest.fixture
def session(tmp_path: Path, harness_home: Path) -> str:
    """A session of this test's own, for tests that add to it."""
    return new_session(harness_home, tmp_path / "plan.json")


@pytest.fixture
def locked(shared: str) -> Iterator[str]:
    """The shared session, with another process's writer lock held on it for the test."""
    fd = os.open(Path(os.environ["HARNESS_HOME"]) / "sessions" / f"{shared}.jsonl", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield shared
    os.close(fd)


# -- sessions --------------------------------------------------------------------------------


def test_sessions_lists_newest_first_with_the_first_prompt(
    tmp_path: Path, harness_home: Path
) -> None:
    """Two sessions: the one active most recently comes first, titled by its first prompt."""
    for prompt in ("older", "newer"):
        assert (
            run_cli(
                "run", "--model", write_script(tmp_path / "s.json", [{"text": "k"}]), prompt
            ).returncode
            == 0
        )
    older, newer = session_ids(harness_home)
    listed = json.loads(run_cli("sessions", "--json").stdout)
    assert [(s["id"], s["title"]) for s in listed] == [(newer, "newer"), (older, "older")]
    assert set(listed[0]) == {
        "id",
        "created",
        "updated",
        "events",
        "title",
        "parent_session",
        "path",
        "unreadable",
    }
    plain = run_cli("sessions").stdout.splitlines()
    assert plain[0].split() == ["ID", "UPDATED", "EVENTS", "TITLE"]
    assert plain[1].startswith(newer) and plain[1].endswith("newer")


def test_sessions_lists_unreadable_files_instead_of_no_sessions(harness_home: Path) -> None:
    """A directory holding only a FIFO and an empty file lists both as unreadable, at once."""
    directory = harness_home / "sessions"
    directory.mkdir(parents=True)
    os.mkfifo(directory / "fifo.jsonl")
    (directory / "empty.jsonl").touch()
    result = run_cli("sessions", timeout=20)
    assert result.returncode == 0 and result.stderr == ""
    rows = sorted(result.stdout.splitlines()[1:])
    assert rows[0].startswith("empty") and rows[0].endswith("(unreadable: an empty file)")
    assert rows[1].startswith("fifo")
    assert rows[1].endswith("(unreadable: a FIFO, not a regular file)")
    listed = json.loads(run_cli("sessions", "--json").stdout)
    assert {s["id"]: s["unreadable"] for s in listed}["fifo"] == "a FIFO, not a regular file"


@pytest.mark.parametrize("command", [["show"], ["show", "--json"], ["events"], ["todos"]])
def test_reading_an_empty_session_file_says_so(harness_home: Path, command: list[str]) -> None:
    """show, events and todos on a 0-byte session file: one line saying it is empty."""
    directory = harness_home / "sessions"
    directory.mkdir(parents=True)
    (directory / "empty.jsonl").touch()
    result = run_cli(*command[:1], "empty", *command[1:])
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "harness: error: session empty is an empty file, not a session; it has no events to show\n"
    )


def test_sessions_shows_the_parent_of_a_subagent_session(
    tmp_path: Path, harness_home: Path
) -> None:
    """A subagent's own session is listed with the session that spawned it."""
    steps = [
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "look around"}}]},
        {"text": "child answer"},
        {"text": "parent answer"},
    ]
    assert (
        run_cli("run", "--model", write_script(tmp_path / "s.json", steps), "delegate").returncode
        == 0
    )
    listed = {s["id"]: s for s in json.loads(run_cli("sessions", "--json").stdout)}
    (child,) = [s for s in listed.values() if s["parent_session"]]
    assert child["parent_session"] in listed
    assert child["title"] == "look around"
    line = next(
        line for line in run_cli("sessions").stdout.splitlines() if line.startswith(child["id"])
    )
    assert f"↳ {child['parent_session']}: look around" in line


def test_sessions_follows_sessions_continued_created_and_deleted(
    tmp_path: Path, harness_home: Path
) -> None:
    """Each listing shows the sessions as they are now, whatever an earlier listing saw."""
    script = write_script(tmp_path / "s.json", [{"text": "k"}])
    assert run_cli("run", "--model", script, "first").returncode == 0
    (first,) = session_ids(harness_home)
    assert [s["events"] for s in json.loads(run_cli("sessions", "--json").stdout)] == [5]
    assert run_cli("run", "--model", script, "--session", first, "more").returncode == 0
    assert run_cli("run", "--model", script, "second").returncode == 0
    second = session_ids(harness_home)[-1]
    listed = json.loads(run_cli("sessions", "--json").stdout)
    assert [(s["id"], s["events"]) for s in listed] == [(second, 5), (first, 9)]
    (harness_home / "sessions" / f"{first}.jsonl").unlink()
    assert [line.split()[0] for line in run_cli("sessions").stdout.splitlines()] == ["ID", second]


def test_sessions_lists_without_a_usable_cache(tmp_path: Path, harness_home: Path) -> None:
    """A cache directory that is a file, or a garbage cache, changes nothing printed."""
    script = write_script(tmp_path / "s.json", [{"text": "k"}])
    assert run_cli("run", "--model", script, "hello").returncode == 0

    def listing() -> tuple[int, str, str]:
        result = run_cli("sessions")
        return result.returncode, result.stdout, result.stderr

    expected = listing()
    assert expected[0] == 0 and "hello" in expected[1]
    (harness_home / "cache" / "sessions.json").write_bytes(b"\x00garbage")
    assert listing() == expected
    shutil.rmtree(harness_home / "cache")
    (harness_home / "cache").write_text("a file")
    assert listing() == expected


def test_sessions_prints_each_title_clean_on_one_line(tmp_path: Path, harness_home: Path) -> None:
    """A first prompt with terminal escapes, tabs and newlines is one clean row; --json keeps it."""
    prompt = "\x1b]0;pwned\x07Fix\n\tthe   \x1b[31mflaky\x1b[0m test\r\n\x7fnow"
    script = write_script(tmp_path / "s.json", [{"text": "k"}])
    assert run_cli("run", "--model", script, prompt).returncode == 0
    (row,) = run_cli("sessions").stdout.splitlines()[1:]
    assert row.endswith("  Fix the flaky test now")
    assert json.loads(run_cli("sessions", "--json").stdout)[0]["title"] == prompt


def test_sessions_reports_a_bad_config(harness_home: Path) -> None:
    """`sessions` loads no plugin but checks config.toml like every command: one error line."""
    harness_home.mkdir()
    config = harness_home / "config.toml"
    config.write_text("model = [\n")
    assert str(config) in one_error_line(run_cli("sessions"))
    config.write_text('max_steps = "many"\n')
    assert "max_steps" in one_error_line(run_cli("sessions"))


def test_sessions_on_an_empty_home_says_so(harness_home: Path) -> None:
    """No sessions yet: a friendly line (and [] with --json), exit 0."""
    result = run_cli("sessions")
    assert (result.returncode, result.stdout.strip()) == (
        0,
        f"no sessions yet in {harness_home / 'sessions'}",
    )
    assert json.loads(run_cli("sessions", "--json").stdout) == []


# -- show and events -------------------------------------------------------------------------


def test_show_prints_the_transcript(shared: str) -> None:
    """The transcript: header, turn marks, prompt, text, calls with their output, plans."""
    lines = run_cli("show", shared).stdout.splitlines()
    assert lines[0].startswith(f"session {shared} · created ")
    assert lines[2:13] == [
        "── turn 1 ──",
        "› work",
        "Plan first.",
        "Plan · 0/3 done",
        "  ▶ Read the code",
        "  ☐ Write a test",
        "  ☐ Ship",
        "✓ todo_write  Plan 0/3 done · now: Read the code",
        "    Updated todo list: 2 pending, 1 in progress, 0 completed.",
        "✓ $ printf 'one\\ntwo\\n'  exit 0",
        "    one",
    ]
    assert lines[-2:] == ["Half way.", "── turn 1 completed ──"]


def test_show_json_is_what_the_model_is_sent_next(
    session: str, openai_server: OpenAIServer
) -> None:
    """`show --json` plus the new prompt is exactly the next request's message list."""
    before = json.loads(run_cli("show", session, "--json").stdout)
    assert [m["role"] for m in before] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    openai_server.expect(reply("Sure."))
    result = run_cli(
        "run",
        "--session",
        session,
        "--model",
        "openai:test-model",
        "next",
        env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai_server.base_url},
    )
    assert result.returncode == 0, result.stderr
    (request,) = openai_server.requests
    assert request.messages == [*map(as_sent, before), {"role": "user", "content": "next"}]


def as_sent(message: dict[str, Any]) -> dict[str, Any]:
    """The wire form: the API spells "no text, only calls" as null content."""
    if message["role"] == "assistant" and message.get("tool_calls") and not message["content"]:
        return {**message, "content": None}
    return message


def test_events_prints_the_envelopes_as_on_disk(shared: str) -> None:
    """`events` prints one envelope a line, byte for byte the session file's lines."""
    home = Path(os.environ["HARNESS_HOME"])
    result = run_cli("events", shared)
    assert result.stdout == (home / "sessions" / f"{shared}.jsonl").read_text()
    seqs = [e["seq"] for e in read_events(home, shared)]
    assert seqs == list(range(len(result.stdout.splitlines())))


def test_events_skips_garbled_lines_with_a_warning(harness_home: Path, session: str) -> None:
    """A garbled line (named in a warning) and a torn tail (a writer may be mid-line) are left out."""
    path = harness_home / "sessions" / f"{session}.jsonl"
    lines = path.read_bytes().split(b"\n")[:-1]
    path.write_bytes(b"\n".join([*lines[:3], b'{"seq": "three"', *lines[3:]]) + b'\n{"seq')
    result = run_cli("events", session)
    assert result.returncode == 0
    assert result.stdout.encode() == b"".join(line + b"\n" for line in lines)
    assert result.stderr == f"harness: warning: {path.name}: line 4: not JSON; skipped\n"


def test_show_json_keeps_text_as_written(tmp_path: Path, harness_home: Path) -> None:
    """Non-ASCII, control characters and line separators come out as `json.dumps` writes them."""
    text = 'naïve → ✓ 🙂 tab\there \u2028 bell\x07 quote" back\\slash'
    model = write_script(tmp_path / "s.json", [{"text": text}])
    assert run_cli("run", "--model", model, text).returncode == 0
    result = run_cli("show", session_ids(harness_home)[-1], "--json")
    messages = json.loads(result.stdout)
    assert [m["content"] for m in messages[1:]] == [text, text]
    assert result.stdout == json.dumps(messages, indent=2, ensure_ascii=False) + "\n"


def test_readers_work_while_a_writer_holds_the_lock(locked: str) -> None:
    """show, events, todos and sessions never take the writer lock."""
    for args in (["show", locked], ["events", locked], ["todos", locked], ["sessions"]):
        result = run_cli(*args)
        assert result.returncode == 0, (args, result.stderr)


def test_show_flags_a_turn_left_open(harness_home: Path, session: str) -> None:
    """A turn a crashed process left open is pointed out, and the history stays well formed."""
    path = harness_home / "sessions" / f"{session}.jsonl"
    events = read_events(harness_home, session)
    seq = len(events)
    crashed = [
        {"seq": seq, "type": "turn/start", "ts": "2026-01-01T00:00:00.000Z", "data": {}, "turn": 2},
        {
            "seq": seq + 1,
            "type": "message/user",
            "ts": "2026-01-01T00:00:00.000Z",
            "data": {"text": "again"},
            "turn": 2,
        },
        {
            "seq": seq + 2,
            "type": "message/assistant",
            "ts": "2026-01-01T00:00:00.000Z",
            "turn": 2,
            "data": {"text": None, "tool_calls": [{"id": "c9", "name": "bash", "arguments": "{}"}]},
        },
    ]
    with path.open("a") as handle:
        handle.writelines(json.dumps(e) + "\n" for e in crashed)
    assert run_cli("show", session).stdout.splitlines()[-1].startswith("(a turn is still open")
    messages = json.loads(run_cli("show", session, "--json").stdout)
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "c9"


def test_unknown_session_ids_are_one_line_errors() -> None:
    """show, events and todos with an unknown id fail with one line and status 1."""
    for command in ("show", "events", "todos"):
        line = one_error_line(run_cli(command, "20200101-000000-abcdef"))
        assert "no session '20200101-000000-abcdef'" in line
    assert "is not a session id" in one_error_line(run_cli("show", "../etc/passwd"))


# -- todos -----------------------------------------------------------------------------------


def test_todos_prints_the_current_list_and_whether_it_stands(tmp_path: Path, session: str) -> None:
    """The checklist and its standing; after a turn without a write it no longer stands."""
    assert run_cli("todos", session).stdout.splitlines() == [
        "1/2 done (standing: the plan strip shows it)",
        "☑ Read the code",
        "▶ Write the tests",
    ]
    assert json.loads(run_cli("todos", session, "--json").stdout) == {
        "todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Write the tests", "status": "in_progress"},
        ],
        "standing": True,
    }
    model = write_script(tmp_path / "more.json", [{"text": "no plan this time"}])
    assert run_cli("run", "--session", session, "--model", model, "more").returncode == 0
    exported = json.loads(run_cli("todos", session, "--json").stdout)
    assert exported["standing"] is False
    assert len(exported["todos"]) == 2
    assert run_cli("todos", session).stdout.startswith("1/2 done (from an earlier turn)")


def test_todos_markdown_is_a_checklist(shared: str) -> None:
    """--markdown: GitHub task list syntax, the active task in bold."""
    assert run_cli("todos", shared, "--markdown").stdout.splitlines() == [
        "- [x] Read the code",
        "- [ ] **Write the tests**",
    ]


def test_todos_history_names_every_change(shared: str) -> None:
    """--history lists each revision with what changed, unfinished tasks dropped included."""
    revisions = json.loads(run_cli("todos", shared, "--history", "--json").stdout)
    assert len(revisions) == 2
    assert [(c["kind"], c["content"], c["previous"]) for c in revisions[1]["changes"]] == [
        ("completed", "Read the code", None),
        ("reworded", "Write the tests", "Write a test"),
        ("started", "Write the tests", None),
        ("dropped", "Ship", None),
    ]
    plain = run_cli("todos", shared, "--history").stdout
    assert plain.startswith("revision 1 · seq ")
    assert "revision 2 · seq " in plain
    assert '  dropped unfinished "Ship"' in plain


def test_todos_of_a_session_without_a_plan(tmp_path: Path, harness_home: Path) -> None:
    """No todo/write yet: a plain note, the empty export, an empty history."""
    model = write_script(tmp_path / "s.json", [{"text": "hi"}])
    assert run_cli("run", "--model", model, "hi").returncode == 0
    session = session_ids(harness_home)[-1]
    assert run_cli("todos", session).stdout.strip() == "no todo list in this session yet"
    assert json.loads(run_cli("todos", session, "--json").stdout) == {
        "todos": [],
        "standing": False,
    }
    assert json.loads(run_cli("todos", session, "--history", "--json").stdout) == []


def test_todos_of_a_plugin_that_fails_to_import_names_it(shared: str) -> None:
    """harness-tool-todo broken: one line naming the distribution that adds the command."""
    code = (
        "import sys\n"
        "sys.modules['harness_tool_todo'] = None  # the module cannot be imported\n"
        "from harness_core.cli import main\n"
        f"sys.exit(main(['todos', {shared!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), check=False
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(
        "harness: error: `harness todos` comes from harness-tool-todo (plugin todo), "
        "which is rejected: import failed"
    )


def test_with_the_todo_plugin_disabled_the_core_commands_still_work(shared: str) -> None:
    """HARNESS_DISABLE_PLUGINS=todo: help, show and events work on a session with a plan,
    and `todos` says in one line where the command comes from."""
    env = {"HARNESS_DISABLE_PLUGINS": "todo"}
    assert run_cli("--help", env=env).returncode == 0
    show = run_cli("show", shared, env=env)
    assert show.returncode == 0, show.stderr
    assert "Plan · " not in show.stdout  # nobody pins a plan strip
    assert "✓ todo_write" in show.stdout  # the call and its result are still in the history
    events = run_cli("events", shared, env=env)
    assert events.returncode == 0 and '"type":"todo/write"' in events.stdout
    todos = run_cli("todos", shared, env=env)
    assert todos.returncode == 1
    assert todos.stderr.strip() == (
        "harness: error: `harness todos` comes from harness-tool-todo (plugin todo), "
        "which is disabled: listed in HARNESS_DISABLE_PLUGINS"
    )
