"""The README's two halves show the same examples, and the configuration example is valid."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness_tool_mcp._config import McpConfig

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def halves() -> tuple[str, str]:
    english, chinese = README.read_text(encoding="utf-8").split("\n## 中文\n", 1)
    return english, chinese


def test_both_languages_show_the_same_example_blocks() -> None:
    """Every code block of the English half appears, in order, in the 中文 half."""
    english, chinese = halves()
    assert BLOCK.findall(english) == BLOCK.findall(chinese)
    assert len(BLOCK.findall(english)) >= 4


def test_the_configuration_example_is_accepted() -> None:
    """The README's TOML parses into the plugin's config model, one stdio and one url server."""
    toml = next(body for kind, body in BLOCK.findall(halves()[0]) if kind == "toml")
    config = McpConfig.model_validate(tomllib.loads(toml)["plugins"]["mcp"])
    assert config.servers["files"].command == "npx" and config.servers["files"].env == ["HOME"]
    assert config.servers["remote"].url == "http://127.0.0.1:9000/mcp"
