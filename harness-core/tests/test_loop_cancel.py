"""Cancellation, model errors and crash repair: every turn ends, every call gets a result."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_core import builtins
from harness_core.config import Config
from harness_core.log import INTERRUPTED_TEXT, Event, SessionLog, SessionStore, derive_messages
from harness_core.loop import CRASHED_TURN, STOPPED_CALL_TEXT, Agent, TurnOutcome
from harness_core.models import (
    DeltaSink,
    ModelBase,
    ModelError,
    ModelResponse,
    ResponseToolCall,
    ScriptedModel,
)
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext, Tool, ToolResult
from process_helpers import has_pid, poll, running
from pydantic import BaseModel


@pytest.fixture
def host() -> PluginHost:
    """The real host with the built-in tools (bash, subagent)."""
    plugin_host = PluginHost(Config({"plugins": {"builtins": {"bash_timeout": 30}}}, env={}))
    builtins.add_to(plugin_host)
    return plugin_host


@pytest.fixture
def store(host: PluginHost, harness_home: Path) -> SessionStore:
    return SessionStore(harness_home, host.event_types)


def bash(command: str, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "bash", "arguments": {"command": command}}
    return call | ({"id": call_id} if call_id else {})


def turn_ends(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "turn/end"]


def results(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.data["call_id"], e.data["text"]) for e in events if e.type == "tool/result"]


def reopen(store: SessionStore, log: SessionLog) -> SessionLog:
    """The session as a new process would see it: closed, then replayed from disk."""
    log.close()
    return store.open(log.session_id)


async def test_cancel_mid_stream_ends_the_turn_and_the_session_resumes(
    store: SessionStore, host: PluginHost
) -> None:
    """agent.cancel() while text streams: a cancelled outcome, nothing half-logged, then on."""
    model = ScriptedModel([{"text": "I will now explain at length"}, {"text": "Short answer."}])
    log = store.create(cwd=os.getcwd())
    agent = Agent(log, model, host.tools)
    streamed: list[str] = []

    def on_delta(kind: str, chunk: str) -> None:
        streamed.append(chunk)
        agent.cancel()

    agent.on_delta = on_delta
    outcome = await agent.run_turn("Explain.")
    assert outcome == TurnOutcome("cancelled", None, "cancelled", 1)
    assert streamed == ["I "]
    assert [e.type for e in log.events[1:]] == ["turn/start", "message/user", "turn/end"]
    agent.on_delta = None
    assert (await agent.run_turn("Briefly, then.")).text == "Short answer."
    assert model.requests[1][-2:] == [
        {"role": "user", "content": "Explain."},
        {"role": "user", "content": "Briefly, then."},
    ]
    reopened = reopen(store, log)
    assert turn_ends(reopened.events) == [
        {"status": "cancelled", "error": "cancelled"},
        {"status": "completed", "error": None},
    ]


async def test_a_cancel_before_the_turn_starts_is_remembered_for_that_turn(
    store: SessionStore, host: PluginHost
) -> None:
    """cancel() that lands before run_turn (a Ctrl-C racing the start) cancels the next turn once."""
    model = ScriptedModel([{"text": "Hello."}])
    log = store.create(cwd=os.getcwd())
    agent = Agent(log, model, host.tools)
    agent.cancel()
    outcome = await agent.run_turn("Hi.")
    assert (outcome.status, outcome.error) == ("cancelled", "cancelled")
    assert turn_ends(log.events) == [{"status": "cancelled", "error": "cancelled"}]
    assert (await agent.run_turn("Hi again.")).text == "Hello."


async def test_cancel_from_outside_mid_tool_kills_the_command_and_answers_the_call(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """A host cancel scope mid-bash: the process group dies, the call reads "interrupted"."""
    pid_file = tmp_path / "child.pid"
    command = f"sleep 60 & echo $! > {pid_file}; wait"
    model = ScriptedModel([{"tool_calls": [bash(command)]}, {"text": "Resumed."}])
    log = store.create(cwd=str(tmp_path))
    agent = Agent(log, model, host.tools)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.run_turn, "Run it.")
        await poll(lambda: has_pid(pid_file))
        group.cancel_scope.cancel()
    pid = int(pid_file.read_text())
    await poll(lambda: not running(pid))
    assert results(log.events) == [("call_1_1", INTERRUPTED_TEXT)]
    assert turn_ends(log.events) == [{"status": "cancelled", "error": "cancelled"}]
    assert agent.turn is None
    reopened = reopen(store, log)
    outcome = await Agent(reopened, model, host.tools).run_turn("Go on.")
    assert outcome.text == "Resumed."
    assert model.requests[1][-2:] == [
        {"role": "tool", "tool_call_id": "call_1_1", "content": INTERRUPTED_TEXT, "is_error": True},
        {"role": "user", "content": "Go on."},
    ]


def record_finished(host: PluginHost, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The ids of the calls whose tool has returned, each added as its result reaches the loop."""
    finished: set[str] = set()
    run = host.tools.run

    async def recorded(tool: Tool[Any], args: BaseModel, exec_ctx: ExecContext) -> ToolResult:
        result = await run(tool, args, exec_ctx)
        # No await between here and the loop keeping the result: a poll sees both or neither.
        finished.add(exec_ctx.call_id or "")
        return result

    monkeypatch.setattr(host.tools, "run", recorded)
    return finished


async def test_cancel_mid_batch_keeps_finished_results_in_call_order(
    store: SessionStore, host: PluginHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls that finished keep their results; the still-running one is interrupted."""
    finished = record_finished(host, monkeypatch)
    started = tmp_path / "started"
    calls = [
        bash("echo quick", "a"),
        bash(f"echo $$ > {started}; sleep 60", "b"),
        bash("echo also quick", "c"),
    ]
    model = ScriptedModel([{"tool_calls": calls}])
    log = store.create(cwd=str(tmp_path))
    agent = Agent(log, model, host.tools)
    outcomes: list[TurnOutcome] = []

    async def run() -> None:
        outcomes.append(await agent.run_turn("Three things."))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await poll(lambda: has_pid(started) and finished == {"a", "c"})
        agent.cancel()
    assert outcomes == [TurnOutcome("cancelled", None, "cancelled", 1)]
    assert results(log.events) == [
        ("a", "quick\n[exit code 0]"),
        ("b", INTERRUPTED_TEXT),
        ("c", "also quick\n[exit code 0]"),
    ]
    assert derive_messages(reopen(store, log).events)[-3:] == [
        {"role": "tool", "tool_call_id": "a", "content": "quick\n[exit code 0]"},
        {"role": "tool", "tool_call_id": "b", "content": INTERRUPTED_TEXT, "is_error": True},
        {"role": "tool", "tool_call_id": "c", "content": "also quick\n[exit code 0]"},
    ]


class FailingModel(ModelBase):
    """Plays a script, then fails the way a provider does after its retries."""

    name = "failing"

    def __init__(self, steps: list[dict[str, Any]], error: BaseException) -> None:
        self.script = ScriptedModel(steps)
        self.error = error

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        if self.script.remaining == 0:
            raise self.error
        return await self.script.respond(messages, tools, on_delta)


async def test_a_model_error_ends_the_turn_and_keeps_what_was_appended(
    store: SessionStore, host: PluginHost
) -> None:
    """ModelError after a tool step: turn ends `error` with the message; step 1 is durable."""
    error = ModelError("openai:gpt-x: HTTP 500 after 3 attempts")
    model = FailingModel([{"tool_calls": [bash("echo kept")]}], error)
    log = store.create(cwd=os.getcwd())
    outcome = await Agent(log, model, host.tools).run_turn("Try.")
    assert outcome == TurnOutcome("error", None, "openai:gpt-x: HTTP 500 after 3 attempts", 2)
    reopened = reopen(store, log)
    assert [e.type for e in reopened.events[3:]] == [
        "message/assistant",
        "tool/approval",
        "tool/result",
        "turn/end",
    ]
    assert results(reopened.events) == [("call_1_1", "kept\n[exit code 0]")]
    assert turn_ends(reopened.events) == [{"status": "error", "error": str(error)}]


async def test_repeated_call_ids_end_the_turn_as_a_model_error(
    store: SessionStore, host: PluginHost
) -> None:
    """Two calls sharing an id cannot be answered: the turn ends `error`, nothing runs."""

    class Repeating(ModelBase):
        name = "repeating"

        async def respond(self, messages: Any, tools: Any, on_delta: Any = None) -> ModelResponse:
            call = ResponseToolCall("same", "bash", '{"command": "true"}')
            return ModelResponse(tool_calls=(call, call))

    log = store.create(cwd=os.getcwd())
    outcome = await Agent(log, Repeating(), host.tools).run_turn("Go.")
    assert (outcome.status, outcome.error) == (
        "error",
        "model repeating sent tool calls with repeated ids ['same', 'same']",
    )
    assert [e.type for e in log.events[1:]] == ["turn/start", "message/user", "turn/end"]


async def test_running_past_the_script_ends_the_turn_as_error(
    store: SessionStore, host: PluginHost
) -> None:
    """The strict scripted model's extra-call error reaches turn/end verbatim."""
    model = ScriptedModel([{"tool_calls": [bash("true")]}])
    log = store.create(cwd=os.getcwd())
    outcome = await Agent(log, model, host.tools).run_turn("Go.")
    assert outcome.status == "error"
    assert outcome.error == (
        "scripted has 1 steps and the loop asked for step 2: end the script with a text-only step"
    )


async def test_an_unexpected_exception_closes_the_turn_then_propagates(
    store: SessionStore, host: PluginHost
) -> None:
    """A bug in a model is re-raised, but the turn is still ended and the session usable."""
    model = FailingModel([], RuntimeError("bug in the model adapter"))
    log = store.create(cwd=os.getcwd())
    with pytest.raises(RuntimeError, match="bug in the model adapter"):
        await Agent(log, model, host.tools).run_turn("Go.")
    assert turn_ends(log.events) == [
        {"status": "error", "error": "RuntimeError: bug in the model adapter"}
    ]
    later = await Agent(log, ScriptedModel([{"text": "fine"}]), host.tools).run_turn("Again.")
    assert later.status == "completed"


def write_crashed_log(store: SessionStore) -> str:
    """A session as a crash leaves it: turn 1 open, one of two calls without a result."""
    log = store.create(system_prompt="sys", cwd=os.getcwd())
    log.append("turn/start", {}, turn=1)
    log.append("message/user", {"text": "Do two things."}, turn=1)
    calls = [
        {"id": "a", "name": "bash", "arguments": '{"command": "echo a"}'},
        {"id": "b", "name": "bash", "arguments": '{"command": "echo b"}'},
    ]
    log.append("message/assistant", {"text": None, "tool_calls": calls}, turn=1)
    log.append("tool/result", {"call_id": "a", "tool_name": "bash", "text": "a"}, turn=1)
    log.close()
    return log.session_id


async def test_a_crashed_turn_is_repaired_before_the_next_request(
    store: SessionStore, host: PluginHost
) -> None:
    """Reopened after a crash: the open call is answered, turn 1 ends, the model sees it fixed."""
    session_id = write_crashed_log(store)
    log = store.open(session_id)
    model = ScriptedModel([{"text": "Recovered."}])
    outcome = await Agent(log, model, host.tools).run_turn("Where were we?")
    assert outcome.status == "completed"
    assert model.requests[0] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Do two things."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "echo a"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "echo b"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "a"},
        # Its process stopped mid-call: nothing says how far "echo b" got.
        {"role": "tool", "tool_call_id": "b", "content": STOPPED_CALL_TEXT, "is_error": True},
        {"role": "user", "content": "Where were we?"},
    ]
    assert [(e.type, e.turn) for e in log.events[5:8]] == [
        ("tool/result", 1),
        ("turn/end", 1),
        ("turn/start", 2),
    ]
    assert turn_ends(log.events)[0] == {"status": "error", "error": CRASHED_TURN}


async def test_repair_closes_a_crashed_turn_and_is_idempotent(
    store: SessionStore, host: PluginHost
) -> None:
    """repair() ends an open turn once; on a clean log it appends nothing."""
    log = store.open(write_crashed_log(store))
    agent = Agent(log, ScriptedModel([{"text": "x"}]), host.tools)
    assert agent.repair() is True
    count = len(log.events)
    assert agent.repair() is False
    assert len(log.events) == count
    assert log.committed_seq == log.events[-1].seq


CRASHING_RUN = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import anyio
    from harness_core import builtins
    from harness_core.config import Config
    from harness_core.log import SessionStore
    from harness_core.loop import Agent
    from harness_core.models import ScriptedModel
    from harness_core.plugins import PluginHost

    host = PluginHost(Config({}, env={}))
    builtins.add_to(host)
    store = SessionStore(Path(sys.argv[1]), host.event_types)
    log = store.create(system_prompt="sys", cwd=sys.argv[2])
    print(log.session_id, flush=True)
    model = ScriptedModel([
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo first"}}]},
        # The command kills the harness process itself: a crash in the middle of a tool call.
        {"tool_calls": [{"name": "bash", "arguments": {"command": "kill -9 $PPID; sleep 5"}}]},
        {"text": "never reached"},
    ])
    anyio.run(Agent(log, model, host.tools).run_turn, "Work.")
    """
)


async def test_a_process_killed_mid_tool_leaves_a_session_that_resumes(
    store: SessionStore, host: PluginHost, harness_home: Path, tmp_path: Path
) -> None:
    """kill -9 during a bash call; the next process repairs the turn and carries on."""
    with anyio.fail_after(60):
        crashed = await anyio.run_process(
            [sys.executable, "-c", CRASHING_RUN, str(harness_home), str(tmp_path)], check=False
        )
    assert crashed.returncode == -9, crashed.stderr.decode()
    log = store.open(crashed.stdout.decode().strip())
    assert [e.type for e in log.events][-3:] == [
        "tool/result",
        "message/assistant",
        "tool/approval",
    ]
    model = ScriptedModel([{"text": "Picked up."}])
    outcome = await Agent(log, model, host.tools).run_turn("Continue.")
    assert outcome.text == "Picked up."
    assert model.requests[0][-3:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_2_1",
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "arguments": '{"command": "kill -9 $PPID; sleep 5"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_2_1",
            "content": STOPPED_CALL_TEXT,
            "is_error": True,
        },
        {"role": "user", "content": "Continue."},
    ]
    assert turn_ends(log.events) == [
        {"status": "error", "error": CRASHED_TURN},
        {"status": "completed", "error": None},
    ]


def damaged_log(store: SessionStore, lines: bytes, *, call: bool = True) -> SessionLog:
    """A session whose tail was damaged on disk, reopened for writing: turn 1 asking for call
    `a` (with `call`), then `lines` as they were left in the file."""
    log = store.create(system_prompt="sys", cwd=os.getcwd())
    if call:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "Do a thing."}, turn=1)
        bash_a = {"id": "a", "name": "bash", "arguments": '{"command": "echo a"}'}
        log.append("message/assistant", {"text": None, "tool_calls": [bash_a]}, turn=1)
    log.close()
    with log.path.open("ab") as handle:
        handle.write(lines)
    return store.open(log.session_id)


async def test_a_turn_open_after_a_lost_turn_end_is_repaired_without_touching_older_calls(
    store: SessionStore, host: PluginHost
) -> None:
    """A damaged log (turn 1's end lost, turn 2 open): repair ends turn 2 and leaves turn 1's
    unanswered call to the projection, which answers it as interrupted in every request."""
    # Turn 1's end and results never reached the disk.
    log = damaged_log(
        store, b'{"seq":4,"type":"turn/start","ts":"2026-01-01T00:00:00.000Z","data":{},"turn":2}\n'
    )
    model = ScriptedModel([{"text": "Recovered."}])
    outcome = await Agent(log, model, host.tools).run_turn("Where were we?")
    assert outcome.status == "completed"
    assert [e.type for e in log.events[4:7]] == ["turn/start", "turn/end", "turn/start"]
    assert turn_ends(log.events)[0] == {"status": "error", "error": CRASHED_TURN}
    assert model.requests[0][-2:] == [
        {"role": "tool", "tool_call_id": "a", "content": INTERRUPTED_TEXT, "is_error": True},
        {"role": "user", "content": "Where were we?"},
    ]


async def test_a_turn_start_without_its_number_is_not_repaired_but_passed_over(
    store: SessionStore, host: PluginHost
) -> None:
    """A damaged turn/start (its "turn" key garbled) names no turn to end: the next turn
    starts after it instead of failing on an end for turn None."""
    log = damaged_log(
        store,
        b'{"seq":1,"type":"turn/start","ts":"2026-01-01T00:00:00.000Z","data":{},"uurn":1}\n',
        call=False,
    )
    outcome = await Agent(log, ScriptedModel([{"text": "Fine."}]), host.tools).run_turn("Go on.")
    assert outcome.status == "completed"
    assert [(e.type, e.turn) for e in log.events[1:3]] == [("turn/start", None), ("turn/start", 1)]
    assert turn_ends(log.events) == [{"status": "completed", "error": None}]


async def test_a_turn_whose_results_were_lost_before_a_user_message_is_repaired(
    store: SessionStore, host: PluginHost
) -> None:
    """Damage that leaves a user message after unanswered calls: the projection answers them
    interrupted, and the repair ends the turn without an answer of its own."""
    log = damaged_log(  # what came between was lost
        store,
        b'{"seq":15,"type":"message/user","ts":"2026-01-01T00:00:00.000Z",'
        b'"data":{"text":"again"},"turn":2}\n',
    )
    model = ScriptedModel([{"text": "Recovered."}])
    outcome = await Agent(log, model, host.tools).run_turn("Go on.")
    assert outcome.status == "completed"
    assert turn_ends(log.events)[0] == {"status": "error", "error": CRASHED_TURN}
    assert {
        "role": "tool",
        "tool_call_id": "a",
        "content": INTERRUPTED_TEXT,
        "is_error": True,
    } in model.requests[0]
