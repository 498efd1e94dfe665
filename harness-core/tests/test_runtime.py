"""The session runtime: turns in submission order on one writer, a player per model spec,
cancellation, crash repair when the writer is taken, and models closed with the session."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from harness_core.hosts import CommandError
from harness_core.log import INTERRUPTED_TEXT, FileLog, SessionLocked
from harness_core.loop import CRASHED_TURN, STOPPED_CALL_TEXT, Approval, TurnAbandoned
from harness_core.models import ModelBase, ModelResponse, ScriptedModel
from harness_core.runtime import Runtime, SessionRuntime
from process_helpers import has_pid, poll, running


class Closing(ModelBase):
    """A model that answers once per turn and records whether it was closed."""

    def __init__(self, name: str, texts: list[str]) -> None:
        self.name = name
        self.texts = list(texts)
        self.closed = False
        self.gate: asyncio.Event | None = None  # when set, each answer waits for it
        self.asked = asyncio.Event()  # set once a turn has asked for an answer

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_delta: Any = None
    ) -> ModelResponse:
        self.asked.set()
        if self.gate is not None:
            await self.gate.wait()
        return ModelResponse(text=self.texts.pop(0))

    async def aclose(self) -> None:
        self.closed = True


@pytest.fixture
def runtime(harness_home: Path) -> Runtime:
    return Runtime(harness_home)


async def idle(session: SessionRuntime) -> None:
    """Until no turn runs or waits (polled: the runtime offers no event for it)."""
    for _ in range(500):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the session's turns did not end")


def prompts(session: SessionRuntime) -> list[str]:
    log = session.runtime.reader(session.id)
    return [str(e.data["text"]) for e in log.events if e.type == "message/user"]


async def test_turns_run_in_the_order_they_were_submitted(runtime: Runtime) -> None:
    """Three prompts sent at once: one runs, two wait (shown queued), all run in order."""
    model = Closing("m", ["a", "b", "c"])
    model.gate = asyncio.Event()
    session = runtime.open(None, model, approval=Approval("auto"))
    assert await session.submit("first") == {"turn": 1}
    assert await session.submit("second") == {"queued": 1}
    assert await session.submit("third") == {"queued": 2}
    await asyncio.wait_for(model.asked.wait(), 10)  # the first turn is running
    assert session.running and session.queued == ["second", "third"]
    model.gate.set()
    await idle(session)
    assert prompts(session) == ["first", "second", "third"]
    await session.aclose()


async def test_a_session_closed_as_its_turn_lets_go_returns_once_its_writer_let_go(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aclose() the moment a turn ended, its writer still closing (a host deleting a session
    just after its turn): it returns only once the writer let go, so the session opens for
    writing at once. It returned before, and the next open was refused, naming this very
    process as the holder (the close was cut off by cancelling the turn's task, its thread
    went on holding the lock)."""
    model = Closing("m", ["a"])
    model.gate = asyncio.Event()
    session = runtime.open(None, model, approval=Approval("auto"), hold=False)
    await session.submit("go")
    await model.asked.wait()
    closing, go = threading.Event(), threading.Event()
    release = FileLog.release

    def slow_release(log: FileLog) -> None:
        closing.set()
        go.wait(5)
        release(log)

    monkeypatch.setattr(FileLog, "release", slow_release)
    model.gate.set()
    await poll(closing.is_set)  # the turn ended; its writer is closing
    closed = asyncio.ensure_future(session.aclose())
    await asyncio.wait({closed}, timeout=0.5)
    assert not closed.done()  # it waits for the close under way
    go.set()
    await closed
    monkeypatch.undo()
    with runtime.store.open(session.id) as log:  # SessionLocked before
        assert [e.type for e in log.events][-1] == "turn/end"


async def test_a_session_that_lets_go_is_writable_by_another_process_between_runs(
    runtime: Runtime,
) -> None:
    """hold=False takes the writer for a run of turns only; while it runs, a second writer
    is refused at once."""
    model = Closing("m", ["a", "b"])
    session = runtime.open(None, model, hold=False)
    assert session.log is None
    with runtime.store.open(session.id), pytest.raises(SessionLocked):  # another writer
        await session.submit("refused while the other writer holds it")
    model.gate = asyncio.Event()
    await session.submit("mine")
    with pytest.raises(SessionLocked):
        runtime.store.open(session.id)
    model.gate.set()
    await idle(session)
    # The writer is let go after the turn ends: `session.log` at once, the lock once a worker
    # thread has closed the file. Free again within the wait, whatever the machine's load.
    for _ in range(1000):
        try:
            runtime.store.open(session.id).close()
            break
        except SessionLocked:
            await asyncio.sleep(0.01)
    else:
        raise AssertionError("the session's writer was never let go")
    assert session.log is None
    await session.aclose()


async def test_each_model_spec_keeps_its_own_player(runtime: Runtime, tmp_path: Path) -> None:
    """A turn naming a spec builds its model once; the next turn on it goes on where the
    script stopped, and closing the session closes every model it built."""
    script = tmp_path / "script.json"
    script.write_text('{"steps": [{"text": "one"}, {"text": "two"}]}')
    default = Closing("default", ["d"])
    session = runtime.open(None, default, approval=Approval("auto"))
    spec = f"scripted:{script}"
    assert (await session.run("go", spec)).text == "one"
    assert (await session.run("again", spec)).text == "two"
    assert (await session.run("default model")).text == "d"
    scripted = await session.model_for(spec)
    assert isinstance(scripted, ScriptedModel) and scripted.remaining == 0
    await session.aclose()
    assert default.closed


async def test_taking_the_writer_closes_a_crashed_turn_first(runtime: Runtime) -> None:
    """A turn a crashed process left open is ended before the session's next turn."""
    log = runtime.create()
    log.append("turn/start", {}, turn=1)
    log.append("message/user", {"text": "crashed"}, turn=1)
    log.close()
    session = runtime.open(log.session_id, Closing("m", ["a"]), approval=Approval("auto"))
    ended = session.runtime.reader(session.id).latest("turn/end")
    assert ended is not None and ended.turn == 1 and ended.data["error"] == CRASHED_TURN
    assert (await session.run("next")).status == "completed"
    await session.aclose()


async def test_go_on_answers_a_crashed_turns_open_call_and_finishes_that_turn(
    runtime: Runtime, tmp_path: Path
) -> None:
    """A queued turn whose process died goes on from its log: the call it was running is
    answered "interrupted", saying it may have run in part or in full, not run again, and
    the same turn ends with the model's answer."""
    marker = tmp_path / "ran"
    call = {"name": "bash", "arguments": {"command": f"touch {marker}"}}
    script = ScriptedModel.from_document({"steps": [{"tool_calls": [call]}, {"text": "done"}]})
    log = runtime.create()
    log.append("turn/start", {}, turn=1)
    log.append("message/user", {"text": "the prompt"}, turn=1)
    tool_call = {"id": "call_1", "name": "bash", "arguments": json.dumps(call["arguments"])}
    log.append("message/assistant", {"text": None, "tool_calls": [tool_call]}, turn=1)
    log.close()
    session = runtime.open(log.session_id, script, approval=Approval("auto"), go_on=True)
    assert runtime.reader(session.id).latest("turn/end") is None  # left open for go_on
    outcome = await session.go_on()
    await session.aclose()
    assert outcome is not None and (outcome.status, outcome.text) == ("completed", "done")
    assert not marker.exists()  # the cut-off call was answered, never run a second time
    events = runtime.reader(log.session_id).events
    result = next(e for e in events if e.type == "tool/result")
    assert result.data["call_id"] == "call_1" and "interrupted" in result.data["text"]
    assert "the call may have run in part or in full" in result.data["text"]
    assert [e.turn for e in events if e.type.startswith("turn/")] == [1, 1]
    assert script.remaining == 0  # the step the dead process played was skipped, not replayed


async def test_a_closing_session_lets_its_cancelled_turn_end_on_the_log(
    runtime: Runtime, tmp_path: Path
) -> None:
    """aclose() mid-command (a server stopping): the command dies, and the turn ends on its
    log (the call answered as interrupted, turn/end cancelled) before the writer goes, with
    no failure reported. Before, the writer went at once: the turn's last appends were
    refused, its log ended at the call, and the host warned that a turn failed."""
    pid_file = tmp_path / "child.pid"
    call = {"name": "bash", "arguments": {"command": f"echo $$ > {pid_file}; sleep 60"}}
    script = ScriptedModel.from_document({"steps": [{"tool_calls": [call]}, {"text": "done"}]})
    session = runtime.open(None, script, approval=Approval("auto"), hold=False)
    failures: list[str] = []
    session.observe(on_failure=lambda prompt, error: failures.append(error))
    await session.submit("go")
    await poll(lambda: has_pid(pid_file))
    await session.aclose()
    assert failures == []
    *_, result, end = runtime.reader(session.id).events
    assert (result.type, result.data["text"]) == ("tool/result", INTERRUPTED_TEXT)
    assert (end.type, end.data["status"]) == ("turn/end", "cancelled")
    await poll(lambda: not running(int(pid_file.read_text())))


async def test_an_abandoned_turn_stays_open_and_goes_on_elsewhere(
    runtime: Runtime, tmp_path: Path
) -> None:
    """abandon() mid-bash (a worker leaving): the command dies, nothing more is written (no
    result, no turn/end), the turn raises TurnAbandoned; another process opened with go_on
    answers the cut-off call as stopped and finishes the same turn."""
    pid_file, marker = tmp_path / "child.pid", tmp_path / "ran"
    command = f"echo $$ > {pid_file}; sleep 60; touch {marker}"
    call = {"name": "bash", "arguments": {"command": command}}
    script = ScriptedModel.from_document({"steps": [{"tool_calls": [call]}, {"text": "done"}]})
    session = runtime.open(None, script, approval=Approval("auto"))
    turn = asyncio.ensure_future(session.run("go"))
    await poll(lambda: has_pid(pid_file))
    session.abandon()
    with pytest.raises(TurnAbandoned):
        await turn
    await session.aclose()
    await poll(lambda: not running(int(pid_file.read_text())))
    events = runtime.reader(session.id).events
    assert [e.type for e in events][1:] == [
        "turn/start",
        "message/user",
        "message/assistant",
        "tool/approval",  # auto: the call ran
    ]
    again = ScriptedModel.from_document({"steps": [{"tool_calls": [call]}, {"text": "done"}]})
    recovered = runtime.open(session.id, again, approval=Approval("auto"), go_on=True)
    outcome = await recovered.go_on()
    await recovered.aclose()
    assert outcome is not None and (outcome.status, outcome.text) == ("completed", "done")
    events = runtime.reader(session.id).events
    [result] = [e for e in events if e.type == "tool/result"]
    assert result.data["text"] == STOPPED_CALL_TEXT
    assert [e.turn for e in events if e.type.startswith("turn/")] == [1, 1]
    assert not marker.exists()


def test_a_command_gets_the_runtime_behind_its_context(runtime: Runtime) -> None:
    """Runtime.of: the CLI's context is its runtime; any other context is one line."""

    class Elsewhere:
        config, stdout, store = runtime.config, None, runtime.store

        def read_events(self, session_id: str) -> list[Any]:
            return []

    assert Runtime.of(runtime) is runtime
    with pytest.raises(CommandError, match="run it under the harness CLI"):
        Runtime.of(Elsewhere())  # type: ignore[arg-type]


async def test_go_on_without_an_open_turn_runs_nothing(runtime: Runtime) -> None:
    log = runtime.create()
    log.close()
    session = runtime.open(log.session_id, Closing("m", []), go_on=True)
    assert await session.go_on() is None
    await session.aclose()
    assert [e.type for e in runtime.reader(log.session_id).events] == ["session/start"]


async def test_cancel_right_after_submit_cancels_the_turn_about_to_start(
    runtime: Runtime,
) -> None:
    """The stop button pressed as soon as the submit is answered stops that turn, however far
    it got meanwhile (the answer comes once the writer lock is held: the replay may still
    run, the turn's task may not have begun, or the model may be asked already)."""
    model = Closing("m", ["never"])
    model.gate = asyncio.Event()  # never set: only the stop ends this turn
    session = runtime.open(None, model, approval=Approval("auto"), hold=False)
    assert await session.submit("first") == {"turn": 1}
    assert session.cancel()
    await idle(session)
    await session.aclose()
    events = runtime.reader(session.id).events
    assert [e.data["status"] for e in events if e.type == "turn/end"] == ["cancelled"]


async def test_cancel_ends_the_running_turn_and_only_it(runtime: Runtime) -> None:
    """cancel() with no turn running does nothing (the next turn is not cancelled)."""
    model = Closing("m", ["a", "b"])
    session = runtime.open(None, model, approval=Approval("auto"))
    assert session.cancel() is False
    model.gate = asyncio.Event()
    await session.submit("long")
    await asyncio.wait_for(model.asked.wait(), 10)  # the turn is running
    assert session.cancel() is True
    await idle(session)
    model.gate.set()
    assert (await session.run("next")).status == "completed"
    ends = [
        e.data["status"] for e in session.runtime.reader(session.id).events if e.type == "turn/end"
    ]
    assert ends == ["cancelled", "completed"]
    await session.aclose()


async def test_observers_see_every_event_and_chunk(runtime: Runtime) -> None:
    """The stream of changes: each appended event (with its log) and each streamed chunk."""
    session = runtime.open(None, ScriptedModel([{"text": "hello world"}]))
    seen: list[str] = []
    chunks: list[str] = []
    session.observe(lambda log, event: seen.append(event.type), lambda kind, c: chunks.append(c))
    await session.run("hi")
    assert seen == ["turn/start", "message/user", "message/assistant", "turn/end"]
    assert "".join(chunks) == "hello world"
    await session.aclose()


async def test_a_turn_in_a_system_place_is_refused_before_it_runs(runtime: Runtime) -> None:
    """With the sandbox on, a session made in /tmp (with it off) is refused every turn, run
    or submitted (a web request gets the line, not a task failing later), and a new session
    there is not made; nothing runs (the model only answers in text, so nothing could)."""
    from harness_core.runtime import SetupError
    from harness_core.tools import sandbox

    log = runtime.store.create(cwd="/tmp")
    log.close()
    sandbox.install(sandbox.Sandbox("workspace"))
    session = runtime.open(log.session_id, ScriptedModel([{"text": "ran"}]), hold=False)
    with pytest.raises(SetupError, match="the working directory /tmp cannot be the sandbox's"):
        await session.submit("go")
    with pytest.raises(SetupError, match="it is /tmp"):
        await session.run("go")
    with pytest.raises(SetupError, match="it is the whole file system"):
        runtime.create("/")
    assert prompts(session) == []
    assert [s.id for s in runtime.store.list()] == [log.session_id]
    await session.aclose()
