"""The README's measured numbers and quoted texts match the code, in both languages."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from harness_core.tools import strict_schema
from harness_tool_todo import DESCRIPTION, TodoWriteArgs
from harness_tool_todo._tool import PARALLEL_ACTIVE

README = Path(__file__).resolve().parents[1] / "README.md"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "todo_tokens.py"


FENCED = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def halves() -> tuple[str, str]:
    """The README's English half and its 中文 half."""
    english, chinese = README.read_text(encoding="utf-8").split("\n## 中文\n", 1)
    return english.split("\n## English\n", 1)[1], chinese


def blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block of `text` as (language, body), in order."""
    return FENCED.findall(text)


def test_both_halves_carry_the_same_example_blocks() -> None:
    """The 中文 half shows every example block the English half shows, the same and in order."""
    english, chinese = halves()
    assert len(blocks(english)) >= 10
    assert blocks(chinese) == blocks(english)


def test_readme_shows_the_schema_and_description_the_model_is_sent() -> None:
    """The quoted schema parses to the strict `parameters`; the quoted descriptions are verbatim."""
    for half in halves():
        shown = {want: [b for lang, b in blocks(half) if lang == want] for want in ("json", "text")}
        assert strict_schema(TodoWriteArgs) in [json.loads(b) for b in shown["json"]]
        assert DESCRIPTION + "\n" in shown["text"]
        assert PARALLEL_ACTIVE + "\n" in shown["text"]  # the line that replaces ONE_ACTIVE


@pytest.fixture(scope="module")
def todo_tokens() -> ModuleType:
    """scripts/todo_tokens.py, the measurement the README's cost tables show."""
    spec = importlib.util.spec_from_file_location("todo_tokens", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_readme_cost_tables_are_the_measured_ones(todo_tokens: ModuleType) -> None:
    """Characters and DeepSeek-V4 tokens in both languages' tables are today's measurement."""
    assert todo_tokens.stale_tables(README.read_text(encoding="utf-8")) == []


def test_the_measurement_counts_real_tokens(todo_tokens: ModuleType) -> None:
    """The tokenizer is a real one: known text splits into its known DeepSeek-V4 token ids."""
    ids = todo_tokens.tokenizer().encode("Hello! 毕老师！1 + 1 = 2", add_special_tokens=False).ids
    assert ids == [19923, 3, 223, 5464, 5008, 1175, 19, 940, 223, 19, 438, 223, 20]
    (described,) = [r for r in todo_tokens.tables()["fixed"] if r.en == "The description"]
    assert described.text == DESCRIPTION
    assert 0 < todo_tokens.count_tokens(DESCRIPTION) < len(DESCRIPTION) / 3


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
