"""`harness demo`: the embedded scripted session, its temporary home and its closing hints."""

from __future__ import annotations

import shlex
from pathlib import Path

from test_cli_support import Terminal, one_error_line, run_cli, session_ids

NO_HOME = {"HARNESS_HOME": None, "UV": None}


def printed_commands(stdout: str) -> list[list[str]]:
    """The indented `harness ...` lines the demo ends with, as argv lists."""
    return [
        shlex.split(line)
        for line in stdout.splitlines()
        if line.startswith("  ") and "harness " in line
    ]


def test_demo_without_harness_home_uses_a_temporary_one(tmp_path: Path) -> None:
    """No HARNESS_HOME: the session goes to a fresh temporary home the hints name."""
    result = run_cli("demo", env={**NO_HOME, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    (home,) = tmp_path.glob("harness-demo-*")
    (session,) = session_ids(home)
    commands = printed_commands(result.stdout)
    assert [c[:3] for c in commands] == [
        [f"HARNESS_HOME={home}", "harness", verb] for verb in ("show", "todos", "events", "run")
    ]
    assert all(session in c for c in commands)
    assert f"The demo session {session} is saved in {home}. Inspect it:" in result.stdout


def test_the_printed_commands_work(tmp_path: Path) -> None:
    """Each hint runs as printed: inspect commands succeed, resuming asks for the key."""
    result = run_cli("demo", env={**NO_HOME, "TMPDIR": str(tmp_path)})
    commands = printed_commands(result.stdout)
    assert len(commands) == 4
    for assignment, _, *args in commands:
        home = assignment.removeprefix("HARNESS_HOME=")
        ran = run_cli(*args, env={"HARNESS_HOME": home})
        if args[0] == "run":
            assert "set DEEPSEEK_API_KEY" in one_error_line(ran)
        else:
            assert ran.returncode == 0, (args, ran.stderr)
            assert ran.stdout


def test_demo_with_harness_home_set_uses_it(harness_home: Path) -> None:
    """A set HARNESS_HOME receives the session, and the hints need no prefix."""
    result = run_cli("demo", env={"UV": None})
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    assert f"  harness show {session}" in result.stdout.splitlines()
    assert "HARNESS_HOME=" not in result.stdout


def test_under_uv_run_the_hints_say_uv_run(harness_home: Path) -> None:
    """Started by `uv run` (scripts/demo), the hints use `uv run harness`, which will work."""
    result = run_cli("demo", env={"UV": "/usr/bin/uv"})
    (session,) = session_ids(harness_home)
    assert f"  uv run harness todos {session} --history" in result.stdout.splitlines()


def test_on_a_terminal_the_plan_strip_moves_step_by_step(tmp_path: Path) -> None:
    """Paced on a TTY: each revision of the plan is on screen in turn before the next."""
    terminal = Terminal("demo", cwd=tmp_path)
    for done in range(5):
        terminal.expect(f"Plan · {done}/4 done", timeout=20)
    terminal.expect("The demo session")
    assert terminal.wait() == 0
    assert sum("Plan ·" in line for line in terminal.lines) == 1  # one strip, redrawn in place
