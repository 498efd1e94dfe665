"""The one sanitizer every host renders model-controlled text through.

Model text, tool output, task names and anything else a model or a repository controls can
carry terminal escapes (ESC, CSI, OSC), NUL and other control characters. Printed raw, they
move the cursor, recolour or retitle the user's terminal, or hide text. Hosts print such text
only through `clean` or `one_line`; machine-readable output (`--json`) stays verbatim.

Where a person decides whether a call runs (the approval question on the terminal, the ACP
permission request) removing is not enough: the text must read as what will run. `visible`
shows every character that is invisible or reorders the characters around it (bidi overrides
such as U+202E, zero-width and other format characters, controls) as an escape, so
`echo safe #<U+202E>; rm -rf x` cannot be drawn as a harmless command.

Standard library only: the query commands import this and must start fast.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["LABEL_WIDTH", "clean", "one_line", "visible"]

# Escape sequences (CSI, OSC, two-byte) and the C0/C1 controls other than tab and newline.
_CONTROL: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-_]"  # the other two-byte escapes
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # bare controls (tab and newline survive)
)
LABEL_WIDTH: Final = 120
# Letters drawn as nothing: the Hangul fillers and the blank braille pattern. Every other
# invisible character is one `str.isprintable` rejects (Unicode's Other and Separator
# categories: format characters such as bidi controls, zero-width spaces and tag characters,
# controls, unassigned and private-use code points, line separators, spaces other than ' ').
_BLANK_LETTERS: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def clean(text: str) -> str:
    """`text` without control codes (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


def one_line(text: str, width: int = LABEL_WIDTH) -> str:
    """`text` cleaned and folded onto one line of at most `width` characters."""
    # Whatever `clean` removes starts with a control character, which is not printable: a
    # printable text (most titles and labels) skips the regex (`harness sessions` folds 1,000).
    line = " ".join((text if text.isprintable() else clean(text)).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def visible(text: str) -> str:
    """`text` with every character a reader cannot see, or that reorders what they see, as an
    escape (`\\u202e`, `\\U000e0041`); newlines and tabs stay.

    Only a text that has such a character changes, and then every backslash of it is doubled
    too, so an escape the text spells out itself (`\\u202e` typed as six characters) reads
    `\\\\u202e` and cannot pass for a hidden character.
    """
    # Tabs and newlines aside, a printable text hides nothing but a blank letter (the common
    # case, checked without a Python loop over the characters).
    if _BLANK_LETTERS.isdisjoint(text) and text.replace("\n", " ").replace("\t", " ").isprintable():
        return text
    return "".join(_escape(char) if _hidden(char) else char.replace("\\", "\\\\") for char in text)


def _hidden(char: str) -> bool:
    return (not char.isprintable() and char not in "\n\t") or char in _BLANK_LETTERS


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
