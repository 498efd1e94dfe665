"""`harness mcp [--json]`: start every configured server and list its state and tools."""

from __future__ import annotations

import json
import os
from argparse import ArgumentParser, Namespace
from typing import TYPE_CHECKING, Final

from harness_core.config import ConfigError
from harness_core.hosts import Command, CommandContext, CommandError

from ._naming import tool_name

if TYPE_CHECKING:  # the SDK and pydantic load only when the command runs: the CLI imports
    from ._server import Server  # this module for every command it parses (harness todos too)

__all__ = ["MCP"]

DESCRIPTION: Final = """\
Starts every server configured under [plugins.mcp.servers.NAME] and lists each with its state
(ready, or failed with the reason and the tail of its stderr) and the tool names it registers
(NAME__TOOL). --json prints {"servers": [{"name", "state", "error", "tools": [names]}]}."""


def _configure(parser: ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help='{"servers": [...]}')


def _run(args: Namespace, ctx: CommandContext) -> int:
    from ._config import McpConfig
    from ._start import start_servers

    try:
        config = ctx.config.plugin("mcp").parse(McpConfig)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    servers = start_servers(config, os.environ)
    rows = [_Row(server) for server in servers]
    if servers:
        servers[0].runtime.close()
    if args.json:
        export = {"servers": [row.__dict__ for row in rows]}
        ctx.stdout.write(json.dumps(export, indent=2, ensure_ascii=False) + "\n")
    elif not rows:
        print("no MCP servers configured ([plugins.mcp.servers.NAME])", file=ctx.stdout)
    for row in [] if args.json else rows:
        print(f"{row.name}: {row.state} · {', '.join(row.tools) or 'no tools'}", file=ctx.stdout)
        if row.error:
            print("  " + row.error.replace("\n", "\n  "), file=ctx.stdout)
    return 0 if all(row.state == "ready" for row in rows) else 1


class _Row:
    """One server as `harness mcp` reports it (the attributes are the JSON keys)."""

    def __init__(self, server: Server) -> None:
        ready = server.state == "ready"
        self.name = server.name
        self.state = "ready" if ready else "failed"
        self.error = None if ready else f"{server.error}{server.stderr_note()}"
        self.tools = [tool_name(server.name, t.name) for t in server.tools] if ready else []


MCP: Final = Command(
    name="mcp",
    help="the configured MCP servers, their state and tools (from harness-tool-mcp)",
    description=DESCRIPTION,
    configure=_configure,
    run=_run,
)
