"""`harness --help` and `--version` stay fast: they import no plugin and no heavy library."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from harness_core import __version__
from test_cli_support import child_env, run_cli

# Libraries a bare `--help` has no use for; each costs tens of milliseconds to import.
HEAVY = ("pydantic", "pluggy", "rich", "openai", "httpx", "anyio", "orjson", "harness_tool_todo")


def imported_after(*argv: str) -> list[str]:
    """Top-level packages in sys.modules after `main(argv)` ran in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from harness_core.cli import main\n"
        f"status = main({list(argv)!r})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), check=True
    )
    loaded: list[str] = json.loads(result.stderr.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_nothing_heavy(flag: str) -> None:
    """--help and --version load no plugin, no pydantic, pluggy, rich or openai."""
    loaded = imported_after(flag)
    assert "harness_core" in loaded
    assert [name for name in HEAVY if name in loaded] == []


def test_version_prints_the_package_version() -> None:
    """`harness --version` prints the harness version and exits 0."""
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"harness {__version__}"


def test_help_lists_every_contract_command() -> None:
    """`harness --help` names each command of ARCHITECTURE §9, plus chat."""
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("run", "demo", "sessions", "show", "todos", "events", "plugins", "chat"):
        assert f"    {command} " in result.stdout


def test_no_command_prints_usage_and_fails() -> None:
    """`harness` alone shows the usage on stderr with exit status 2."""
    result = run_cli()
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: harness" in result.stderr


def test_an_unknown_command_is_a_usage_error() -> None:
    """A mistyped command is rejected by the parser with exit status 2."""
    result = run_cli("shwo", "x")
    assert result.returncode == 2
    assert "invalid choice: 'shwo'" in result.stderr
