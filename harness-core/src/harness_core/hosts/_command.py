"""A plugin's `harness` subcommand (`harness_cli_commands`): the declaration, what the command
is handed, and its one-line failure.

Apart from the other host extension shapes (`_extensions.py`): every plugin command loads
this module before it runs, and building those shapes' classes cost each one a few ms.
"""

from __future__ import annotations

import re
from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TextIO

if TYPE_CHECKING:
    from ..config import Config
    from ..log import Event, Store

__all__ = ["Command", "CommandContext", "CommandError"]

_COMMAND_NAME: Final = re.compile(r"[a-z][a-z0-9-]{0,31}")


class CommandError(Exception):
    """An expected failure of a command: one line on stderr, exit status `status`."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class CommandContext(Protocol):
    """What a plugin's command gets from the CLI host besides its parsed arguments."""

    @property
    def config(self) -> Config:
        """The configuration (config.toml): a plugin reads its own table with
        `config.plugin(NAME)`."""
        ...

    @property
    def stdout(self) -> TextIO:
        """Where the command's output goes (machine-readable output: this stream only)."""
        ...

    @property
    def store(self) -> Store:
        """Where the sessions are (the configured store): `store.latest(id, types)` answers
        "the newest event of these types" on every store, without a replay."""
        ...

    def read_events(self, session_id: str) -> Sequence[Event]:
        """The session's events, replayed by a reader (no writer lock)."""
        ...


@dataclass(frozen=True, slots=True)
class Command:
    """`harness NAME ...`: `configure` adds arguments, `run` returns the exit status.

    `run` may raise CommandError for an expected failure. Import what the command needs
    inside `run`: `harness --help` and the other commands do not pay for it.
    """

    name: str
    help: str
    run: Callable[[Namespace, CommandContext], int]
    configure: Callable[[ArgumentParser], None] | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if not _COMMAND_NAME.fullmatch(self.name):
            raise ValueError(
                f"command name {self.name!r} must be lower-case letters, digits and dashes"
            )
