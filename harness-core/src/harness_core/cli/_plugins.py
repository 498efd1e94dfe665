"""`harness plugins`: every discovered plugin, loaded, disabled or rejected, and why.

It loads plugins exactly as every other command does, so what it reports is what `run` gets;
a plugin that fails to import is reported here, never fatal (unless HARNESS_STRICT_PLUGINS=1).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from argparse import Namespace
from collections.abc import Mapping
from typing import Final

import anyio

from ..hosts import one_line
from ..plugins import PluginRecord
from ._app import App

__all__ = ["plugins", "sandbox_check"]


def plugins(args: Namespace) -> int:
    app = App()
    records = app.host.finish_loading()  # every phase, so a failing tool registration shows
    # and the tools a plugin registers only before a session's first model request (an MCP
    # plugin starts its servers then): this command lists every tool a session would get.
    anyio.run(app.host.tools.ready)
    commands: dict[str, list[str]] = {}
    for plugin, command in app.host.hooks.cli_commands():
        commands.setdefault(plugin, []).append(command.name)
    effects = {
        name: tool.effect for name in app.host.tools.names() if (tool := app.host.tools.get(name))
    }
    if args.json:
        payload = [
            {
                **dataclasses.asdict(record),
                "commands": commands.get(record.name, []),
                "effects": {name: effects[name] for name in record.tools if name in effects},
            }
            for record in records
        ]
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    for record in records:
        print("\n".join(_describe(record, commands.get(record.name, []), effects)))
    return 0


# How the text output marks a tool that approval never asks about (docs/security.md).
_QUIET_EFFECTS: Final = {"log_only": "log only", "read_only": "read only"}


def _describe(record: PluginRecord, commands: list[str], effects: Mapping[str, str]) -> list[str]:
    dist = f"{record.dist} {record.version}".strip()
    head = f"{record.name} ({dist}, entry point {record.entry_point}): {record.status}"
    if record.status == "loaded":
        lines = [f"{head} in {record.load_ms:.1f} ms"]
        tools = [_tool_label(name, effects.get(name)) for name in record.tools]
        lines.append(f"  tools: {', '.join(tools) or '(none)'}")
        lines.append(f"  hooks: {', '.join(record.hooks) or '(none)'}")
        if commands:
            lines.append(f"  commands: {', '.join(commands)}")
        return lines
    lines = [head, f"  reason: {one_line(record.reason or '', width=2000)}"]
    if record.fix:
        lines.append(f"  fix: {one_line(record.fix, width=2000)}")
    return lines


def sandbox_check(args: Namespace) -> int:
    """One line: whether `--sandbox workspace` works here, and why not; then one line for
    each of the sandbox's caps, with whether it holds here."""
    from ..tools import sandbox

    app = App()
    why = sandbox.probe(app.settings.sandbox_network)
    if why is not None:
        print(f"sandbox: unavailable: {why}")
        return 1
    network = "with network" if app.settings.sandbox_network else "no network"
    print(f"sandbox: workspace works here (bubblewrap; {network})")
    for line in sandbox.describe_limits(app.sandbox_limits()):
        print(f"  {line}")
    return 0


def _tool_label(name: str, effect: str | None) -> str:
    quiet = _QUIET_EFFECTS.get(effect or "")
    return f"{name} ({quiet})" if quiet else name
