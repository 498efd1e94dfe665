"""The `harness` command line (README "Commands"): parse here, run the command module lazily.

`harness --help` and `--version` stay fast: this module and `_parser` import only argparse,
never pydantic, pluggy, rich, the openai SDK or a plugin (tests/test_cli_startup.py checks).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `harness` command and return its exit status."""
    from ._parser import CORE_COMMANDS, build_parser, command_word, declared_commands

    argv = list(sys.argv[1:] if argv is None else argv)
    word = command_word(argv)
    if word is not None and word not in CORE_COMMANDS:
        from ._commands import run_plugin_command  # loads the plugins: only now

        return run_plugin_command(argv, word)
    # Help (or no command at all) lists what plugins declare, without importing them; the
    # metadata scan costs more than the rest of `--version`, which has no use for it.
    listing = word is None and "--version" not in argv
    parser = build_parser(declared=declared_commands() if listing else (), only=word)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors end inside argparse
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from ._app import dispatch

    return dispatch(args)
