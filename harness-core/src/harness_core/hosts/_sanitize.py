"""The one sanitizer every host renders model-controlled text through.

Model text, tool output, task names and anything else a model or a repository controls can
carry terminal escapes (ESC, CSI, OSC), NUL and other control characters. Printed raw, they
move the cursor, recolour or retitle the user's terminal, or hide text. Hosts print such text
only through `clean` or `one_line`; machine-readable output (`--json`) stays verbatim.

Standard library only: the query commands import this and must start fast.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["LABEL_WIDTH", "clean", "one_line"]

# Escape sequences (CSI, OSC, two-byte) and the C0/C1 controls other than tab and newline.
_CONTROL: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-_]"  # the other two-byte escapes
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # bare controls (tab and newline survive)
)
LABEL_WIDTH: Final = 120


def clean(text: str) -> str:
    """`text` without control codes (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


def one_line(text: str, width: int = LABEL_WIDTH) -> str:
    """`text` cleaned and folded onto one line of at most `width` characters."""
    # Whatever `clean` removes starts with a control character, which is not printable: a
    # printable text (most titles and labels) skips the regex (`harness sessions` folds 1,000).
    line = " ".join((text if text.isprintable() else clean(text)).split())
    return line if len(line) <= width else line[: width - 1] + "…"
