"""The MCP plugin against a real stdio server (tiny_server.py, on the SDK's MCPServer)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import harness_tool_mcp
import mcp_types as types
import pytest
from harness_core import builtins
from harness_core.config import Config
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext, ToolRegistry
from harness_tool_mcp._config import McpConfig
from harness_tool_mcp._naming import MAX_NAME, tool_name
from harness_tool_mcp._result import to_tool_result
from harness_tool_mcp._server import _closed
from harness_tool_mcp._tool import McpTool
from pydantic import ValidationError

TINY = str(Path(__file__).with_name("tiny_server.py"))


def test_names_join_server_and_tool_and_replace_what_a_model_api_refuses() -> None:
    """`files__read` as is; dots, slashes and spaces become `_`."""
    assert tool_name("files", "read") == "files__read"
    assert tool_name("my-srv", "weird.name/with space") == "my-srv__weird_name_with_space"


def test_names_are_cut_to_64_characters() -> None:
    """A long tool name is cut so the whole registered name is 64 characters."""
    name = tool_name("server", "t" * 100)
    assert len(name) == MAX_NAME == 64 and name.startswith("server__ttt")


def test_a_server_is_a_command_or_a_url_and_its_name_is_checked() -> None:
    """Both or neither transport, headers on a command, and a bad NAME are refused."""
    for bad in (
        {"x": {"command": "a", "url": "http://h"}},
        {"x": {}},
        {"x": {"command": "a", "headers": {"A": "b"}}},
        {"x": {"url": "http://h", "env": ["HOME"]}},
        {"bad name": {"command": "a"}},
        {"x": {"command": "a", "timeout": 0}},
    ):
        with pytest.raises(ValidationError):
            McpConfig.model_validate({"servers": bad})
    config = McpConfig.model_validate({"servers": {"files_1-a": {"command": "a"}}})
    assert config.servers["files_1-a"].timeout == 60


def test_results_keep_text_structured_content_and_describe_other_blocks() -> None:
    """Text is the model's text, structuredContent the data, an image one line, isError stays."""
    result = types.CallToolResult(
        content=[
            types.TextContent(text="hello"),
            types.ImageContent(data="AAAA", mime_type="image/png"),
            types.ResourceLink(name="r", uri="file:///tmp/x", mime_type="text/plain"),
        ],
        structured_content={"n": 1},
        is_error=True,
    )
    converted = to_tool_result(result)
    assert converted.text.splitlines() == [
        "hello",
        "[image: image/png, about 3 bytes, not shown]",
        "[resource link: file:///tmp/x (text/plain)]",
    ]
    assert converted.data == {"n": 1} and converted.is_error


def test_long_text_keeps_its_head_and_tail() -> None:
    """Text over the cap is cut in the middle, like bash output."""
    text = "HEAD" + "x" * 100_000 + "TAIL"
    converted = to_tool_result(types.CallToolResult(content=[types.TextContent(text=text)]))
    assert converted.text.startswith("HEAD") and converted.text.endswith("TAIL")
    assert "bytes of output cut" in converted.text and len(converted.text) < 31_000


def server(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [TINY, *args], **extra}


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Load the plugin into a host configured with the given servers; stop them after."""
    registries: list[ToolRegistry] = []

    async def make(servers: dict[str, Any], **env: str) -> tuple[PluginHost, ToolRegistry]:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        host = PluginHost(Config({"plugins": {"mcp": {"servers": servers}}}, env={}))
        builtins.add_to(host)
        record = host.add(harness_tool_mcp, dist="harness-tool-mcp")
        registries.append(host.tools)
        assert record.status == "loaded", record.describe()
        await host.tools.ready()  # what the agent awaits before its first model request
        return host, host.tools

    yield make
    for registry in registries:
        runtimes = {id(t.server.runtime): t.server.runtime for t in _mcp_tools(registry)}
        for runtime in runtimes.values():
            runtime.close()


def _mcp_tools(registry: ToolRegistry) -> list[McpTool]:
    return [t for n in registry.names() if isinstance(t := registry.get(n), McpTool)]


async def call(registry: ToolRegistry, name: str, arguments: str) -> Any:
    return await registry.execute(name, arguments, ExecContext())


async def test_tools_register_as_server__tool_non_strict_and_calls_work(load: Any) -> None:
    """Every tool is NAME__T with the server's schema, strict off; text, data and errors pass."""
    _, registry = await load({"tiny": server()})
    names = [n for n in registry.names() if n.startswith("tiny__")]
    assert names == sorted(
        f"tiny__{t}"
        for t in (
            "echo",
            "add",
            "weird_name",
            "fail",
            "crash",
            "environment",
            "pid",
            "slow",
            "starts",
            "grow",
            "shrink",
        )
    )
    sent = {s["function"]["name"]: s["function"] for s in registry.schemas()}
    assert sent["tiny__add"]["strict"] is False and sent["bash"]["strict"] is True
    assert sent["tiny__add"]["parameters"]["required"] == ["a", "b"]
    echo = await call(registry, "tiny__echo", '{"text": "hi"}')
    assert (echo.text, echo.is_error) == ("hi", False)
    added = await call(registry, "tiny__add", '{"a": 2, "b": 3}')
    assert added.data == {"total": 5}
    failed = await call(registry, "tiny__fail", "{}")
    assert failed.is_error and failed.text == "Error executing tool fail"


async def test_arguments_that_break_the_schema_are_an_error_before_the_call(load: Any) -> None:
    """A missing or mistyped argument is an error result naming it; the server is not called."""
    _, registry = await load({"tiny": server()})
    result = await call(registry, "tiny__add", '{"a": "two"}')
    assert result.is_error
    assert "'b' is a required property" in result.text
    assert "a: 'two' is not of type 'integer'" in result.text


async def test_a_server_sees_only_the_environment_it_is_given(load: Any) -> None:
    """A listed variable passes through; a model key in harness's environment does not."""
    servers = {"tiny": server(env=["TINY_SHARED"])}
    _, registry = await load(servers, TINY_SHARED="yes", OPENAI_API_KEY="sk-secret")
    shared = await call(registry, "tiny__environment", '{"name": "TINY_SHARED"}')
    secret = await call(registry, "tiny__environment", '{"name": "OPENAI_API_KEY"}')
    assert (shared.text, secret.text) == ("yes", "<unset>")


async def test_a_server_that_crashes_mid_call_is_an_error_then_restarts(
    load: Any, tmp_path: Path
) -> None:
    """The crashing call's result is an error; the next call starts the server again."""
    counter = tmp_path / "starts"
    _, registry = await load({"tiny": server(env=["TINY_COUNTER"])}, TINY_COUNTER=str(counter))
    crashed = await call(registry, "tiny__crash", "{}")
    assert crashed.is_error and "is not running" in crashed.text and "next call" in crashed.text
    again = await call(registry, "tiny__starts", "{}")
    assert (again.is_error, again.text) == (False, "2")


async def test_a_server_that_restarts_with_other_tools_has_them_registered(
    load: Any, tmp_path: Path
) -> None:
    """Back from a crash with one more tool, the server's new tool registers before the next
    model request (the registry's `ready`), as after notifications/tools/list_changed."""
    counter = tmp_path / "starts"
    servers = {"tiny": server("--grow-on-restart", env=["TINY_COUNTER"])}
    _, registry = await load(servers, TINY_COUNTER=str(counter))
    assert "tiny__extra" not in registry.names()
    await call(registry, "tiny__crash", "{}")
    assert (await call(registry, "tiny__starts", "{}")).text == "2"
    await registry.ready()
    assert (await call(registry, "tiny__extra", '{"text": "back"}')).text == "extra: back"


async def test_a_server_that_never_starts_is_reported_once_and_others_work(
    load: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The failure is one warning with the stderr tail; the good server's tools register."""
    _, registry = await load({"broken": server("--fail"), "tiny": server()})
    warnings = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1
    assert "failed to start: it exited before it was ready" in warnings[0]
    assert "cannot open the database" in warnings[0]
    assert not [n for n in registry.names() if n.startswith("broken__")]
    assert (await call(registry, "tiny__echo", '{"text": "ok"}')).text == "ok"


async def test_a_server_that_died_between_calls_is_started_by_the_next_call(load: Any) -> None:
    """Killed while idle, the server is started again and the next call succeeds."""
    _, registry = await load({"tiny": server()})
    first = await call(registry, "tiny__pid", "{}")
    os.kill(int(first.text), signal.SIGKILL)
    (tiny,) = {id(t.server): t.server for t in _mcp_tools(registry)}.values()
    deadline = anyio.current_time() + 20
    # Until the connection's reader has seen the end of the pipe: what the next call looks at
    # (the SDK's private flag, pinned by this very test: see _server._closed).
    while not _closed(tiny._session) and anyio.current_time() < deadline:  # noqa: ASYNC110
        await anyio.sleep(0.01)
    again = await call(registry, "tiny__pid", "{}")
    assert not again.is_error and again.text != first.text


async def test_a_call_past_its_timeout_is_an_error_and_the_server_keeps_running(
    load: Any,
) -> None:
    """`timeout` bounds each call; the next call is served by the same process."""
    # 3 s: the limit is each call's, the quick ones' too, on a machine that may be loaded.
    _, registry = await load({"tiny": server(timeout=3)})
    before = await call(registry, "tiny__pid", "{}")
    late = await call(registry, "tiny__slow", '{"seconds": 30}')
    assert late.is_error and late.text == "Error: tiny__slow timed out: no answer within 3 s"
    assert (await call(registry, "tiny__pid", "{}")).text == before.text


async def test_cancelling_a_call_cancels_it_on_the_server(load: Any, tmp_path: Path) -> None:
    """A cancelled call (a cancelled turn) sends MCP cancellation: the server's handler stops."""
    marker = tmp_path / "marker"
    _, registry = await load({"tiny": server(env=["TINY_MARKER"])}, TINY_MARKER=str(marker))
    with anyio.move_on_after(2):
        await call(registry, "tiny__slow", '{"seconds": 60}')
    deadline = anyio.current_time() + 20
    # Another process writes the file: there is no event to wait on, so poll it.
    while not marker.exists() and anyio.current_time() < deadline:  # noqa: ASYNC110
        await anyio.sleep(0.1)
    assert marker.read_text() == "cancelled"
