"""What every host shares: the conversation projection, the sanitizer, the extension points.

The terminal, the web host and the ACP bridge read the same projections of the log, so a
fix to a projection fixes every host. Plugins extend hosts through the host-side hooks with
the shapes defined here.

Names are imported on first use (PEP 562): a query command that needs `one_line` or
`Command` does not pay for the conversation fold or the web dock's package resources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # the names __getattr__ serves, spelled out for type checkers
    from ..sanitize import LABEL_WIDTH, clean, one_line, visible
    from ._command import Command, CommandContext, CommandError
    from ._conversation import (
        Change,
        ChangeKind,
        Conversation,
        Entry,
        RowState,
        ToolRow,
        TurnState,
        approval_note,
        compaction_line,
    )
    from ._extensions import (
        DockEntry,
        McpServerSpec,
        SessionFold,
        SessionMcp,
        SnapshotFields,
        StripLine,
        Styled,
        TerminalStrip,
        TurnQueue,
    )
    from ._snapshot import SessionSnapshot

_SANITIZE = "harness_core.sanitize"  # a layer down: the models use it too
_EXPORTS = {
    "LABEL_WIDTH": _SANITIZE,
    "clean": _SANITIZE,
    "one_line": _SANITIZE,
    "visible": _SANITIZE,
    "Change": "_conversation",
    "ChangeKind": "_conversation",
    "Command": "_command",
    "CommandContext": "_command",
    "CommandError": "_command",
    "Conversation": "_conversation",
    "DockEntry": "_extensions",
    "Entry": "_conversation",
    "McpServerSpec": "_extensions",
    "RowState": "_conversation",
    "SessionFold": "_extensions",
    "SessionMcp": "_extensions",
    "SessionSnapshot": "_snapshot",
    "SnapshotFields": "_extensions",
    "StripLine": "_extensions",
    "Styled": "_extensions",
    "TerminalStrip": "_extensions",
    "TurnQueue": "_extensions",
    "ToolRow": "_conversation",
    "TurnState": "_conversation",
    "approval_note": "_conversation",
    "compaction_line": "_conversation",
}

__all__ = [
    "LABEL_WIDTH",
    "Change",
    "ChangeKind",
    "Command",
    "CommandContext",
    "CommandError",
    "Conversation",
    "DockEntry",
    "Entry",
    "McpServerSpec",
    "RowState",
    "SessionFold",
    "SessionMcp",
    "SessionSnapshot",
    "SnapshotFields",
    "StripLine",
    "Styled",
    "TerminalStrip",
    "ToolRow",
    "TurnQueue",
    "TurnState",
    "approval_note",
    "clean",
    "compaction_line",
    "one_line",
    "visible",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
