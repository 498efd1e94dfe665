"""What every host shares: the conversation projection, the sanitizer, the extension points.

The terminal, the web host and the ACP bridge read the same projections of the log, so a
fix to a projection fixes every host. Plugins extend hosts through the host-side hooks with
the shapes defined here.
"""

from ._conversation import (
    Change,
    ChangeKind,
    Conversation,
    Entry,
    RowState,
    ToolRow,
    TurnState,
    compaction_line,
)
from ._extensions import (
    Command,
    CommandContext,
    CommandError,
    DockEntry,
    SessionFold,
    SnapshotFields,
    StripLine,
    Styled,
    TerminalStrip,
)
from ._sanitize import LABEL_WIDTH, clean, one_line
from ._snapshot import SessionSnapshot

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
    "RowState",
    "SessionFold",
    "SessionSnapshot",
    "SnapshotFields",
    "StripLine",
    "Styled",
    "TerminalStrip",
    "ToolRow",
    "TurnState",
    "clean",
    "compaction_line",
    "one_line",
]
