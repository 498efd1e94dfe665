"""The workspace sandbox: a hostile command per escape, blocked under `workspace` and not under
`off`; and how the mode is chosen (flag, then setting, then what works here)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from harness_core.config import Config
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext
from harness_core.tools import sandbox as sandbox_module
from harness_core.tools.bash import BashArgs, BashTool
from harness_core.tools.sandbox import Sandbox, SandboxUnavailable, probe, resolve
from process_helpers import poll, running

UNAVAILABLE = probe()
needs_bwrap = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox: {UNAVAILABLE}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "ws"


def bash_in(
    workspace: Path, harness_home: Path, mode: str, command: str, network: bool = False
) -> str:
    """`command`'s output, run by the bash tool of a session started in `workspace`."""
    store = SessionStore(harness_home, PluginHost(Config({}, env={})).event_types)
    log = store.create(cwd=str(workspace))
    agent = Agent(log, ScriptedModel([{"text": "unused"}]), PluginHost(Config({}, env={})).tools)
    sandbox_module.install(Sandbox("workspace" if mode == "workspace" else "off", network))
    try:
        args = BashArgs(command=command)
        context = ExecContext(agent=agent, call_id="call_1")
        result = anyio.run(BashTool(timeout=30).execute, args, context)
    finally:
        sandbox_module.install(Sandbox())
    return result.text


modes = pytest.mark.parametrize("mode", ["workspace", pytest.param("off")])


@needs_bwrap
@modes
def test_writing_outside_the_workspace(workspace: Path, harness_home: Path, mode: str) -> None:
    """A file written outside the workspace lands only with the sandbox off; inside always."""
    target = workspace.parent / "outside" / "pwned"
    bash_in(workspace, harness_home, mode, f"echo x > {target}; echo y > inside")
    assert (workspace / "inside").read_text() == "y\n"
    assert target.exists() == (mode == "off")


@needs_bwrap
@modes
def test_following_a_symlink_out(workspace: Path, harness_home: Path, mode: str) -> None:
    """A symlink the repository ships cannot carry a write out of the workspace."""
    (workspace / "link").symlink_to(workspace.parent / "outside")
    bash_in(workspace, harness_home, mode, "echo x > link/pwned")
    assert (workspace.parent / "outside" / "pwned").exists() == (mode == "off")


@needs_bwrap
@modes
def test_reading_a_key_from_another_process(workspace: Path, harness_home: Path, mode: str) -> None:
    """A key kept from bash's own environment can still be read from /proc/PID/environ of the
    process holding it (harness itself), unless the sandbox hides the other processes."""
    key = f"sk-{secrets.token_hex(8)}"
    holder = subprocess.Popen(["sleep", "60"], env={**os.environ, "OPENAI_API_KEY": key})
    try:
        text = bash_in(
            workspace, harness_home, mode, f"cat /proc/[0-9]*/environ 2>/dev/null | grep -ao {key}"
        )
    finally:
        holder.kill()
        holder.wait()
    assert (key in text) == (mode == "off")


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port listening on the host's loopback (connections queue; nobody accepts)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


@needs_bwrap
@modes
def test_reaching_the_network(
    workspace: Path, harness_home: Path, mode: str, listener: int
) -> None:
    """A server on the host's loopback is out of reach from inside the sandbox."""
    command = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    text = bash_in(workspace, harness_home, mode, command)
    assert ("connected" in text.splitlines()) == (mode == "off")


@needs_bwrap
@modes
def test_a_process_left_behind(workspace: Path, harness_home: Path, mode: str) -> None:
    """A process that leaves bash's process group (setsid) still ends with the call."""
    token = secrets.token_hex(6)
    command = f"setsid bash -c 'sleep 60; : {token}' >/dev/null 2>&1 < /dev/null & sleep 0.2"
    bash_in(workspace, harness_home, mode, command)
    try:
        if mode == "workspace":
            anyio.run(poll, lambda: not _with_token(token))  # the namespace ends with bash
        else:
            assert _with_token(token)
    finally:
        for pid in _with_token(token):
            os.kill(pid, signal.SIGKILL)


def _with_token(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            ours = entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes()
            if ours and running(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_bwrap
def test_network_when_allowed(workspace: Path, harness_home: Path, listener: int) -> None:
    """`sandbox_network = true` keeps the host's network: the loopback server answers."""
    command = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    text = bash_in(workspace, harness_home, "workspace", command, network=True)
    assert "connected" in text.splitlines()


def test_the_flag_wins_over_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--sandbox off beats a `workspace` setting; `off` never needs bubblewrap."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    assert resolve("off", "workspace", False) == (Sandbox("off"), None)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        resolve("workspace", "off", False)


def test_explicit_workspace_without_bubblewrap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Asked for, a sandbox that cannot run is an error; by default, `off` and one warning."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="not installed"):
        resolve(None, "workspace", False)
    chosen, warning = resolve(None, None, False)
    assert chosen.mode == "off"
    assert warning is not None and "\n" not in warning and "not installed" in warning


@needs_bwrap
def test_the_default_is_workspace_where_it_works() -> None:
    """With nothing chosen and bubblewrap working, bash is sandboxed and nothing is said."""
    assert resolve(None, None, False) == (Sandbox("workspace"), None)
