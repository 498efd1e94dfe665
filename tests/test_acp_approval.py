"""Approval in `harness acp`: under `--approval ask` the SDK's client is asked through
`session/request_permission` before each call with effects outside the log, and its answer
is on the log before the call runs (a real `harness acp` subprocess, scripted models)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse
from harness_core.log import INTERRUPTED_TEXT
from test_acp import Recorder, bridge, prompt
from test_cli_support import (
    HARNESS,
    bash_call,
    child_env,
    read_events,
    session_ids,
    todo_call,
    write_script,
)

DENIED_BY_USER = "Error: bash was denied: the user refused it"
ASK = ("--approval", "ask")


class Approver(Recorder):
    """A client that answers each permission request with the next option id in `answers`
    (None: the `cancelled` outcome) and keeps the requests."""

    def __init__(self, *answers: str | None) -> None:
        super().__init__()
        self.answers = list(answers)
        self.requests: list[Any] = []  # (tool_call, options, updates sent before it)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.requests.append((tool_call, options, list(self.updates)))
        answer = self.answers.pop(0)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    def statuses(self) -> list[tuple[str, str]]:
        return [
            (u.session_update, u.status)
            for u in self.updates
            if u.session_update in ("tool_call", "tool_call_update")
        ]


def approvals(home: Path, session: str) -> list[dict[str, Any]]:
    return [e["data"] for e in read_events(home, session) if e["type"] == "tool/approval"]


def results(home: Path, session: str) -> list[str]:
    return [e["data"]["text"] for e in read_events(home, session) if e["type"] == "tool/result"]


def touching(*markers: str) -> list[dict[str, Any]]:
    """Script steps: per marker, one prompt that touches it with bash, then answers."""
    steps: list[dict[str, Any]] = []
    for marker in markers:
        steps += [{"tool_calls": [bash_call(f"touch {marker}")]}, {"text": f"{marker} done"}]
    return steps


async def test_allow_once_runs_the_call_after_asking_with_the_whole_command(
    tmp_path: Path, harness_home: Path
) -> None:
    """The pending tool_call goes out, then the question (title, full command, three options);
    allow once runs it, and the log says the user allowed it once."""
    command = f"touch {tmp_path}/ran\necho second line"
    steps = [{"tool_calls": [todo_call(("Touch", "in_progress")), bash_call(command)]}]
    model = write_script(tmp_path / "s.json", [*steps, {"text": "Touched."}])
    client = Approver("allow_once")
    async with bridge(tmp_path, *ASK, "--model", model, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=prompt("Touch"))
    assert answer.stop_reason == "end_turn"
    assert (tmp_path / "ran").exists()
    ((tool_call, options, before),) = client.requests  # todo_write is never asked about
    assert [(u.session_update, u.status) for u in before] == [("tool_call", "pending")]
    assert before[0].tool_call_id == tool_call.tool_call_id
    assert tool_call.title == f"$ touch {tmp_path}/ran" and tool_call.kind == "execute"
    assert tool_call.raw_input == {"command": command}
    assert tool_call.content[0].content.text == command
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject_once", "reject_once"),
    ]
    assert client.statuses() == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
    ]
    assert approvals(harness_home, sid) == [
        {"call_id": tool_call.tool_call_id, "decision": "allow", "by": "user", "scope": "once"}
    ]


async def test_a_bidi_override_is_escaped_in_the_permission_request(
    tmp_path: Path, harness_home: Path
) -> None:
    """U+202E in a command: the pending tool_call's title and the question's title and content
    show it as `\\u202e` (a client would draw the rest reversed); rawInput stays as sent."""
    command = "echo safe #\u202e; touch ran\necho done"
    steps = [{"tool_calls": [bash_call(command)]}, {"text": "Not touched."}]
    client = Approver("reject_once")
    model = write_script(tmp_path / "s.json", steps)
    async with bridge(tmp_path, *ASK, "--model", model, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=prompt("Touch"))
    ((tool_call, _, (pending,)),) = client.requests
    assert pending.title == tool_call.title == "$ echo safe #\\u202e; touch ran"
    assert tool_call.content[0].content.text == "echo safe #\\u202e; touch ran\necho done"
    assert tool_call.raw_input == {"command": command}
    assert not (tmp_path / "ran").exists()


async def test_allow_for_the_session_is_not_asked_again_even_after_a_load(
    tmp_path: Path, harness_home: Path
) -> None:
    """allow_always: a later prompt's bash runs unasked, and so does one in a new process
    that loaded the session."""
    model = write_script(tmp_path / "s.json", touching("one", "two"))
    client = Approver("allow_always")
    async with bridge(tmp_path, *ASK, "--model", model, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=prompt("One"))
        await conn.prompt(session_id=sid, prompt=prompt("Two"))
    assert len(client.requests) == 1
    again = Approver()  # any question would fail the test: it has no answer to give
    model = write_script(tmp_path / "2.json", touching("three"))
    async with bridge(tmp_path, *ASK, "--model", model, client=again) as (conn, _):
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        answer = await conn.prompt(session_id=sid, prompt=prompt("Three"))
    assert answer.stop_reason == "end_turn" and again.requests == []
    assert all((tmp_path / name).exists() for name in ("one", "two", "three"))
    decisions = [(a["decision"], a["by"], a["scope"]) for a in approvals(harness_home, sid)]
    assert decisions == [("allow", "user", "session")] * 3


async def test_deny_refuses_the_call_and_replays_it_as_failed(
    tmp_path: Path, harness_home: Path
) -> None:
    """reject_once: nothing runs, the model reads the exact refusal, the client sees the call
    failed with it, live and in a later session/load."""
    model = write_script(tmp_path / "s.json", touching("ran"))
    client = Approver("reject_once")
    async with bridge(tmp_path, *ASK, "--model", model, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=prompt("Touch"))
    assert answer.stop_reason == "end_turn"
    assert not (tmp_path / "ran").exists()
    assert results(harness_home, sid) == [DENIED_BY_USER]
    assert [(a["decision"], a["by"]) for a in approvals(harness_home, sid)] == [("deny", "user")]
    assert client.statuses() == [("tool_call", "pending"), ("tool_call_update", "failed")]
    assert client.of("tool_call_update")[0].content[0].content.text == DENIED_BY_USER
    model = write_script(tmp_path / "2.json", [{"text": "x"}])
    async with bridge(tmp_path, *ASK, "--model", model) as (conn, replayed):
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
    (call,) = replayed.of("tool_call")
    assert call.status == "failed" and call.content[0].content.text == DENIED_BY_USER


async def test_a_subagents_calls_are_asked_on_the_parents_session(
    tmp_path: Path, harness_home: Path
) -> None:
    """The subagent call is asked, then its bash on the client's session, under an id that
    names the subagent's session; both answers land on their own session's log."""
    steps = [
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "Touch it."}}]},
        *touching("ran"),
        {"text": "The subagent is done."},
    ]
    client = Approver("allow_once", "allow_once")
    model = write_script(tmp_path / "s.json", steps)
    async with bridge(tmp_path, *ASK, "--model", model, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=prompt("Delegate"))
    assert answer.stop_reason == "end_turn" and (tmp_path / "ran").exists()
    (parent_call, _, _), (child_call, _, _) = client.requests
    assert parent_call.kind == "other" and child_call.title == "$ touch ran"
    child = next(s for s in session_ids(harness_home) if s != sid)
    assert child_call.tool_call_id == f"{child}/{approvals(harness_home, child)[0]['call_id']}"
    assert [a["by"] for a in approvals(harness_home, sid)] == ["user"]


class Holding(Recorder):
    """A client that keeps the permission request open until released, then answers
    `cancelled` (what ACP clients answer after session/cancel)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = anyio.Event()
        self.release = anyio.Event()

    async def request_permission(self, **_: Any) -> RequestPermissionResponse:
        self.asked.set()
        await self.release.wait()
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


async def test_cancel_while_asking_cancels_the_turn(tmp_path: Path, harness_home: Path) -> None:
    """session/cancel with the question open: the prompt answers cancelled, the call is
    interrupted (not denied, nothing ran), and the next prompt runs."""
    model = write_script(tmp_path / "s.json", touching("ran"))
    client = Holding()
    async with bridge(tmp_path, *ASK, "--model", model, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        answers: list[Any] = []
        async with anyio.create_task_group() as group:

            async def ask() -> None:
                answers.append(await conn.prompt(session_id=sid, prompt=prompt("Touch")))

            group.start_soon(ask)
            with anyio.fail_after(30):
                await client.asked.wait()
            await conn.cancel(session_id=sid)
            client.release.set()
        assert answers[0].stop_reason == "cancelled"
        again = await conn.prompt(session_id=sid, prompt=prompt("Go on"))
        assert again.stop_reason == "end_turn"
    assert not (tmp_path / "ran").exists()
    assert results(harness_home, sid) == [INTERRUPTED_TEXT]
    assert approvals(harness_home, sid) == []
    ends = [e["data"]["status"] for e in read_events(harness_home, sid) if e["type"] == "turn/end"]
    assert ends == ["cancelled", "completed"]


@pytest.mark.parametrize(
    ("args", "ran", "text"),
    [
        (("--approval", "deny"), False, "Error: bash was denied: the approval policy is deny"),
        (("--approval", "auto"), True, "[exit code 0]"),
        ((), True, "[exit code 0]"),  # the default off a terminal: the client's pipe is not one
    ],
)
async def test_policies_that_never_ask(
    tmp_path: Path, harness_home: Path, args: tuple[str, ...], ran: bool, text: str
) -> None:
    """deny refuses and auto (also the default on a pipe) runs, neither asks the client."""
    model = write_script(tmp_path / "s.json", touching("ran"))
    client = Approver()
    env = {"HARNESS_APPROVAL": None}
    async with bridge(tmp_path, *args, "--model", model, env=env, client=client) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=prompt("Touch"))
    assert client.requests == []
    assert (tmp_path / "ran").exists() == ran
    (result,) = results(harness_home, sid)
    assert result.startswith(text)
    assert [a["by"] for a in approvals(harness_home, sid)] == ["policy"]
    assert client.statuses()[0] == ("tool_call", "in_progress")


async def test_a_client_that_cannot_be_asked_refuses_the_call(
    tmp_path: Path, harness_home: Path
) -> None:
    """A client without request_permission: the call is refused by the policy (nobody
    refused it), the model reads why, and stderr says it once."""
    model = write_script(tmp_path / "s.json", touching("one", "two"))
    async with bridge(tmp_path, *ASK, "--model", model) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=prompt("One"))
        await conn.prompt(session_id=sid, prompt=prompt("Two"))
    (first, second) = results(harness_home, sid)
    assert first == second
    assert first.startswith("Error: bash was denied: the approval policy is ask and the ACP ")
    assert "client could not be asked (" in first and "--approval auto" in first
    assert [a["by"] for a in approvals(harness_home, sid)] == ["policy", "policy"]
    assert not (tmp_path / "one").exists()
    stderr = (tmp_path / "acp-stderr.txt").read_text()
    assert stderr.count("the client could not be asked whether bash may run") == 1


@pytest.mark.parametrize(("flag", "ran"), [("--approve-all", True), ("--deny-all", False)])
def test_acpx_answers_the_question(
    acpx: str, tmp_path: Path, harness_home: Path, flag: str, ran: bool
) -> None:
    """A client nobody here wrote (acpx) is asked under --approval ask and its answer holds."""
    model = write_script(tmp_path / "s.json", touching("ran"))
    agent = f"{HARNESS} acp --approval ask --model {model}"
    result = subprocess.run(
        [acpx, flag, "--agent", agent, "--cwd", str(tmp_path), "--format", "json", "exec", "go"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    methods = [m.get("method") for m in messages]
    assert methods.count("session/request_permission") == 1, result.stderr
    assert {"stopReason": "end_turn"} in [m.get("result") for m in messages]
    assert (tmp_path / "ran").exists() == ran
    (session,) = session_ids(harness_home)
    assert [(a["decision"], a["by"]) for a in approvals(harness_home, session)] == [
        ("allow" if ran else "deny", "user")
    ]
