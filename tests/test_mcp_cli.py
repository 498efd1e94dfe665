"""harness-tool-mcp through the CLI: `harness mcp`, a scripted turn calling an MCP tool, HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_support import npm_binary, read_events, run_cli, session_ids, write_script

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "plugins" / "harness-tool-mcp" / "tests" / "tiny_server.py"


def configure(home: Path, servers: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(servers, encoding="utf-8")


def stdio(name: str, *args: str) -> str:
    return (
        f"[plugins.mcp.servers.{name}]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(TINY), *args])}\n"
    )


def test_harness_mcp_lists_ready_and_failed_servers(harness_home: Path) -> None:
    """--json gives each server's state, error (with the stderr tail) and registered tools."""
    configure(
        harness_home,
        stdio(
            "tiny",
        )
        + stdio("broken", "--fail"),
    )
    result = run_cli("mcp", "--json", timeout=120)
    assert result.returncode == 1, result.stderr
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert servers["tiny"]["state"] == "ready" and servers["tiny"]["error"] is None
    assert (
        "tiny__add" in servers["tiny"]["tools"] and "tiny__weird_name" in servers["tiny"]["tools"]
    )
    broken = servers["broken"]
    assert (broken["state"], broken["tools"]) == ("failed", [])
    assert broken["error"].startswith("it exited before it was ready")
    assert "cannot open the database" in broken["error"]
    human = run_cli("mcp", timeout=120).stdout
    assert "tiny: ready · tiny__echo" in human and "broken: failed · no tools" in human


def test_a_scripted_turn_calls_an_mcp_tool(tmp_path: Path, harness_home: Path) -> None:
    """The model's call reaches the server; the result text and structured data are logged."""
    configure(harness_home, stdio("tiny"))
    steps = [
        {"tool_calls": [{"name": "tiny__add", "arguments": {"a": 2, "b": 40}}]},
        {"tool_calls": [{"name": "tiny__add", "arguments": {"a": "x"}}]},
        {"text": "Done."},
    ]
    result = run_cli("run", "--model", write_script(tmp_path / "s.json", steps), "add", timeout=120)
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    results = [e["data"] for e in read_events(harness_home, session) if e["type"] == "tool/result"]
    assert results[0]["data"] == {"total": 42} and not results[0].get("is_error")
    assert results[1]["is_error"] and "'b' is a required property" in results[1]["text"]


def test_a_tool_list_change_reaches_the_next_model_request(
    tmp_path: Path, harness_home: Path
) -> None:
    """After notifications/tools/list_changed the new tool is offered and called; once removed
    it is gone from the next request and a call to it is an unknown-tool error."""
    configure(harness_home, stdio("tiny"))
    steps = [
        {"tool_calls": [{"name": "tiny__grow", "arguments": {}}]},
        {"tool_calls": [{"name": "tiny__extra", "arguments": {"text": "hi"}}]},
        {"tool_calls": [{"name": "tiny__shrink", "arguments": {}}]},
        {"tool_calls": [{"name": "tiny__extra", "arguments": {"text": "again"}}]},
        {"text": "Done."},
    ]
    result = run_cli("run", "--model", write_script(tmp_path / "s.json", steps), "go", timeout=120)
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    results = [e["data"] for e in read_events(harness_home, session) if e["type"] == "tool/result"]
    grown, extra, shrunk, gone = results
    assert (grown["text"], extra["text"], shrunk["text"]) == ("grown", "extra: hi", "shrunk")
    assert not extra.get("is_error")
    assert gone["is_error"] and gone["text"].startswith('Error: unknown tool "tiny__extra"')


def test_commands_that_read_sessions_start_no_server(tmp_path: Path, harness_home: Path) -> None:
    """`run` starts the configured server; `show`, `events` and `todos` on its session don't."""
    counter = tmp_path / "starts"
    configure(harness_home, stdio("tiny") + 'env = ["TINY_COUNTER"]\n')
    env = {"TINY_COUNTER": str(counter)}
    steps = [{"tool_calls": [{"name": "tiny__starts", "arguments": {}}]}, {"text": "Done."}]
    script = write_script(tmp_path / "s.json", steps)
    assert run_cli("run", "--model", script, "go", env=env, timeout=120).returncode == 0
    assert counter.read_text() == "1"
    counter.unlink()
    (session,) = session_ids(harness_home)
    for command in ("show", "events", "todos"):
        assert run_cli(command, session, env=env, timeout=120).returncode == 0
    assert not counter.exists()


def test_a_huge_structured_content_is_left_out_of_the_log_and_the_result_says_so(
    tmp_path: Path, harness_home: Path
) -> None:
    """10 MB of structuredContent: the text is capped and the data left out, with a line
    telling the model (and every host) why; the session log stays small."""
    configure(harness_home, stdio("tiny", "--big"))
    steps = [
        {"tool_calls": [{"name": "tiny__big", "arguments": {"megabytes": 10}}]},
        {"text": "ok"},
    ]
    result = run_cli("run", "--model", write_script(tmp_path / "s.json", steps), "big", timeout=120)
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    (logged,) = [
        e["data"] for e in read_events(harness_home, session) if e["type"] == "tool/result"
    ]
    assert logged["data"] is None and not logged["is_error"]
    assert logged["text"].splitlines()[-1] == (
        "[structuredContent left out: 10000012 bytes of JSON, over the 30000-byte cap]"
    )
    assert (harness_home / "sessions" / f"{session}.jsonl").stat().st_size < 100_000


def test_a_server_printing_on_stdout_is_one_warning_naming_it(harness_home: Path) -> None:
    """A banner on a stdio server's stdout (not MCP) is one warning line naming the server,
    no traceback, and the server still works."""
    configure(harness_home, stdio("chatty", "--noisy"))
    result = run_cli("mcp", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "harness: warning: MCP server 'chatty' printed a line on stdout that is not an MCP "
        "message ('tiny: starting up'); stdout is the protocol, a server logs to stderr "
        "(more such lines are ignored)"
    ]
    assert result.stdout.startswith("chatty: ready · chatty__echo")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    """tiny_server.py over Streamable HTTP on a loopback port; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(TINY), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_an_http_server_on_loopback(http_server: str, harness_home: Path) -> None:
    """A url server is listed ready with its tools, like a stdio one."""
    configure(
        harness_home,
        f'[plugins.mcp.servers.web]\nurl = "{http_server}"\n'
        'headers = { Authorization = "Bearer test" }\n',
    )
    result = run_cli("mcp", "--json", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    (server,) = json.loads(result.stdout)["servers"]
    assert server["state"] == "ready" and "web__echo" in server["tools"]


EVERYTHING_VERSION = "2026.8.31"


@pytest.fixture(scope="session")
def everything() -> str:
    """The reference server @modelcontextprotocol/server-everything, from npm."""
    package = f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"
    return npm_binary(package, "mcp-server-everything", "the reference MCP server test")


def test_the_reference_server_through_a_scripted_turn(
    everything: str, tmp_path: Path, harness_home: Path
) -> None:
    """server-everything's tools: text, a sum, an image described in one line, no model key."""
    configure(
        harness_home,
        f'[plugins.mcp.servers.everything]\ncommand = {json.dumps(everything)}\nargs = ["stdio"]\n',
    )
    calls = [
        ("everything__echo", {"message": "hello"}),
        ("everything__get-sum", {"a": 2, "b": 3}),
        ("everything__get-tiny-image", {}),
        ("everything__get-env", {}),
        ("everything__get-sum", {"a": "two"}),
    ]
    steps = [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]
    script = write_script(tmp_path / "s.json", [*steps, {"text": "Done."}])
    result = run_cli(
        "run", "--model", script, "go", env={"OPENAI_API_KEY": "sk-kept-here"}, timeout=120
    )
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    results = [e["data"] for e in read_events(harness_home, session) if e["type"] == "tool/result"]
    echo, total, image, environment, bad = results
    assert "hello" in echo["text"] and "5" in total["text"]
    assert "[image: image/png, about" in image["text"] and "not shown" in image["text"]
    assert "PATH" in environment["text"]  # it does show its environment
    assert "sk-kept-here" not in environment["text"] and "OPENAI_API_KEY" not in environment["text"]
    assert bad["is_error"] and "Error: invalid arguments for everything__get-sum" in bad["text"]
