"""The README's measured numbers and quoted texts match the code, in both languages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from harness_core.plugins import PluginHost
from harness_core.tools import strict_schema
from harness_tool_todo import DESCRIPTION, TodoWriteArgs

README = Path(__file__).resolve().parents[1] / "README.md"


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def measured(todo_host: PluginHost) -> dict[str, int]:
    (entry,) = [s for s in todo_host.tools.schemas() if s["function"]["name"] == "todo_write"]
    return {
        "description": len(DESCRIPTION),
        "schema": len(compact(strict_schema(TodoWriteArgs))),
        "entry": len(compact(entry)),
    }


ROWS = {
    "description": ["The tool description", "工具描述"],
    "schema": [
        "The argument schema (`parameters`, compact JSON)",
        "参数 schema（`parameters`，紧凑 JSON）",
    ],
    "entry": [
        "The whole tool entry sent with each request (compact JSON)",
        "每次请求附带的完整工具条目（紧凑 JSON）",
    ],
}


@pytest.mark.parametrize("what", sorted(ROWS))
def test_readme_character_counts_match_the_code(todo_host: PluginHost, what: str) -> None:
    """Each table row in English and 中文 states the character count the code has today."""
    text = README.read_text(encoding="utf-8")
    actual = measured(todo_host)[what]
    for label in ROWS[what]:
        match = re.search(rf"^\| {re.escape(label)} \| ([\d,]+) \|$", text, re.MULTILINE)
        assert match is not None, f"README has no row {label!r}"
        assert int(match[1].replace(",", "")) == actual, f"{label}: README says {match[1]}"


def test_description_bound_is_stated_and_kept() -> None:
    """The README's stated bound holds for the description."""
    text = README.read_text(encoding="utf-8")
    assert "1,500 characters" in text and "上限 1,500 个字符" in text
    assert len(DESCRIPTION) <= 1500


def test_readme_quotes_the_contract_texts() -> None:
    """The contract texts the README quotes are the ones the tool answers with."""
    text = README.read_text(encoding="utf-8")
    for quoted in (
        "Updated todo list: 2 pending, 1 in progress, 1 completed.",
        "Error: invalid todo: `content` must be a non-empty string",
        'Error: invalid todos: duplicate content "Run tests"',
        "Error: invalid todos: at most one task may be in_progress, got 2",
        "Error: todo_write requires an owning agent session",
    ):
        assert text.count(quoted) >= 2, quoted  # once in English, once in 中文
