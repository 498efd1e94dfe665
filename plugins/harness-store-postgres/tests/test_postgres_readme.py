"""The README's two halves show the same commands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def test_both_languages_show_the_same_example_blocks() -> None:
    english, chinese = README.read_text(encoding="utf-8").split("\n## 中文\n", 1)
    assert BLOCK.findall(english) == BLOCK.findall(chinese)
    assert "harness store init" in BLOCK.findall(english)[0][1]
