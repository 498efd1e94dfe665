"""Harness overhead per MCP call over stdio, beside the same server called from the SDK directly.

    uv run python scripts/bench/mcp.py            # 300 calls, 5 rounds
    uv run python scripts/bench/mcp.py --quick    # 100 calls, 2 rounds

Both sides talk to the same test server (plugins/harness-tool-mcp/tests/tiny_server.py, on the
SDK's MCPServer) and call its `echo` tool in sequence. Direct: a `ClientSession` over
`stdio_client`, `call_tool` awaited in a loop. Harness: the plugin loaded into a real plugin
host, each call through `ToolRegistry.execute` as the agent loop makes it (JSON arguments
parsed, checked with jsonschema, the call carried to the plugin's connection thread and back,
the result converted). Startup is outside the timing on both sides; rounds run interleaved
because the machine is shared, and each side's per-call time is its median over the rounds.
Goal: harness within 1.3x of the SDK.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Final, TextIO

# This file is named mcp.py and Python puts its folder first on sys.path: take it off, so
# `import mcp` finds the SDK rather than this script.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import anyio  # noqa: E402
import harness_tool_mcp  # noqa: E402
from harness_core.config import Config  # noqa: E402
from harness_core.plugins import PluginHost  # noqa: E402
from harness_core.tools import ExecContext, ToolRegistry  # noqa: E402
from harness_tool_mcp._tool import McpTool  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ROOT: Final = Path(__file__).resolve().parents[2]
TINY: Final = str(ROOT / "plugins" / "harness-tool-mcp" / "tests" / "tiny_server.py")
GOAL: Final = 1.3


async def direct(calls: int, errlog: TextIO) -> float:
    """Seconds per call_tool from the SDK, connection already open."""
    parameters = StdioServerParameters(command=sys.executable, args=[TINY])
    async with (
        stdio_client(parameters, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        await session.call_tool("echo", {"text": "warm"})
        started = time.perf_counter()
        for _ in range(calls):
            await session.call_tool("echo", {"text": "x"})
        return (time.perf_counter() - started) / calls


def harness_registry() -> ToolRegistry:
    config = {
        "plugins": {"mcp": {"servers": {"tiny": {"command": sys.executable, "args": [TINY]}}}}
    }
    host = PluginHost(Config(config, env={}))
    record = host.add(harness_tool_mcp, dist="harness-tool-mcp")
    assert record.status == "loaded", record.describe()
    return host.tools


async def through_harness(registry: ToolRegistry, calls: int) -> float:
    """Seconds per call through the registry, as the agent loop makes it."""
    await registry.ready()  # the server starts before the first request, as in a session
    await registry.execute("tiny__echo", '{"text": "warm"}', ExecContext())
    started = time.perf_counter()
    for _ in range(calls):
        result = await registry.execute("tiny__echo", '{"text": "x"}', ExecContext())
        assert not result.is_error, result.text
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls, rounds = (100, 2) if args.quick else (300, 5)
    registry = harness_registry()
    sdk: list[float] = []
    ours: list[float] = []
    with open(os.devnull, "w") as errlog:  # the plugin keeps its servers' stderr too
        for _ in range(rounds):
            sdk.append(anyio.run(direct, calls, errlog))
            ours.append(anyio.run(through_harness, registry, calls))
    a, b = statistics.median(sdk), statistics.median(ours)
    print(f"{calls} echo calls x {rounds} rounds, median per call")
    print(f"  SDK directly:     {a * 1e3:7.3f} ms")
    print(f"  through harness:  {b * 1e3:7.3f} ms  ({b / a:.2f}x, goal <= {GOAL}x)")
    for tool in {
        id(t.server.runtime): t
        for n in registry.names()
        if isinstance(t := registry.get(n), McpTool)
    }.values():
        tool.server.runtime.close()


if __name__ == "__main__":
    main()
