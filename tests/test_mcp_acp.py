"""harness-tool-mcp behind `harness acp`: the MCP servers a client names run for its session."""

from __future__ import annotations

import sys
from pathlib import Path

from acp import PROTOCOL_VERSION
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio
from test_acp import bridge, poll, prompt, running  # test_acp finds the process helpers
from test_cli_support import read_events, write_script
from test_mcp_cli import http_server  # noqa: F401  # the fixture: tiny_server.py over HTTP

TINY = (
    Path(__file__).resolve().parents[1]
    / "plugins"
    / "harness-tool-mcp"
    / "tests"
    / "tiny_server.py"
)


async def test_harness_session_mcp_runs_a_clients_servers_for_its_session_only(
    tmp_path: Path,
    harness_home: Path,
    http_server: str,  # noqa: F811
) -> None:
    """initialize offers http (not sse); session/new's stdio server is called in a scripted
    turn with the variable the client gave it, its http server too; a session without them
    finds no such tools; the stdio server ends with the bridge."""
    steps = [
        {"tool_calls": [{"name": "tiny__environment", "arguments": {"name": "GIVEN"}}]},
        {"tool_calls": [{"name": "web__echo", "arguments": {"text": "over http"}}]},
        {"tool_calls": [{"name": "tiny__pid", "arguments": {}}]},
        {"text": "Done."},
    ]
    model = write_script(tmp_path / "s.json", steps)
    tiny = McpServerStdio(
        name="tiny",
        command=sys.executable,
        args=[str(TINY)],
        env=[EnvVariable(name="GIVEN", value="by the client")],
    )
    headers = [HttpHeader(name="Authorization", value="Bearer test")]
    web = HttpMcpServer(type="http", name="web", url=http_server, headers=headers)
    async with bridge(tmp_path, "--model", model) as (conn, recorder):
        offered = (await conn.initialize(protocol_version=PROTOCOL_VERSION)).agent_capabilities
        with_tiny = await conn.new_session(cwd=str(tmp_path), mcp_servers=[tiny, web])
        first = await conn.prompt(session_id=with_tiny.session_id, prompt=prompt("go"))
        without = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        second = await conn.prompt(session_id=without.session_id, prompt=prompt("go"))
    assert offered.mcp_capabilities.http is True and offered.mcp_capabilities.sse is False
    assert first.stop_reason == second.stop_reason == "end_turn"
    called, echoed, pid, *missing = recorder.of("tool_call_update")
    await poll(lambda: not running(int(pid.content[0].content.text)))
    assert (called.status, called.content[0].content.text) == ("completed", "by the client")
    assert (echoed.status, echoed.content[0].content.text) == ("completed", "over http")
    assert [m.content[0].content.text.split(".")[0] for m in missing] == [
        'Error: unknown tool "tiny__environment"',
        'Error: unknown tool "web__echo"',
        'Error: unknown tool "tiny__pid"',
    ]
    events = read_events(harness_home, with_tiny.session_id)
    results = [e["data"]["text"] for e in events if e["type"] == "tool/result"]
    assert results[:2] == ["by the client", "over http"]
