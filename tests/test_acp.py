"""`harness acp`: the Agent Client Protocol bridge, driven by the SDK's own client (and raw
JSON-RPC lines) against a real `harness acp` subprocess with a scripted model."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from harness_core.log import INTERRUPTED_TEXT
from harness_core.testing.openai_server import OpenAIServer, reply
from harness_core.testing.pytest_plugin import FakeDistribution
from test_cli_support import (
    HARNESS,
    bash_call,
    child_env,
    own_stderr,
    read_events,
    session_ids,
    todo_call,
    write_script,
)

# The process helpers live with the core's tests; this file may run without them collected.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness-core" / "tests"))
from process_helpers import has_pid, poll, running


class Recorder:
    """The client side: keeps every session/update it is sent."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.pid = 0  # the bridge's process

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    def kinds(self) -> list[str]:
        return [update.session_update for update in self.updates]

    def of(self, kind: str) -> list[Any]:
        return [update for update in self.updates if update.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(update.content.text for update in self.of(kind))


@asynccontextmanager
async def bridge(
    tmp_path: Path,
    *args: str,
    env: dict[str, str | None] | None = None,
    client: Recorder | None = None,
) -> AsyncIterator[tuple[ClientSideConnection, Recorder]]:
    """A `harness acp ARGS` subprocess and the SDK client (`client`, else a plain Recorder)
    connected to it, initialized."""
    recorder = client or Recorder()
    with (tmp_path / "acp-stderr.txt").open("ab") as stderr:
        async with spawn_agent_process(
            recorder,
            HARNESS,
            "acp",
            *args,
            env=child_env(env),
            transport_kwargs={"stderr": stderr},
        ) as (conn, process):
            answer = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            assert answer.protocol_version == 1
            recorder.pid = process.pid
            yield conn, recorder


def prompt(text: str) -> list[Any]:
    return [text_block(text)]


def not_json(constant: str) -> Any:
    """json.loads' hook for NaN and Infinity, which Python reads and JSON does not have."""
    raise ValueError(f"{constant} is not JSON")


def update_kind(message: dict[str, Any]) -> str | None:
    """The `sessionUpdate` of a session/update notification (None for any other message)."""
    if message.get("method") != "session/update":
        return None
    kind: str = message["params"]["update"]["sessionUpdate"]
    return kind


class RawBridge:
    """A `harness acp ARGS` subprocess spoken to in raw lines: what no SDK client would send.

    stdout is read by a thread, so a test can wait for a message with a timeout; every line
    must be JSON (`read` fails on one that is not).
    """

    def __init__(
        self, tmp_path: Path, *args: str, env: dict[str, str | None] | None = None
    ) -> None:
        self.stderr_path = tmp_path / "acp-stderr.txt"
        with self.stderr_path.open("ab") as stderr:
            self.process = subprocess.Popen(
                [HARNESS, "acp", *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=child_env(env),
            )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0

    def __enter__(self) -> RawBridge:
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:  # a failed test left it running
            self.process.kill()
        self.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout:
            for line in self.process.stdout:
                self._lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: Any) -> int:
        """Send a well-formed request; its id."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self.send(json.dumps(message).encode())
        return self._next_id

    def read(self, timeout: float = 30) -> dict[str, Any]:
        """The next message; strict JSON (NaN or Infinity would fail a client's parser)."""
        line = self._lines.get(timeout=timeout)
        message: dict[str, Any] = json.loads(line, parse_constant=not_json)
        return message

    def until(self, found: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        """Read messages until one for which `found` is true; that one."""
        while not found(message := self.read(timeout)):
            pass
        return message

    def answer(self, request_id: int | str | None) -> dict[str, Any]:
        return self.until(lambda m: "method" not in m and m.get("id") == request_id)

    def start_session(self, cwd: Path) -> str:
        self.answer(self.request("initialize", {"protocolVersion": PROTOCOL_VERSION}))
        answer = self.answer(self.request("session/new", {"cwd": str(cwd), "mcpServers": []}))
        session_id: str = answer["result"]["sessionId"]
        return session_id

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> int:
        """Close stdin and wait: the bridge's exit status."""
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        status = self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        return status


async def test_a_turn_streams_text_and_bash_but_never_the_plan(
    tmp_path: Path, harness_home: Path
) -> None:
    """A prompt shows message chunks and the bash call; todo_write runs on the log, unseen."""
    steps = [
        {"tool_calls": [todo_call(("Look around", "in_progress"))]},
        {"tool_calls": [bash_call("pwd; echo from bash")]},
        {"tool_calls": [todo_call(("Look around", "completed"))]},
        {"text": "Looked around, all done."},
    ]
    model = write_script(tmp_path / "s.json", steps)
    work = tmp_path / "work"
    work.mkdir()
    async with bridge(tmp_path, "--model", model) as (conn, recorder):
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=prompt("Look around"))
    assert answer.stop_reason == "end_turn"
    assert recorder.text() == "Looked around, all done."
    assert "plan" not in recorder.kinds()
    (call,) = recorder.of("tool_call")
    assert call.title == "$ pwd; echo from bash" and call.kind == "execute"
    (finished,) = recorder.of("tool_call_update")
    assert finished.tool_call_id == call.tool_call_id and finished.status == "completed"
    assert finished.content[0].content.text == f"{work}\nfrom bash\n[exit code 0]"
    assert session_ids(harness_home) == [session.session_id]
    events = read_events(harness_home, session.session_id)
    writes = [e["data"]["todos"][0]["status"] for e in events if e["type"] == "todo/write"]
    assert writes == ["in_progress", "completed"]
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["status"] == "completed"


async def test_cancel_ends_the_prompt_and_kills_the_running_command(
    tmp_path: Path, harness_home: Path
) -> None:
    """session/cancel mid bash: the prompt answers cancelled, sleep dies, the log is closed."""
    pid_file = tmp_path / "pid"
    steps = [
        {"tool_calls": [bash_call(f"echo $$ > {pid_file}; exec sleep 60")]},
        {"text": "Back after the cancel."},
    ]
    model = write_script(tmp_path / "s.json", steps)
    # Sandbox off: the test reads the command's pid, which a sandbox's PID namespace renumbers
    # (test_sandbox.py covers what the sandbox kills).
    async with bridge(tmp_path, "--model", model, "--sandbox", "off") as (conn, recorder):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        async with anyio.create_task_group() as group:
            answers: list[Any] = []
            answered = anyio.Event()

            async def ask() -> None:
                answers.append(await conn.prompt(session_id=sid, prompt=prompt("Sleep")))
                answered.set()

            group.start_soon(ask)
            await poll(lambda: has_pid(pid_file))
            await conn.cancel(session_id=sid)
            with anyio.fail_after(10):  # the sleep had 60 s to go
                await answered.wait()
        assert answers[0].stop_reason == "cancelled"
        assert not running(int(pid_file.read_text()))
        (finished,) = recorder.of("tool_call_update")
        assert finished.status == "failed"
        # The session's player continues where the cancelled turn stopped.
        again = await conn.prompt(session_id=sid, prompt=prompt("Go on"))
        assert again.stop_reason == "end_turn"
    events = read_events(harness_home, sid)
    ends = [e["data"]["status"] for e in events if e["type"] == "turn/end"]
    assert ends == ["cancelled", "completed"]
    (result,) = [e["data"] for e in events if e["type"] == "tool/result"]
    assert result["is_error"] and result["text"] == INTERRUPTED_TEXT


async def test_sigterm_mid_turn_closes_the_turn_and_its_command(
    tmp_path: Path, harness_home: Path
) -> None:
    """SIGTERM while bash runs: the command dies, the turn ends cancelled, the bridge exits."""
    pid_file = tmp_path / "pid"
    model = write_script(
        tmp_path / "s.json", [{"tool_calls": [bash_call(f"echo $$ > {pid_file}; exec sleep 60")]}]
    )
    async with bridge(tmp_path, "--model", model, "--sandbox", "off") as (conn, recorder):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        async with anyio.create_task_group() as group:

            async def ask() -> None:
                with pytest.raises(ConnectionError):  # the bridge exits without answering
                    await conn.prompt(session_id=sid, prompt=prompt("Sleep"))

            group.start_soon(ask)
            await poll(lambda: has_pid(pid_file))
            os.kill(recorder.pid, signal.SIGTERM)
            await poll(lambda: not running(recorder.pid))
    assert not running(int(pid_file.read_text()))
    end = read_events(harness_home, sid)[-1]
    assert end["type"] == "turn/end" and end["data"]["status"] == "cancelled"


async def test_load_replays_the_conversation_then_continues_the_log(
    tmp_path: Path, harness_home: Path
) -> None:
    """session/load replays user, agent and bash (final status), never todo; then continues."""
    first = [
        {"tool_calls": [todo_call(("Count", "in_progress")), bash_call("echo 42")]},
        {"text": "The answer is 42."},
    ]
    async with bridge(tmp_path, "--model", write_script(tmp_path / "1.json", first)) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=prompt("Count"))
    second = write_script(tmp_path / "2.json", [{"text": "Still 42."}])
    async with bridge(tmp_path, "--model", second) as (conn, recorder):
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        assert recorder.kinds() == ["user_message_chunk", "tool_call", "agent_message_chunk"]
        assert recorder.text("user_message_chunk") == "Count"
        (call,) = recorder.of("tool_call")
        assert call.title == "$ echo 42" and call.status == "completed"
        assert call.content[0].content.text == "42\n[exit code 0]"
        assert recorder.text() == "The answer is 42."
        listed = await conn.list_sessions()
        assert [(s.session_id, s.cwd, s.title) for s in listed.sessions] == [
            (sid, str(tmp_path), "Count")
        ]
        answer = await conn.prompt(session_id=sid, prompt=prompt("And now?"))
        assert answer.stop_reason == "end_turn" and recorder.text().endswith("Still 42.")
    events = read_events(harness_home, sid)
    assert [e["turn"] for e in events if e["type"] == "turn/start"] == [1, 2]


async def test_loading_a_session_another_process_writes_names_the_holder(
    tmp_path: Path, harness_home: Path
) -> None:
    """One writer per session: session/load of a session held elsewhere is an error naming it."""
    from harness_core.cli._app import App

    app = App(harness_home)
    with app.store.create(cwd=str(tmp_path)) as held:
        async with bridge(
            tmp_path, "--model", write_script(tmp_path / "s.json", [{"text": "x"}])
        ) as (conn, _):
            with pytest.raises(RequestError) as caught:
                await conn.load_session(
                    cwd=str(tmp_path), session_id=held.session_id, mcp_servers=[]
                )
    assert f"already open for writing by process {os.getpid()}" in str(caught.value)


async def test_model_problems_are_json_rpc_errors_with_the_cli_reason(
    tmp_path: Path, harness_home: Path
) -> None:
    """No model at session/new, and a model error mid-prompt (logged as error), are errors."""
    async with bridge(tmp_path) as (conn, _):
        with pytest.raises(RequestError) as caught:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert str(caught.value).startswith("no model chosen: pass --model SPEC")
        assert session_ids(harness_home) == []
    async with bridge(tmp_path, "--model", "openai:m") as (conn, _):
        with pytest.raises(RequestError) as caught:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert str(caught.value) == "openai:m needs an API key: set OPENAI_API_KEY"
    model = write_script(tmp_path / "s.json", [{"tool_calls": [bash_call("true")]}])
    async with bridge(tmp_path, "--model", model) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as caught:
            await conn.prompt(session_id=sid, prompt=prompt("go"))
        assert "has 1 steps and the loop asked for step 2" in str(caught.value)
    end = read_events(harness_home, sid)[-1]
    assert end["type"] == "turn/end" and end["data"]["status"] == "error"


async def test_reasoning_streams_as_thought_chunks(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """An OpenAI-compatible model's reasoning_content arrives as agent_thought_chunk, text after."""
    openai_server.expect(reply("It is 4.", reasoning="Two plus two makes four.", pieces=3))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai_server.base_url}
    async with bridge(tmp_path, "--model", "openai:m", env=env) as (conn, recorder):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=prompt("2+2?"))
    assert answer.stop_reason == "end_turn"
    assert recorder.text("agent_thought_chunk") == "Two plus two makes four."
    assert recorder.text() == "It is 4."
    assert len(recorder.of("agent_thought_chunk")) == 3
    assert recorder.kinds().index("agent_message_chunk") > recorder.kinds().index(
        "agent_thought_chunk"
    )


async def test_the_step_limit_is_max_turn_requests(tmp_path: Path) -> None:
    """A turn stopped by max_steps answers stopReason max_turn_requests."""
    model = write_script(tmp_path / "s.json", [{"tool_calls": [bash_call("true")]}])
    async with bridge(tmp_path, "--model", model, env={"HARNESS_MAX_STEPS": "1"}) as (conn, _):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=prompt("go"))
    assert answer.stop_reason == "max_turn_requests"


async def test_methods_the_bridge_does_not_serve_are_method_not_found(tmp_path: Path) -> None:
    """SDK methods the bridge lacks, extensions and unknown names all answer -32601."""
    async with bridge(tmp_path) as (conn, _):
        for call in (
            conn.set_session_mode(session_id="x", mode_id="y"),
            conn.authenticate(method_id="x"),
            conn.ext_method("harness/nothing", {}),
            conn._conn.send_request("session/nothing", {}),
        ):
            with pytest.raises(RequestError) as caught:
                await call
            assert caught.value.code == -32601


RAW = [
    "this is not json",
    "[1, 2]",
    '{"jsonrpc": "2.0", "id": 1}',
    '{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1}}',
    '{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}',
    '{"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "CWD", "mcpServers": []}}',
    '{"jsonrpc": "2.0", "id": 5, "method": "session/nothing"}',
    '{"jsonrpc": "2.0", "id": 6, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}',
    '{"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {"cwd": NaN}}',
    '{"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": "CWD", "mcpServers": "\\udc80"}}',
    '{"jsonrpc": "2.0", "method": "session/cancel", "params": 5}',
    '{"jsonrpc": "2.0", "method": "harness/unknown_notification"}',
]

NOISY = """
import os, sys
name = "noisy"
inject = ()
print("noisy plugin on sys.stdout")
os.write(1, b"noisy plugin on fd 1\\n")
"""


def test_raw_stdio_every_line_is_json_rpc(
    tmp_path: Path, fake_distribution: FakeDistribution
) -> None:
    """Malformed lines get JSON-RPC errors, the bridge keeps serving, prints never reach stdout."""
    info = fake_distribution("noisy-plugin", {"noisy": "noisy_plugin"}, {"noisy_plugin.py": NOISY})
    steps = [{"tool_calls": [bash_call("echo to the tool")]}, {"text": "Printed."}]
    model = write_script(tmp_path / "s.json", steps)
    lines = [line.replace("CWD", str(tmp_path)) for line in RAW]
    result = subprocess.run(
        [HARNESS, "acp", "--model", model],
        input="\n".join(lines) + "\n",
        env=child_env({"PYTHONPATH": str(info.parent)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "noisy plugin on sys.stdout" in result.stderr and "noisy plugin on fd 1" in result.stderr
    # The bad notification is one warning line; the unknown one is ignored, as JSON-RPC says.
    lines = own_stderr(result.stderr).splitlines()
    (warning,) = [line for line in lines if "noisy plugin" not in line]
    assert warning.startswith("harness: warning: ACP: Unhandled error while handling notification")
    messages = [json.loads(line, parse_constant=not_json) for line in result.stdout.splitlines()]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    errors = [(m["id"], m["error"]["code"]) for m in messages if "error" in m]
    assert sorted(errors, key=str) == sorted(
        [
            (None, -32700),
            (None, -32600),
            (1, -32600),
            (3, -32602),
            (5, -32601),
            (6, -32602),
            (None, -32700),  # NaN is no JSON, and an answer echoing it would not be either
            (8, -32602),  # the answer echoes the lone surrogate, escaped
        ],
        key=str,
    )
    assert '"input":"\\udc80"' in result.stdout  # UTF-8 cannot hold it; a JSON escape can
    answered = {m["id"]: m["result"] for m in messages if "result" in m}
    assert answered[2]["agentCapabilities"]["loadSession"] is True
    assert answered[2]["agentInfo"]["name"] == "harness"
    assert answered[4]["sessionId"]


def test_a_deeply_nested_line_mid_prompt_is_an_error_and_the_prompt_still_ends(
    tmp_path: Path, harness_home: Path
) -> None:
    """`[` x 3000 (too deep for Python's parser) and deep params (parsed, then refused) while a
    prompt runs bash: each is answered with an error, the prompt ends end_turn, the bridge
    keeps serving and exits 0 at the end of input."""
    steps = [{"tool_calls": [bash_call("sleep 2; echo slept")]}, {"text": "Slept."}]
    deep_params = {"_meta": json.loads("[" * 500 + "]" * 500)}
    deep = {"jsonrpc": "2.0", "id": "deep", "method": "session/list", "params": deep_params}
    with RawBridge(tmp_path, "--model", write_script(tmp_path / "s.json", steps)) as raw:
        sid = raw.start_session(tmp_path)
        text = [{"type": "text", "text": "Sleep"}]
        running = raw.request("session/prompt", {"sessionId": sid, "prompt": text})
        raw.until(lambda m: update_kind(m) == "tool_call")
        raw.send(b"[" * 3000 + b"]" * 3000)
        raw.send(json.dumps(deep).encode())
        seen = [raw.read()]
        while seen[-1].get("id") != running:
            seen.append(raw.read())
        # Both answered while bash still ran (before its result), each with its error.
        assert [(m["id"], m["error"]) for m in seen[:2]] == [
            (None, {"code": -32700, "message": "Parse error: nested too deeply to read"}),
            ("deep", {"code": -32600, "message": "Invalid Request: nested deeper than 100 levels"}),
        ]
        assert [update_kind(m) for m in seen[2:-1]] == ["tool_call_update", "agent_message_chunk"]
        assert seen[-1]["result"] == {"stopReason": "end_turn"}
        listed = raw.answer(raw.request("session/list", {}))["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]
        assert raw.close() == 0, raw.stderr()
        assert "Traceback" not in raw.stderr()
    end = read_events(harness_home, sid)[-1]
    assert end["type"] == "turn/end" and end["data"]["status"] == "completed"


def test_acpx_drives_a_turn_to_the_end(acpx: str, tmp_path: Path, harness_home: Path) -> None:
    """A client nobody here wrote (acpx exec --format json) completes a turn with tools."""
    steps = [
        {"tool_calls": [todo_call(("Greet", "in_progress"))]},
        {"tool_calls": [bash_call("echo hello from acpx")]},
        {"text": "Greeted."},
    ]
    model = write_script(tmp_path / "s.json", steps)
    agent = f"{HARNESS} acp --model {model}"
    result = subprocess.run(
        [acpx, "--agent", agent, "--cwd", str(tmp_path), "--format", "json", "exec", "Greet me"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    assert [u["sessionUpdate"] for u in updates if u["sessionUpdate"].startswith("tool")] == [
        "tool_call",
        "tool_call_update",
    ]
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "Greeted."
    assert {"stopReason": "end_turn"} in [m.get("result") for m in messages]
    (session,) = session_ids(harness_home)
    assert [e["type"] for e in read_events(harness_home, session)].count("todo/write") == 1
