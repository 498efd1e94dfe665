"""Commands that plugins add (`harness_cli_commands`): parsed and run like the core ones.

They load only when the command word is not a core command, so `harness --help` and the core
commands never ask a plugin for anything. A command whose plugin is installed but disabled or
rejected is explained in one line, when the distribution declares its commands in its
metadata (entry-point group `harness.commands`, `NAME = "<plugin name>"`).
"""

from __future__ import annotations

import logging

from .._entry_points import entry_points
from ..hosts import Command
from ._app import App, CliError, guarded, install_log_handler, use_store_flag
from ._parser import COMMANDS_GROUP, CORE_COMMANDS, build_parser, store_flag

__all__ = ["COMMANDS_GROUP", "plugin_commands", "run_plugin_command"]


logger = logging.getLogger("harness.cli")


def run_plugin_command(argv: list[str], word: str) -> int:
    """`harness WORD ...` where WORD is not a core command."""
    install_log_handler(quiet_plugins=False)
    return guarded(lambda: _run(argv, word))


def _run(argv: list[str], word: str) -> int:
    use_store_flag(store_flag(argv))
    app = App()
    commands = plugin_commands(app)
    if word not in commands:
        _explain_missing(app, word)
    if word in commands:  # the grammar of that command alone, parsed as part of the whole
        parser = build_parser([commands[word]], only=word)
    else:  # a word nobody adds: argparse's usage error lists every command there is
        parser = build_parser(list(commands.values()))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help and usage errors end inside argparse
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    return commands[args.command].run(args, app)


def plugin_commands(app: App) -> dict[str, Command]:
    """Every command the loaded plugins add, by name; collisions are reported and skipped."""
    found: dict[str, Command] = {}
    owners: dict[str, str] = {}
    for plugin, command in app.host.hooks.cli_commands():
        if command.name in CORE_COMMANDS:
            logger.warning(
                "plugin %r adds command %r, a core command; skipped", plugin, command.name
            )
        elif command.name in found:
            logger.warning(
                "plugin %r adds command %r, which plugin %r already adds; skipped",
                plugin,
                command.name,
                owners[command.name],
            )
        else:
            found[command.name], owners[command.name] = command, plugin
    return found


def _explain_missing(app: App, word: str) -> None:
    """Raise a one-line error when an installed plugin that is not loaded declares `word`."""
    for entry_point in entry_points(COMMANDS_GROUP):
        if entry_point.name != word:
            continue
        record = app.host.records.get(entry_point.value)
        dist = entry_point.dist
        if record is None or record.status == "loaded":
            continue
        raise CliError(
            f"`harness {word}` comes from {dist} (plugin {record.name}), which is "
            f"{record.status}: {record.reason}"
        )
