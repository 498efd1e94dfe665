"""`harness plugins`: every discovered plugin and why, and a broken plugin never breaks the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness_core.log import EventTypeRegistry, SessionStore
from harness_core.testing.pytest_plugin import FakeDistribution
from test_cli_startup import imported_after
from test_cli_support import one_error_line, run_cli, session_ids, write_script

BROKEN = {"broken_plugin.py": "import a_module_that_is_not_installed\nname = 'broken'\n"}
RECORD_KEYS = {
    "name",
    "dist",
    "version",
    "entry_point",
    "status",
    "reason",
    "fix",
    "hooks",
    "tools",
    "load_ms",
    "commands",
    "effects",
}


@pytest.fixture
def broken_site(fake_distribution: FakeDistribution) -> dict[str, str]:
    """A really installed distribution whose plugin fails to import; the env that sees it."""
    info = fake_distribution("broken-plugin", {"broken": "broken_plugin"}, BROKEN, version="2.3.4")
    return {"PYTHONPATH": str(info.parent)}


def records(env: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    result = run_cli("plugins", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return {record["name"]: record for record in json.loads(result.stdout)}


def test_json_lists_the_builtins_and_the_todo_plugin() -> None:
    """plugins --json prints full records for the built-in plugin and harness-tool-todo."""
    found = records()
    assert set(found["builtins"]) == RECORD_KEYS
    assert found["builtins"]["status"] == "loaded"
    assert found["builtins"]["tools"] == ["bash", "subagent"]
    todo = found["todo"]
    assert (todo["dist"], todo["entry_point"], todo["status"]) == (
        "harness-tool-todo",
        "harness_tool_todo",
        "loaded",
    )
    assert todo["tools"] == ["todo_write"]
    assert todo["commands"] == ["todos"]
    assert todo["effects"] == {"todo_write": "log_only"}
    assert found["builtins"]["effects"] == {"bash": "outside", "subagent": "outside"}
    assert found["builtins"]["commands"] == []
    assert "harness_register_tools" in todo["hooks"]  # type: ignore[operator]


def test_plain_output_names_each_plugin_and_its_tools() -> None:
    """The human listing shows status, distribution, entry point and tools."""
    result = run_cli("plugins")
    assert result.returncode == 0
    assert (
        "todo (harness-tool-todo 0.1.0, entry point harness_tool_todo): loaded in" in result.stdout
    )
    # Marked: approval never asks about a tool whose only effect is its own log event.
    assert "  tools: todo_write (log only)" in result.stdout
    assert "  tools: bash, subagent\n" in result.stdout


def test_a_broken_plugin_is_reported_and_the_others_load(broken_site: dict[str, str]) -> None:
    """An import error rejects that plugin with reason and fix; todo still loads."""
    found = records(broken_site)
    broken = found["broken"]
    assert broken["status"] == "rejected"
    assert (broken["dist"], broken["version"]) == ("broken-plugin", "2.3.4")
    assert "a_module_that_is_not_installed" in str(broken["reason"])
    assert broken["fix"]
    assert found["todo"]["status"] == "loaded"
    plain = run_cli("plugins", env=broken_site)
    assert plain.returncode == 0
    assert "broken (broken-plugin 2.3.4, entry point broken_plugin): rejected" in plain.stdout
    assert plain.stderr == ""  # the listing reports it; no duplicate warning


def test_help_and_version_work_with_a_broken_plugin(broken_site: dict[str, str]) -> None:
    """--help and --version never import plugins, so a broken one cannot stop them."""
    assert run_cli("--help", env=broken_site).returncode == 0
    assert run_cli("--version", env=broken_site).returncode == 0


def test_other_commands_warn_about_a_broken_plugin_on_one_line(
    broken_site: dict[str, str], harness_home: Path
) -> None:
    """A rejected plugin is one warning line on stderr; the command itself succeeds.
    `sessions` loads no plugin, so it lists without the warning."""
    with SessionStore(harness_home, EventTypeRegistry()).create() as log:
        pass
    result = run_cli("events", log.session_id, env=broken_site)
    assert result.returncode == 0
    assert json.loads(result.stdout)["type"] == "session/start"
    warnings = result.stderr.splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith("harness: warning: broken (broken-plugin 2.3.4")
    listing = run_cli("sessions", env=broken_site)
    assert (listing.returncode, listing.stderr) == (0, "")
    assert listing.stdout.splitlines()[1].startswith(log.session_id)


def test_strict_mode_turns_a_rejection_into_a_one_line_error(
    broken_site: dict[str, str],
) -> None:
    """HARNESS_STRICT_PLUGINS=1: any rejected plugin fails the command with one line."""
    result = run_cli("plugins", env={**broken_site, "HARNESS_STRICT_PLUGINS": "1"})
    line = one_error_line(result)
    assert "HARNESS_STRICT_PLUGINS=1" in line
    assert "broken" in line
    assert result.stdout == ""


def test_a_disabled_plugin_is_listed_with_the_reason() -> None:
    """HARNESS_DISABLE_PLUGINS keeps a plugin out, and `plugins` says so."""
    todo = records({"HARNESS_DISABLE_PLUGINS": "todo"})["todo"]
    assert todo["status"] == "disabled"
    assert todo["reason"] == "listed in HARNESS_DISABLE_PLUGINS"


def test_plugins_never_imports_openai(
    broken_site: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing plugins loads them all but not the openai SDK (startup time)."""
    monkeypatch.setenv("PYTHONPATH", broken_site["PYTHONPATH"])
    loaded = imported_after("plugins", "--json")
    assert "harness_tool_todo" in loaded
    assert "openai" not in loaded
    assert "httpx" not in loaded


def test_plugins_uses_the_config_of_harness_home(harness_home: Path) -> None:
    """A malformed plugin section in config.toml rejects that plugin, with the key named."""
    harness_home.mkdir(parents=True)
    (harness_home / "config.toml").write_text("[plugins.todo]\nallow_parallel_in_progress = 3\n")
    todo = records()["todo"]
    assert todo["status"] == "rejected"
    assert "plugins.todo.allow_parallel_in_progress" in str(todo["reason"])


NO_TOOLS = {
    "late_plugin.py": "from harness_core.plugins import hookimpl\n"
    "name = 'late'\ninject = ('tools',)\n"
    "@hookimpl\ndef harness_register_tools(ctx):\n    raise RuntimeError('no tools today')\n"
}


def test_a_plugin_whose_tools_fail_is_rejected_where_tools_are_needed(
    fake_distribution: FakeDistribution, harness_home: Path, tmp_path: Path
) -> None:
    """`plugins` and `run` report it; `events` never registers tools, so it stays quiet."""
    info = fake_distribution("late-plugin", {"late": "late_plugin"}, NO_TOOLS)
    env = {"PYTHONPATH": str(info.parent)}
    late = records(env)["late"]
    assert (late["status"], late["reason"]) == (
        "rejected",
        "harness_register_tools raised RuntimeError: no tools today",
    )
    script = write_script(tmp_path / "script.json", [{"text": "Done."}])
    run = run_cli("run", "--model", script, "hi", env=env)
    assert run.returncode == 0, run.stderr
    warning = "harness: warning: late (late-plugin 1.0.0, entry point late_plugin): rejected: "
    assert run.stderr.startswith(warning + "harness_register_tools raised RuntimeError")
    events = run_cli("events", session_ids(harness_home)[-1], env=env)
    assert events.returncode == 0 and events.stderr == ""
