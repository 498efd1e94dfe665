"""Resume and replay: a persisted todo list folds back after the session is reopened.

Sessions are written by the real agent loop with a scripted model, through a host that loaded
harness-tool-todo from its entry point, then reopened by a fresh host as a new process would.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import orjson
from harness_core import builtins
from harness_core.config import Config
from harness_core.log import EventTypeRegistry, FileLog, SessionLog, SessionStore, derive_messages
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_tool_todo.projections import (
    Plan,
    Todo,
    current_todos,
    plan_history,
    read_current,
    read_plan,
    standing_plan,
)
from test_cli_support import read_events, run_cli, session_ids, todo_call, write_script

DONE = {"text": "Done."}
PARALLEL_ENV = {"HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS": "true"}


def host_for(home: Path, env: dict[str, str] | None = None) -> PluginHost:
    """A fresh host, as a new process builds it: config, then every installed plugin."""
    env = env or {}
    host = PluginHost(Config.load(home, env))
    builtins.add_to(host)
    host.load_entry_points(env)
    assert host.records["todo"].status == "loaded"
    return host


def todo_step(*items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": content, "status": status} for content, status in items]
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}


def todos(*items: tuple[str, str]) -> tuple[Todo, ...]:
    return tuple(Todo(c, s) for c, s in items)  # type: ignore[arg-type]


async def turn(host: PluginHost, log: SessionLog, *steps: dict[str, Any]) -> None:
    """One completed turn of the real loop, the model playing `steps` then saying done."""
    model = ScriptedModel([*steps, {"text": "Done."}])
    outcome = await Agent(log, model, host.tools).run_turn("Work on it.")
    assert outcome.status == "completed", outcome
    assert model.remaining == 0


def assert_folds(log: FileLog, expected: Plan) -> None:
    """The reopened log's in-memory fold and the store's tail query both give `expected`."""
    store = store_of(log)
    assert standing_plan(log.events) == expected
    assert read_plan(store, log.session_id) == expected
    assert current_todos(log.events) == expected.todos
    assert read_current(store, log.session_id) == expected.todos


def store_of(log: FileLog) -> SessionStore:
    """The file store the session's file is in (its home is two levels up)."""
    return SessionStore(log.path.parent.parent, log.registry)


def current_in(path: Path) -> tuple[Todo, ...]:
    """`read_current` of the session file at `path`, through its file store."""
    return read_current(SessionStore(path.parent.parent, EventTypeRegistry()), path.stem)


def seq_of_last_write(log: SessionLog) -> int:
    return [e.seq for e in log.events if e.type == "todo/write"][-1]


async def test_reopened_session_folds_the_list_and_plan(harness_home: Path) -> None:
    """Reopened by a fresh host, the list and the standing plan come back; new turns go on."""
    host = host_for(harness_home)
    store = SessionStore(harness_home, host.event_types)
    with store.create(system_prompt="Plan first.") as log:
        await turn(
            host, log, todo_step(("Read the code", "in_progress"), ("Fix the bug", "pending"))
        )
        session_id = log.session_id
    first = todos(("Read the code", "in_progress"), ("Fix the bug", "pending"))

    host = host_for(harness_home)
    store = SessionStore(harness_home, host.event_types)
    with store.open(session_id) as log:
        assert log.problems == []
        written = seq_of_last_write(log)
        assert_folds(log, Plan(first, standing=True, seq=written))
        await turn(host, log)  # a turn without a write clears the strip, not the list
        assert_folds(log, Plan(first, standing=False, seq=written))
        second = (("Read the code", "completed"), ("Fix the bug", "in_progress"))
        await turn(host, log, todo_step(*second))
        assert_folds(log, Plan(todos(*second), standing=True, seq=seq_of_last_write(log)))

    with SessionStore(harness_home, host_for(harness_home).event_types).open(session_id) as log:
        assert_folds(log, Plan(todos(*second), standing=True, seq=seq_of_last_write(log)))
        assert len(plan_history(log.events)) == 2


async def test_torn_tail_is_moved_aside_and_the_list_folds(harness_home: Path) -> None:
    """A write torn by a crash is moved aside on reopen; the last complete list still folds."""
    host = host_for(harness_home)
    store = SessionStore(harness_home, host.event_types)
    with store.create() as log:
        await turn(host, log, todo_step(("Read the code", "completed"), ("Ship", "in_progress")))
        session_id, path, next_seq = log.session_id, log.path, log.next_seq
    good = path.read_bytes()
    torn_line = orjson.dumps(
        {
            "seq": next_seq,
            "type": "todo/write",
            "ts": "2025-01-01T00:00:00.000Z",
            "data": {"todos": [{"content": "Never durable", "status": "pending"}]},
            "turn": 2,
        }
    )
    torn = torn_line[: len(torn_line) // 2]
    path.write_bytes(good + torn)
    expected = todos(("Read the code", "completed"), ("Ship", "in_progress"))

    # A reader (the plan strip, `harness todos`) ignores the torn bytes without any lock.
    assert current_in(path) == expected

    host = host_for(harness_home)
    with SessionStore(harness_home, host.event_types).open(session_id) as log:
        assert any("torn last line" in p for p in log.problems)
        (aside,) = path.parent.glob(f"{path.name}.torn-*")
        assert aside.read_bytes() == torn
        assert path.read_bytes() == good
        assert_folds(log, Plan(expected, standing=True, seq=seq_of_last_write(log)))
        await turn(host, log, todo_step(("Ship", "completed")))
        assert current_in(path) == todos(("Ship", "completed"))
        assert [e.seq for e in log.events] == list(range(len(log.events)))


async def test_parallel_list_folds_under_the_default_policy(harness_home: Path) -> None:
    """A list written with parallel in-progress allowed folds when the policy is off again."""
    parallel = (("Build the wheel", "in_progress"), ("Write the docs", "in_progress"))
    host = host_for(harness_home, PARALLEL_ENV)
    with SessionStore(harness_home, host.event_types).create() as log:
        await turn(host, log, todo_step(*parallel))
        session_id = log.session_id
        result = log.events[-3]
        assert result.type == "tool/result"
        assert result.data["text"] == "Updated todo list: 0 pending, 2 in progress, 0 completed."

    host = host_for(harness_home)  # the default: one task in progress
    with SessionStore(harness_home, host.event_types).open(session_id) as log:
        assert_folds(log, Plan(todos(*parallel), standing=True, seq=seq_of_last_write(log)))
        # The policy applies to new writes only.
        await turn(host, log, todo_step(*parallel, ("Release", "in_progress")))
        rejected = [e for e in log.events if e.type == "tool/result"][-1]
        assert rejected.data["text"] == (
            "Error: invalid todos: at most one task may be in_progress, got 3"
        )
        assert current_todos(log.events) == todos(*parallel)


async def test_session_read_without_the_plugin_keeps_the_event(harness_home: Path) -> None:
    """Without the plugin the todo/write line is kept and skipped; with it, it folds again."""
    host = host_for(harness_home)
    with SessionStore(harness_home, host.event_types).create() as log:
        await turn(host, log, todo_step(("Read the code", "in_progress")))
        session_id, before = log.session_id, log.path.read_bytes()
        messages = derive_messages(log.events, host.event_types.surface)

    bare = PluginHost(Config({}, env={}))
    bare.load_entry_points({"HARNESS_DISABLE_PLUGINS": "harness-tool-todo"})
    reader = SessionStore(harness_home, bare.event_types).open(session_id, writable=False)
    assert "unknown event type 'todo/write' kept and skipped" in reader.problems
    assert any(e.type == "todo/write" for e in reader.events)
    assert derive_messages(reader.events, bare.event_types.surface) == messages
    assert reader.path.read_bytes() == before

    host = host_for(harness_home)
    with SessionStore(harness_home, host.event_types).open(session_id) as log:
        assert current_todos(log.events) == todos(("Read the code", "in_progress"))


CRASHING_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    import anyio
    from pathlib import Path
    from harness_core.config import Config
    from harness_core.log import SessionStore
    from harness_core.loop import Agent
    from harness_core.models import ScriptedModel
    from harness_core.plugins import PluginHost

    class DiesAfterFirstStep(ScriptedModel):
        async def respond(self, messages, tools, on_delta=None):
            if self.remaining == 0:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            return await super().respond(messages, tools, on_delta)

    home = Path(sys.argv[1])
    host = PluginHost(Config.load(home))
    host.load_entry_points()
    log = SessionStore(home, host.event_types).create()
    print(log.session_id, flush=True)
    todos = [{"content": "Read the code", "status": "in_progress"},
             {"content": "Fix the bug", "status": "pending"}]
    model = DiesAfterFirstStep(
        [{"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}]
    )
    anyio.run(Agent(log, model, host.tools).run_turn, "Plan, then die.")
    """
)


async def test_list_survives_kill_9_and_the_next_turn_repairs(harness_home: Path) -> None:
    """A writer killed mid-turn after the write: reopened, the list folds and stays standing
    until the repaired session's next turn starts."""
    with anyio.fail_after(60):
        proc = await anyio.run_process(
            [sys.executable, "-c", CRASHING_WRITER, str(harness_home)], check=False
        )
    assert proc.returncode == -9, proc.stderr.decode()
    session_id = proc.stdout.decode().split()[0]
    expected = todos(("Read the code", "in_progress"), ("Fix the bug", "pending"))

    host = host_for(harness_home)
    with SessionStore(harness_home, host.event_types).open(session_id) as log:
        assert log.events[-1].type == "tool/result"  # the turn never ended
        assert_folds(log, Plan(expected, standing=True, seq=seq_of_last_write(log)))
        await turn(host, log)
        turn_ends = [e.data for e in log.events if e.type == "turn/end"]
        assert turn_ends[0]["status"] == "error"  # the crashed turn, closed by repair
        assert_folds(log, Plan(expected, standing=False, seq=seq_of_last_write(log)))
        assert read_plan(store_of(log), log.session_id).export()["standing"] is False


VERBATIM = (
    ("  Run\n the \t tests  ", "completed"),
    ("Line\u2028separated\u2029paragraph", "in_progress"),
    ("Tab\tseparated", "pending"),
    ("Ship it 🚀 👩🏽‍💻", "pending"),
    ("\\u0000 looks like an escape", "pending"),
    ("Contains a real \x00 NUL", "pending"),
)


def test_content_round_trips_verbatim_through_the_log_and_the_cli(tmp_path: Path) -> None:
    """Odd characters come back exactly from the file, `todos --json`, `--history --json` and
    the model's own history; only the plain listing folds them onto one line a task."""
    home = {"HARNESS_HOME": str(tmp_path / "home")}
    model = write_script(tmp_path / "plan.json", [{"tool_calls": [todo_call(*VERBATIM)]}, DONE])
    assert run_cli("run", "--model", model, "plan", env=home).returncode == 0
    (session_id,) = session_ids(tmp_path / "home")
    written = [{"content": content, "status": status} for content, status in VERBATIM]

    (event,) = [e for e in read_events(tmp_path / "home", session_id) if e["type"] == "todo/write"]
    assert event["data"] == {"todos": written}
    exported = json.loads(run_cli("todos", session_id, "--json", env=home).stdout)
    assert exported == {"todos": written, "standing": True}
    (revision,) = json.loads(run_cli("todos", session_id, "--history", "--json", env=home).stdout)
    assert revision["todos"] == written
    (call,) = [
        c
        for m in json.loads(run_cli("show", session_id, "--json", env=home).stdout)
        for c in m.get("tool_calls", [])
    ]
    assert json.loads(call["function"]["arguments"]) == {"todos": written}

    listing = run_cli("todos", session_id, env=home).stdout.split("\n")
    assert listing[1:3] == ["☑ Run the tests", "▶ Line separated paragraph"]
    assert len(listing) == 1 + len(VERBATIM) + 1  # the summary, a line a task, the final newline
