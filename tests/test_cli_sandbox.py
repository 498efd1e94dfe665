"""`--sandbox` on the commands that run tools: precedence, the default, the one-line failure
and warning, `harness sandbox-check`, and a subagent's bash in its parent's sandbox."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness_core.tools.sandbox import probe
from test_cli_support import (
    bash_call,
    child_env,
    one_error_line,
    run_cli,
    session_ids,
    write_script,
)

UNAVAILABLE = probe()
needs_bwrap = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox: {UNAVAILABLE}")


def escape_script(workspace: Path, *, via_subagent: bool = False) -> str:
    """A turn whose bash writes one file inside the workspace and one outside it."""
    command = f"echo x > {workspace.parent / 'outside' / 'pwned'}; echo y > inside"
    steps: list[dict[str, object]] = [{"tool_calls": [bash_call(command)]}, {"text": "done"}]
    if via_subagent:
        subagent = {"name": "subagent", "arguments": {"task": "write the files"}}
        steps = [{"tool_calls": [subagent]}, *steps, {"text": "parent done"}]
    return write_script(workspace.parent / "script.json", steps)


def escaped(workspace: Path) -> bool:
    assert (workspace / "inside").read_text() == "y\n"  # the workspace itself stays writable
    return (workspace.parent / "outside" / "pwned").exists()


@needs_bwrap
@pytest.mark.parametrize(
    ("flag", "env", "config", "blocked"),
    [
        ([], None, None, True),  # the default where bubblewrap works
        (["--sandbox", "off"], None, None, False),
        (["--sandbox", "workspace"], "off", None, True),  # the flag beats the environment
        ([], "workspace", "off", True),  # the environment beats the config file
        ([], None, "off", False),
    ],
)
def test_run_writes_outside_the_workspace_only_with_the_sandbox_off(
    workspace: Path,
    harness_home: Path,
    flag: list[str],
    env: str | None,
    config: str | None,
    blocked: bool,
) -> None:
    """--sandbox wins over HARNESS_SANDBOX, which wins over `sandbox` in config.toml."""
    if config is not None:
        harness_home.mkdir(exist_ok=True)
        (harness_home / "config.toml").write_text(f'sandbox = "{config}"\n')
    model = escape_script(workspace)
    result = run_cli(
        "run", *flag, "--model", model, "go", cwd=workspace, env={"HARNESS_SANDBOX": env}
    )
    assert result.returncode == 0, result.stderr
    assert escaped(workspace) is not blocked
    assert result.stderr == ""


@needs_bwrap
def test_a_subagent_runs_in_its_parents_sandbox(workspace: Path, harness_home: Path) -> None:
    """The child session's bash cannot write outside the workspace either."""
    result = run_cli(
        "run", "--model", escape_script(workspace, via_subagent=True), "go", cwd=workspace
    )
    assert result.returncode == 0, result.stderr
    assert len(session_ids(harness_home)) == 2
    assert not escaped(workspace)


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str | None]:
    """An environment whose PATH has bash and nothing else: no bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (bin_dir / "bash").symlink_to(bash)
    return {"PATH": str(bin_dir), "HARNESS_SANDBOX": None}


def test_explicit_workspace_without_bubblewrap_is_one_error(
    workspace: Path, harness_home: Path, no_bwrap: dict[str, str | None]
) -> None:
    """Asked for and impossible: one error line naming the fix, and no session is made."""
    model = escape_script(workspace)
    result = run_cli("run", "--sandbox", "workspace", "--model", model, "go", env=no_bwrap)
    line = one_error_line(result)
    assert "--sandbox workspace cannot run" in line and "apt-get install bubblewrap" in line
    assert session_ids(harness_home) == []


def test_the_default_without_bubblewrap_warns_once_and_runs(
    workspace: Path, harness_home: Path, no_bwrap: dict[str, str | None]
) -> None:
    """Not asked for: one warning line, and bash runs unsandboxed (the write lands)."""
    model = escape_script(workspace)
    result = run_cli("run", "--model", model, "go", cwd=workspace, env=no_bwrap)
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("harness: warning: sandbox off: bubblewrap (bwrap) is not installed")
    assert escaped(workspace)


def test_sandbox_check_says_why_not(harness_home: Path, no_bwrap: dict[str, str | None]) -> None:
    """Without bubblewrap: exit 1 and the reason on one line."""
    result = run_cli("sandbox-check", env=no_bwrap)
    assert result.returncode == 1
    assert result.stdout.startswith("sandbox: unavailable: bubblewrap (bwrap) is not installed")


WITHOUT_PIDFD = """
import os, sys
del os.pidfd_open  # as on Linux before 5.3, or a Python built without it
from harness_core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_system_without_pidfd_open_is_told_why_it_cannot_sandbox(harness_home: Path) -> None:
    """The sandbox waits for each command on a pidfd: where there is none, sandbox-check and
    an explicit --sandbox workspace say so on one line instead of failing every bash call."""
    python = [sys.executable, "-c", WITHOUT_PIDFD]
    env = child_env(None)
    check = subprocess.run([*python, "sandbox-check"], env=env, capture_output=True, text=True)
    assert check.returncode == 1
    assert check.stdout.startswith("sandbox: unavailable: ")
    assert "pidfd_open" in check.stdout and "Linux 5.3 or later" in check.stdout
    model = write_script(harness_home.parent / "script.json", [{"text": "unused"}])
    explicit = [*python, "run", "--sandbox", "workspace", "--model", model, "go"]
    refused = subprocess.run(explicit, env=env, capture_output=True, text=True)
    assert "--sandbox workspace cannot run: this system has no pidfd_open" in one_error_line(
        refused
    )
    assert session_ids(harness_home) == []


@needs_bwrap
def test_sandbox_check_says_it_works(harness_home: Path) -> None:
    """Where bubblewrap runs: exit 0, one line saying so, then one line per cap of the sandbox
    with whether it holds here (as root, as CI runs, every one does)."""
    result = run_cli("sandbox-check")
    first, *caps = result.stdout.splitlines()
    assert (result.returncode, first) == (
        0,
        "sandbox: workspace works here (bubblewrap; no network)",
    )
    assert [line.split(":")[0].strip() for line in caps] == [
        "/tmp",
        "/dev/shm",
        "processes",
        "memory",
    ]
    assert caps[0] == "  /tmp: 2 GiB, held (tmpfs size)"
    if os.geteuid() == 0:
        assert all(", held (" in line for line in caps), caps


@needs_bwrap
def test_sandbox_check_reads_the_caps_from_the_config(harness_home: Path) -> None:
    """The caps are settings: sizes as "512M" or bytes, 0 for no cap; a bad one is one line."""
    harness_home.mkdir(exist_ok=True)
    (harness_home / "config.toml").write_text('sandbox_memory = "3G"\nsandbox_processes = 0\n')
    result = run_cli("sandbox-check", env={"HARNESS_SANDBOX_SHM_SIZE": "64M"})
    assert "  /dev/shm: 64 MiB, held (tmpfs size)" in result.stdout.splitlines()
    assert "  processes: not capped" in result.stdout.splitlines()
    assert any(line.startswith("  memory: 3 GiB, ") for line in result.stdout.splitlines())
    bad = run_cli("sandbox-check", env={"HARNESS_SANDBOX_TMP_SIZE": "lots"})
    assert bad.returncode != 0
    assert "sandbox_tmp_size (or HARNESS_SANDBOX_TMP_SIZE) must be a size" in bad.stderr
