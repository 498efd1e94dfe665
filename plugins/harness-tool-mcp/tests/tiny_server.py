"""A small MCP server for the tests, on the SDK's MCPServer: stdio, or HTTP with `--http PORT`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("tiny", log_level="ERROR")


class Sum(BaseModel):
    total: int


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b)


@server.tool(name="weird.name")
def weird() -> str:
    """A tool whose name a model API would refuse."""
    return "weird"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@server.tool()
def crash() -> str:
    """Exits the server process mid-call."""
    os._exit(3)


@server.tool()
def environment(name: str) -> str:
    """The value of an environment variable, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps; a cancelled call writes "cancelled" to the file TINY_MARKER names."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        # Synchronous on purpose: a cancelled handler cannot await anything more.
        Path(os.environ["TINY_MARKER"]).write_text("cancelled")  # noqa: ASYNC240
        raise
    return "slept"


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def starts() -> int:
    """How many times this server has started (counted in TINY_COUNTER's file)."""
    return int(Path(os.environ["TINY_COUNTER"]).read_text())


class Blob(BaseModel):
    data: str


def big(megabytes: int) -> Blob:
    """Structured content of about `megabytes` MB (offered with `--big`)."""
    return Blob(data="x" * megabytes * 1_000_000)


def extra(text: str) -> str:
    """A tool that exists only between grow and shrink."""
    return f"extra: {text}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and sends notifications/tools/list_changed."""
    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
async def shrink(ctx: Context) -> str:
    """Removes the tool `extra` and sends notifications/tools/list_changed."""
    server.remove_tool("extra")
    await ctx.session.send_tool_list_changed()
    return "shrunk"


if __name__ == "__main__":
    counter = os.environ.get("TINY_COUNTER")
    if counter:
        path = Path(counter)
        path.write_text(str(int(path.read_text() or 0) + 1) if path.exists() else "1")
    if counter and "--grow-on-restart" in sys.argv and Path(counter).read_text() != "1":
        server.add_tool(extra)
    if "--big" in sys.argv:
        server.add_tool(big)
    if "--noisy" in sys.argv:  # what a server printing a banner on stdout does to its client
        print("tiny: starting up", flush=True)
    if "--fail" in sys.argv:
        print("tiny: cannot open the database: no such file", file=sys.stderr)
        sys.exit(2)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
