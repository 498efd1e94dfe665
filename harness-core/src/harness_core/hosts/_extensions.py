"""Host extension points: what a plugin contributes to hosts through the host-side hooks.

A host renders projections of the log and offers slots; it holds no knowledge a plugin owns.
These are the shapes of what fills the slots (see docs/hook-catalog.md for the hooks):

- `Command`: a `harness` subcommand (`harness_cli_commands`), in `_command.py`: a plugin's
  command loads that alone, not the shapes below;
- `TerminalStrip`: lines pinned under a terminal's output, folded from a session's events
  (`harness_terminal_strip`);
- `SnapshotFields`: fields a host ships with a conversation snapshot, such as the web tail
  page's `todos` (`harness_snapshot_fields`);
- `DockEntry`: a JS module a web page mounts in one of its slots (`harness_web_dock`);
- `SessionMcp`: runs the MCP servers a client hands a session, `McpServerSpec` each
  (`harness_session_mcp`).

Folds see the events of one session in seq order, exactly once each; they hold state derived
from the log only, so every host and every replay shows the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from ..log import Event
    from ..tools import ToolRegistry

__all__ = [
    "DockEntry",
    "McpServerSpec",
    "SessionFold",
    "SessionMcp",
    "SnapshotFields",
    "StripLine",
    "Styled",
    "TerminalStrip",
]

_SLOT: Final = re.compile(r"[a-z][a-z0-9_.-]{0,63}")


@dataclass(frozen=True, slots=True)
class Styled:
    """A run of text and its style (a rich style string; plain output ignores it)."""

    text: str
    style: str = ""


StripLine = tuple[Styled, ...]


class SessionFold(Protocol):
    """State folded from one session's events, one event at a time."""

    def apply(self, event: Event) -> bool:
        """Fold `event`; True when what this fold shows changed."""
        ...


class TerminalStrip(SessionFold, Protocol):
    """A strip pinned under a terminal host's output (the todo plugin's plan strip)."""

    def lines(self) -> Sequence[StripLine]:
        """What to pin now; empty to pin nothing. Hosts sanitize the text."""
        ...


class SnapshotFields(SessionFold, Protocol):
    """Fields a host ships with its conversation snapshot (the web tail page's `todos`)."""

    def fields(self) -> dict[str, Any]:
        """The fields as JSON values; computed from the whole log, not from a page of it."""
        ...


@dataclass(frozen=True, slots=True)
class DockEntry:
    """A JS module a web page mounts in `slot` (e.g. `conversation.input.dock`), by `order`.

    `module` is a path inside the importable `package` (`static/todo-dock.js`); the web
    host serves it from the installed package, so it works offline and needs no build step.
    """

    slot: str
    order: int
    package: str
    module: str

    def __post_init__(self) -> None:
        if not _SLOT.fullmatch(self.slot):
            raise ValueError(f"dock slot {self.slot!r} is not a slot name")
        if not self.module.endswith(".js") or ".." in Path(self.module).parts:
            raise ValueError(f"dock module {self.module!r} must be a .js path inside the package")

    def resource(self) -> Traversable:
        """The module's file in the installed package; raises FileNotFoundError if absent."""
        from importlib import resources  # the web host only: it costs a query command 5 ms

        found = resources.files(self.package).joinpath(self.module)
        if not found.is_file():
            raise FileNotFoundError(f"{self.package} has no {self.module}")
        return found


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One MCP server a client hands a session (an entry of ACP's `mcpServers`).

    A stdio server has `command`, `args` and `env` (the variables it is given, as name and
    value); a Streamable HTTP server has `url` and `headers`.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


class TurnQueue(Protocol):
    """Where `harness serve --queue` sends a session's turns instead of running them: a
    plugin's durable queue, whose workers run them (harness-worker). The web host follows
    the turns' events through the store, as it follows any other process's."""

    def submit(self, session_id: str, prompt: str, spec: str | None) -> dict[str, int]:
        """Queue `prompt` as the session's next turn on the model `spec` (None: the
        worker's default): `{"turn": n}` when nothing runs or waits before it, else
        `{"queued": position}` among the turns waiting."""
        ...

    def state(self, session_id: str) -> tuple[bool, list[str]]:
        """Whether a turn of the session runs, and the prompts waiting behind it, in order."""
        ...

    def unqueue(self, session_id: str, position: int, prompt: str) -> bool:
        """Drop the prompt `state` lists at `position` (1-based) if it is still `prompt`
        there; False when the queue changed meanwhile (it started, or moved)."""
        ...

    def cancel(self, session_id: str) -> bool:
        """Cancel the session's running turn, wherever it runs; False when none runs."""
        ...

    def close(self) -> None:
        """Let go of the queue's connections (the server stops)."""
        ...


@dataclass(frozen=True, slots=True)
class SessionMcp:
    """A plugin's offer to run the MCP servers a client hands a session.

    `attach(servers, tools, cwd)` registers the servers' tools on `tools`, that session's own
    registry (stdio servers start in `cwd` when the session first needs them), and returns
    what stops them when the session ends. `http` says whether Streamable HTTP servers work.
    """

    attach: Callable[[Sequence[McpServerSpec], ToolRegistry, str], Callable[[], None]]
    http: bool = False
