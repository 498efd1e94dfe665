"""`harness --help` and `--version` stay fast: they import no plugin and no heavy library; the
query commands (`sessions`, `show --json`, `events`, `todos`) import no pydantic, tools or models."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness_core import __version__
from test_cli_support import REPO, child_env, run_cli, session_ids, todo_call, write_script

# Libraries a bare `--help` has no use for; each costs tens of milliseconds to import, and
# dataclasses (it loads inspect) several: once a tenth of `--help`.
HEAVY = (
    "pydantic",
    "pluggy",
    "rich",
    "openai",
    "httpx",
    "anyio",
    "orjson",
    "harness_tool_todo",
    "dataclasses",
)


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


# What reading a session has no use for: validation stays on the write path (pydantic), and
# tools, models and the live display load only for the commands that run or render turns.
NOT_FOR_QUERIES = ("pydantic", "rich", "openai", "httpx", "anyio")


@pytest.fixture(scope="module")
def planned_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A home with one session that wrote a plan, and the session's id."""
    home = tmp_path_factory.mktemp("queries") / "harness-home"
    script = write_script(
        home.parent / "s.json",
        [{"tool_calls": [todo_call(("Read", "pending"))]}, {"text": "Done."}],
    )
    result = run_cli("run", "--model", script, "plan", env={"HARNESS_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    return home, session_ids(home)[-1]


@pytest.mark.parametrize(
    "command",
    [
        ["sessions"],
        ["show", "ID", "--json"],
        ["events", "ID"],
        ["todos", "ID"],
        ["todos", "ID", "--json"],
    ],
)
def test_query_commands_import_no_validation_tools_or_models(
    command: list[str], planned_session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading trusts what this version wrote: no pydantic, no openai, anyio or rich."""
    home, session_id = planned_session
    monkeypatch.setenv("HARNESS_HOME", str(home))
    loaded = imported_after(*[session_id if arg == "ID" else arg for arg in command])
    # The plugin is registered (todos is its command), but not for `sessions`: nothing a plugin
    # does changes the listing.
    assert ("harness_tool_todo" in loaded) is (command != ["sessions"])
    assert [name for name in NOT_FOR_QUERIES if name in loaded] == []


def test_sessions_loads_neither_the_envelope_codec_nor_openssl(
    planned_session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing reads summaries, no envelopes: orjson (which loads uuid and platform) and
    hashlib (OpenSSL) would cost it milliseconds it has no use for."""
    monkeypatch.setenv("HARNESS_HOME", str(planned_session[0]))
    loaded = imported_after("sessions")
    assert "orjson" not in loaded and "hashlib" not in loaded


def test_version_prints_the_package_version() -> None:
    """`harness --version` prints the harness version and exits 0."""
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"harness {__version__}"


OPTION = r"--[a-z][a-z-]*"


def readme_commands() -> dict[str, list[str]]:
    """Each command of the README's Commands table, with the options its row shows."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `harness ([a-z][a-z-]*)([^`]*)` \|", text, re.MULTILINE)
    return {command: sorted(set(re.findall(OPTION, rest))) for command, rest in rows}


def test_help_lists_the_commands_of_the_readme_table() -> None:
    """`harness --help` names each command the README's Commands table lists, and no other."""
    result = run_cli("--help")
    assert result.returncode == 0
    listed = re.findall(r"^    ([a-z][a-z-]*)(?: |$)", result.stdout, re.MULTILINE)
    assert sorted(listed) == sorted(readme_commands())


@pytest.mark.parametrize("command", sorted(readme_commands()))
def test_the_readme_table_shows_every_option_of(command: str) -> None:
    """The row of `command` in the README's Commands table has the options its usage has."""
    result = run_cli(command, "--help")
    assert result.returncode == 0, result.stderr
    usage = result.stdout.split("\n\n", 1)[0]
    assert readme_commands()[command] == sorted(set(re.findall(OPTION, usage)))


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


@pytest.mark.parametrize("package", ["harness_core.log", "harness_core.hosts"])
def test_every_name_a_package_exports_is_served_on_first_use(package: str) -> None:
    """`__all__` and the table the lazy `__getattr__` serves list the same names, and each
    imports: `from harness_core.log import X` works for every documented X."""
    module = importlib.import_module(package)
    table: dict[str, str] = module._EXPORTS
    assert sorted(table) == sorted(module.__all__)
    for name in module.__all__:
        getattr(module, name)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        module.nope  # noqa: B018 (the access is the test)
