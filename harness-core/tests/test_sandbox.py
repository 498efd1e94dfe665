"""The workspace sandbox: a hostile command per escape, blocked under `workspace` and not under
`off`; and how the mode is chosen (flag, then setting, then what works here)."""

from __future__ import annotations

import ctypes
import gc
import os
import re
import secrets
import shlex
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from harness_core.config import Config
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext, ToolRegistry, ToolResult, _sandbox_server
from harness_core.tools import sandbox as sandbox_module
from harness_core.tools.bash import BashArgs, BashTool
from harness_core.tools.sandbox import (
    Limits,
    Sandbox,
    SandboxUnavailable,
    describe_limits,
    probe,
    resolve,
    workspace_problem,
)
from process_helpers import poll, running

UNAVAILABLE = probe()
needs_bwrap = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox: {UNAVAILABLE}")


def bash_in(
    workspace: Path,
    harness_home: Path,
    mode: str,
    command: str,
    network: bool = False,
    limits: Limits = sandbox_module.DEFAULT_LIMITS,
) -> str:
    """`command`'s output, run by the bash tool of a session started in `workspace`."""
    store = SessionStore(harness_home, PluginHost(Config({}, env={})).event_types)
    log = store.create(cwd=str(workspace))
    agent = Agent(log, ScriptedModel([{"text": "unused"}]), PluginHost(Config({}, env={})).tools)
    sandbox_module.install(Sandbox("workspace" if mode == "workspace" else "off", network, limits))
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


# Knobs a process running as root could write without any capability: core_pattern and
# modprobe name programs the kernel runs as host root (a kernel may lack modprobe).
ROOT_KNOBS = [
    knob
    for knob in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe")
    if Path(knob).exists()
]


@needs_bwrap
@pytest.mark.parametrize("knob", ROOT_KNOBS)
def test_sysctl_write_fails_in_the_sandbox(workspace: Path, harness_home: Path, knob: str) -> None:
    """A sysctl cannot be written from inside, even as root: the write puts back the value the
    knob already has (so the host is unchanged whatever happens) and must fail."""
    before = Path(knob).read_bytes()
    command = f"cat {knob} > value && cat value > {knob} && echo written"
    text = bash_in(workspace, harness_home, "workspace", command)
    assert Path(knob).read_bytes() == before
    assert "written" not in text.splitlines(), text
    assert "Read-only file system" in text


@needs_bwrap
def test_sysrq_trigger_and_process_knobs_are_read_only(workspace: Path, harness_home: Path) -> None:
    """The rest of /proc is read-only too: a per-process knob cannot be set either (nothing is
    written to sysrq-trigger, which acts on any write: only that it cannot be opened for one)."""
    command = (
        "test -w /proc/sysrq-trigger && echo sysrq-writable; "
        "cat /proc/self/oom_score_adj > v && cat v > /proc/self/oom_score_adj && echo written"
    )
    text = bash_in(workspace, harness_home, "workspace", command)
    assert "written" not in text.splitlines() and "sysrq-writable" not in text.splitlines(), text


def _runtime_socket_dirs() -> list[Path]:
    """Where host services keep sockets and this test may make a directory."""
    found = [Path("/var/tmp"), Path("/run")]
    if os.environ.get("XDG_RUNTIME_DIR"):
        found.append(Path(os.environ["XDG_RUNTIME_DIR"]))
    return [path for path in found if path.is_dir() and os.access(path, os.W_OK)]


@pytest.fixture(params=_runtime_socket_dirs(), ids=str)
def host_socket(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A Unix socket a host service listens on, in a runtime directory (removed after)."""
    directory = Path(request.param) / f"harness-test-{secrets.token_hex(4)}"
    directory.mkdir()
    path = directory / "service.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(8)
        try:
            yield path
        finally:
            path.unlink()
            directory.rmdir()


CONNECT = (
    "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print('connected')"
)


@needs_bwrap
@modes
def test_host_unix_socket_out_of_reach(
    workspace: Path, harness_home: Path, mode: str, host_socket: Path
) -> None:
    """A host service on a Unix socket in /run, /var/tmp or the user's runtime directory (think
    docker.sock, the session bus) does not answer a sandboxed command; unsandboxed it does."""
    command = f'python3 -c "{CONNECT}" {host_socket} 2>&1'
    text = bash_in(workspace, harness_home, mode, command)
    assert ("connected" in text.splitlines()) == (mode == "off"), text


IPC_PRIVATE_MODE = 0o600
IPC_CREAT = 0o1000
IPC_RMID = 0


@pytest.fixture
def host_shared_memory() -> Iterator[int]:
    """A SysV shared-memory segment made on the host, under a random key (removed after)."""
    libc = ctypes.CDLL(None, use_errno=True)
    key = secrets.randbelow(2**30) + 1
    segment = libc.shmget(key, 4096, IPC_CREAT | IPC_PRIVATE_MODE)
    assert segment >= 0, os.strerror(ctypes.get_errno())
    try:
        yield key
    finally:
        libc.shmctl(segment, IPC_RMID, None)


@needs_bwrap
@modes
def test_host_sysv_ipc_out_of_reach(
    workspace: Path, harness_home: Path, mode: str, host_shared_memory: int
) -> None:
    """The host's SysV shared memory is invisible inside (its own IPC namespace)."""
    look = f"import ctypes; print('found' if ctypes.CDLL(None).shmget({host_shared_memory}, 0, 0) >= 0 else 'none')"
    text = bash_in(workspace, harness_home, mode, f'python3 -c "{look}"')
    assert ("found" in text.splitlines()) == (mode == "off"), text


# -- caps: what one call may use of the host --------------------------------------------------

MiB = 1 << 20
SMALL = Limits(tmp=16 * MiB, shm=8 * MiB, memory=96 * MiB, processes=64)


def needs_cap(name: str) -> pytest.MarkDecorator:
    """Skip where the cap cannot hold (no cgroup harness may make) unless running as root, as
    CI does, where it must hold."""
    (line,) = [line for line in describe_limits(SMALL) if line.startswith(f"{name}:")]
    held = "held (" in line
    return pytest.mark.skipif(not held and os.geteuid() != 0, reason=line)


@needs_bwrap
@pytest.mark.parametrize("where", ["/tmp", "/dev/shm"])
def test_tmpfs_fill_is_capped(workspace: Path, harness_home: Path, where: str) -> None:
    """Filling a temporary file system stops at its cap, with the shell's own error."""
    command = f"head -c 64M /dev/zero > {where}/fill; stat -c 'size %s' {where}/fill"
    text = bash_in(workspace, harness_home, "workspace", command, limits=SMALL)
    assert "No space left on device" in text
    size = int(text.split("size ")[-1].split()[0])
    assert size <= (SMALL.tmp if where == "/tmp" else SMALL.shm)


FORKS = """
import os, time
started = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    started += 1
print("started", started)
"""


@needs_bwrap
@needs_cap("processes")
def test_process_count_is_capped(workspace: Path, harness_home: Path) -> None:
    """A fork bomb stops at the cap (the children end with the call, as always)."""
    (workspace / "forks.py").write_text(FORKS)
    text = bash_in(workspace, harness_home, "workspace", "python3 forks.py", limits=SMALL)
    started = int(text.split("started ")[-1].split()[0])
    assert started < SMALL.processes, text


@needs_bwrap
@needs_cap("memory")
def test_memory_is_capped(workspace: Path, harness_home: Path) -> None:
    """A memory bomb is killed at the cap, not the host: the call reports it and the session's
    next call runs as usual."""
    command = (
        'python3 -c \'b = bytearray(512 << 20); b[::4096] = b"x" * (128 << 10); print("kept")\''
    )
    text = bash_in(workspace, harness_home, "workspace", command, limits=SMALL)
    assert "kept" not in text.splitlines(), text
    assert "137" in text or "MemoryError" in text, text


@needs_bwrap
@needs_cap("processes")
def test_a_sandbox_cgroup_is_removed_with_its_sandbox(workspace: Path, harness_home: Path) -> None:
    """The cgroups a session's sandbox made are gone once the session is."""
    before = _sandbox_cgroups()
    session = Session(workspace, harness_home, Sandbox("workspace", limits=SMALL))
    assert "ok" in anyio.run(session.bash, "echo ok").text
    assert len(_sandbox_cgroups()) > len(before)
    session.agent = None
    gc.collect()
    anyio.run(poll, lambda: _sandbox_cgroups() == before)


def _sandbox_cgroups() -> set[Path]:
    """The cgroups this process's sandboxes have now, in every hierarchy."""
    prefix = f"{os.getpid()}-"
    found = set()
    # A walk, not rglob: other test processes' sandboxes remove their cgroups meanwhile, and
    # rglob fails on a directory that goes while it looks (os.walk skips it).
    for parent, directories, _ in os.walk("/sys/fs/cgroup"):
        if Path(parent).name == "harness-sandbox":
            found |= {Path(parent, name) for name in directories if name.startswith(prefix)}
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


def _elf(path: Path, interpreter: bytes | None) -> Path:
    """A little-endian ELF64 file whose one program header is PT_INTERP (naming
    `interpreter`) or, for None, PT_LOAD: as a dynamically or a statically linked program."""
    header = b"\x7fELF\x02\x01\x01".ljust(16, b"\0") + bytes(16)
    header += struct.pack("<Q14xHH", 64, 56, 1).ljust(32, b"\0")
    name = (interpreter or b"") + b"\0"
    entry = struct.pack("<IIQQQQQQ", 3 if interpreter else 1, 4, 120, 0, 0, len(name), 0, 1)
    path.write_bytes(header + entry + name)
    return path


def test_the_servers_loader_is_the_one_the_python_names(tmp_path: Path) -> None:
    """The loader the server starts through is the dynamic loader the ELF file names; a
    static program and a file that is not ELF name none."""
    python = os.path.realpath(sys.executable)
    assert sandbox_module.program_interpreter(python) == sandbox_module._loader()
    assert Path(sandbox_module._loader()).is_file()
    named = _elf(tmp_path / "dynamic", b"/lib/ld-test.so.1")
    assert sandbox_module.program_interpreter(str(named)) == "/lib/ld-test.so.1"
    assert sandbox_module.program_interpreter(str(_elf(tmp_path / "static", None))) is None
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert sandbox_module.program_interpreter(str(tmp_path / "script")) is None


@needs_bwrap
def test_a_static_python_is_a_clear_no_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without a dynamic loader the server could not be kept out of its commands' reach:
    asked for, the sandbox is an error that says so; by default, `off` and that warning."""
    static = _elf(tmp_path / "python3", None)
    monkeypatch.setattr(sys, "executable", str(static))
    sandbox_module._loader.cache_clear()
    try:
        why = f"{static} has no dynamic loader; the sandbox needs one to start its server"
        with pytest.raises(SandboxUnavailable, match=re.escape(why)):
            resolve("workspace", None, False)
        warning = f"sandbox off: {why}; bash runs with your full rights"
        assert resolve(None, None, False) == (Sandbox("off"), warning)
    finally:
        sandbox_module._loader.cache_clear()


@pytest.mark.parametrize(
    ("setting", "why"),
    [
        ("0\n", None),
        ("2\n", None),
        ("1\n", "fs.suid_dumpable is 1 here, so commands could trace the sandbox's server"),
    ],
)
def test_the_server_runs_only_where_an_unreadable_exec_is_not_dumpable(
    tmp_path: Path, setting: str, why: str | None
) -> None:
    """fs.suid_dumpable 1 would leave the server traceable by its commands: it refuses."""
    (tmp_path / "suid_dumpable").write_text(setting)
    assert _sandbox_server.traceable(str(tmp_path / "suid_dumpable")) == why
    assert "cannot read fs.suid_dumpable" in str(_sandbox_server.traceable(str(tmp_path / "none")))


# -- one long-lived sandbox per session: each call still as if it had a bubblewrap of its own --


class Session:
    """A session started in `workspace` whose bash calls run under `sandbox`."""

    def __init__(self, workspace: Path, harness_home: Path, sandbox: Sandbox) -> None:
        store = SessionStore(harness_home, PluginHost(Config({}, env={})).event_types)
        log = store.create(cwd=str(workspace))
        tools = PluginHost(Config({}, env={})).tools
        self.agent: Agent | None = Agent(log, ScriptedModel([{"text": "unused"}]), tools)
        sandbox_module.install(sandbox)

    async def bash(self, command: str, limit: float = 30) -> ToolResult:
        context = ExecContext(agent=self.agent, call_id="call_1")
        return await BashTool(timeout=limit).execute(BashArgs(command=command), context)


@pytest.fixture
def session(workspace: Path, harness_home: Path) -> Session:
    return Session(workspace, harness_home, Sandbox("workspace"))


def sandboxes_of(workspace: Path) -> list[int]:
    """The bubblewrap processes (and the servers in them) of sandboxes bound to `workspace`."""
    return [pid for pid in _with_token("--as-pid-1") if str(workspace) in _cmdline(pid)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@needs_bwrap
@pytest.mark.parametrize(
    ("command", "limit"),
    [
        ("echo out; echo err >&2; exit 3", 30_000),
        ("printf 'no newline'", 30_000),
        ("seq 1 20000", 1000),
        (r"printf 'ok \xff\xfe done'", 30_000),
        ("sleep 60 & echo parent done", 30_000),
        ("pwd; env | sort", 30_000),
    ],
)
def test_results_are_the_same_in_and_out_of_the_sandbox(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, command: str, limit: int
) -> None:
    """Output, its cap, exit codes, leftover children, the directory and the environment
    read the same."""

    async def both() -> list[ToolResult]:
        results = []
        for mode in ("off", "workspace"):
            sandbox_module.install(Sandbox("workspace" if mode == "workspace" else "off"))
            context = ExecContext(agent=None, call_id="call_1")
            tool = BashTool(timeout=30, limit=limit)
            results.append(await tool.execute(BashArgs(command=command), context))
        return results

    monkeypatch.chdir(workspace)  # a call with no agent runs in the process's directory
    # bash drops an inherited OLDPWD that names a directory it cannot see, and the sandbox
    # hides whatever the test runner's previous directory under /tmp was (a CI clone's).
    monkeypatch.delenv("OLDPWD", raising=False)
    off, sandboxed = anyio.run(both)
    assert sandboxed == off


@needs_bwrap
def test_each_call_starts_with_an_empty_tmp_and_the_workspace_kept(session: Session) -> None:
    """/tmp and /dev/shm are private and empty for every call; the workspace keeps its files."""

    async def calls() -> list[str]:
        first = await session.bash(
            "echo x > /tmp/left; mkdir -p /tmp/d/e; chmod 0 /tmp/d; echo x > /dev/shm/left; "
            "echo y > kept"
        )
        second = await session.bash("ls -d /tmp/left /tmp/d /dev/shm/* 2>/dev/null; cat kept")
        return [first.text, second.text]

    first, second = anyio.run(calls)
    assert first == "[exit code 0]"
    assert second == "y\n[exit code 0]"


@needs_bwrap
def test_a_call_cannot_reach_the_sandboxs_server(session: Session) -> None:
    """The server (PID 1) ignores a command's signals and hides its environment and
    descriptors; commands have no capabilities to trace it. The next call runs as usual."""

    async def calls() -> list[str]:
        first = await session.bash(
            "kill -KILL 1; kill -STOP 1; cat /proc/1/environ; ls -l /proc/1/fd/0; "
            "grep CapEff /proc/self/status"
        )
        return [first.text, (await session.bash("echo next")).text]

    first, second = anyio.run(calls)
    assert "cat: /proc/1/environ: Permission denied" in first
    assert "cannot read symbolic link '/proc/1/fd/0': Permission denied" in first
    assert "CapEff:\t0000000000000000" in first
    assert second == "next\n[exit code 0]"


PTRACE_SEIZE = 0x4206  # attaches without stopping: a tracer that got in leaves no trace
TRACE_THE_SERVER = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("attach:", libc.ptrace({PTRACE_SEIZE}, 1, 0, 0), os.strerror(ctypes.get_errno()))
try:
    open("/proc/1/mem", "rb").close()
    print("memory: read")
except OSError as exc:
    print("memory:", exc.strerror)
"""


@needs_bwrap
def test_a_call_cannot_trace_the_sandboxs_server(session: Session) -> None:
    """A command cannot attach to the server as a debugger would (it could then stop it,
    keep its own processes past the call, or read the next calls), nor open its memory."""
    python = os.path.realpath(sys.executable)  # the standard library's ctypes, as an attacker's

    async def calls() -> list[str]:
        first = await session.bash(f"{python} -I -c {shlex.quote(TRACE_THE_SERVER)}")
        return [first.text, (await session.bash("echo next")).text]

    first, second = anyio.run(calls)
    assert first == "attach: -1 Operation not permitted\nmemory: Permission denied\n[exit code 0]"
    assert second == "next\n[exit code 0]"


@needs_bwrap
def test_a_timeout_kills_everything_the_call_started(session: Session) -> None:
    """Past the timeout the call's processes die, even one that left with setsid; the next
    call runs in the same sandbox."""
    token = f"60.{secrets.randbelow(10**6)}"

    async def calls() -> tuple[ToolResult, ToolResult]:
        command = f"echo started; setsid sleep {token} & sleep {token}; wait"
        timed_out = await session.bash(command, limit=0.5)
        return timed_out, await session.bash("echo next")

    timed_out, after = anyio.run(calls)
    assert timed_out.text == (
        "started\n[timed out after 0.5s; the command and its children were killed]"
    )
    assert after.text == "next\n[exit code 0]"
    assert _with_token(token) == []


@needs_bwrap
def test_cancelling_a_call_kills_everything_it_started(session: Session, workspace: Path) -> None:
    """A cancelled turn's call leaves no process behind, and the sandbox serves the next."""
    token = f"60.{secrets.randbelow(10**6)}"

    async def cancel_then_call() -> ToolResult:
        async with anyio.create_task_group() as group:
            group.start_soon(session.bash, f"setsid sleep {token} & touch started; wait")
            await poll(lambda: (workspace / "started").exists())
            group.cancel_scope.cancel()
        return await session.bash("echo next")

    assert anyio.run(cancel_then_call).text == "next\n[exit code 0]"
    assert _with_token(token) == []


@needs_bwrap
def test_calls_at_once_run_side_by_side(session: Session) -> None:
    """Two calls of one session that wait for each other both finish: neither queues."""

    async def together() -> list[str]:
        texts: list[str] = []

        async def call(mine: str, theirs: str) -> None:
            command = f"touch {mine}; while [ ! -e {theirs} ]; do sleep 0.01; done; echo {mine}"
            texts.append((await session.bash(command, limit=10)).text)

        async with anyio.create_task_group() as group:
            group.start_soon(call, "a", "b")
            group.start_soon(call, "b", "a")
        return sorted(texts)

    assert anyio.run(together) == ["a\n[exit code 0]", "b\n[exit code 0]"]


@needs_bwrap
def test_a_sandbox_that_dies_fails_its_call_and_the_next_starts_anew(
    session: Session, workspace: Path
) -> None:
    """Killed from outside mid-call: the call is an error saying so; the next call works."""

    async def calls() -> tuple[ToolResult, ToolResult]:
        async with anyio.create_task_group() as group:
            results: list[ToolResult] = []

            async def call() -> None:
                results.append(await session.bash("touch started; sleep 60"))

            group.start_soon(call)
            await poll(lambda: (workspace / "started").exists())
            for pid in sandboxes_of(workspace):
                os.kill(pid, signal.SIGKILL)
        return results[0], await session.bash("echo next")

    lost, after = anyio.run(calls)
    assert lost.is_error
    assert lost.text.startswith("[the session's sandbox ended (exit status")
    assert lost.text.endswith("; the call was lost, and the next call starts a new sandbox]")
    assert after.text == "next\n[exit code 0]"


@needs_bwrap
def test_a_sandbox_that_died_between_calls_is_replaced_silently(
    session: Session, workspace: Path
) -> None:
    """Nothing ran in it, so nothing is lost: the next call just gets a new sandbox."""
    anyio.run(session.bash, "true")
    for pid in sandboxes_of(workspace):
        os.kill(pid, signal.SIGKILL)
    anyio.run(poll, lambda: sandboxes_of(workspace) == [])
    assert anyio.run(session.bash, "echo next").text == "next\n[exit code 0]"


@needs_bwrap
def test_the_sandbox_ends_with_its_session(session: Session, workspace: Path) -> None:
    """While the session lives its sandbox stays up; once its agent is gone, so is the sandbox."""
    anyio.run(session.bash, "true")
    assert sandboxes_of(workspace) != []
    session.agent = None
    gc.collect()
    anyio.run(poll, lambda: sandboxes_of(workspace) == [])


@needs_bwrap
def test_the_sandbox_ends_with_harness(workspace: Path) -> None:
    """harness killed outright (SIGKILL, no cleanup) takes its sandboxes and their calls along."""
    token = f"60.{secrets.randbelow(10**6)}"
    script = (
        "import anyio\n"
        "from harness_core.tools import ExecContext, sandbox\n"
        "from harness_core.tools.bash import BashArgs, BashTool\n"
        "sandbox.install(sandbox.Sandbox('workspace'))\n"
        f"command = BashArgs(command='setsid sleep {token} & sleep {token}')\n"
        "anyio.run(BashTool().execute, command, ExecContext())\n"
    )
    harness = subprocess.Popen([sys.executable, "-c", script], cwd=workspace)
    try:
        anyio.run(poll, lambda: _with_token(token) != [] and sandboxes_of(workspace) != [])
    finally:
        harness.kill()
        harness.wait()
    anyio.run(poll, lambda: sandboxes_of(workspace) == [] and _with_token(token) == [])


@needs_bwrap
def test_a_replaced_working_directory_gets_a_new_sandbox(session: Session, workspace: Path) -> None:
    """The directory deleted and made again: the next call writes into the new one."""
    anyio.run(session.bash, "true")
    workspace.rmdir()
    workspace.mkdir()
    assert anyio.run(session.bash, "echo y > here").text == "[exit code 0]"
    assert (workspace / "here").read_text() == "y\n"


@needs_bwrap
def test_harness_installed_under_tmp_still_sandboxes(tmp_path: Path, harness_home: Path) -> None:
    """harness run from a virtual environment under /tmp (a fresh clone's, in CI): the
    sandbox's private /tmp hides that environment, and bash still runs sandboxed."""
    venv, work = tmp_path / "venv", tmp_path / "work"  # the workspace does not hold it
    work.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    script = tmp_path / "s.json"
    script.write_text(
        '{"steps": [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo inside"}}]},'
        ' {"text": "ok"}]}'
    )
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "harness_core.cli", "run", "--sandbox", "workspace",
         "--approval", "auto", "--model", f"scripted:{script}", "go"],
        cwd=work,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "✓ $ echo inside  exit 0" in run.stdout


# -- the owner stops answering: its sandbox ends within the lapse -----------------------------


def _owner(workspace: Path, lapse: float, command: str) -> subprocess.Popen[str]:
    """A harness-like process (the owner) running `command` with the bash tool in a sandbox
    whose lapse is `lapse`; it prints the call's result when the call ends."""
    script = (
        "import anyio\n"
        "from harness_core.tools import ExecContext, sandbox\n"
        "from harness_core.tools.bash import BashArgs, BashTool\n"
        f"sandbox.install(sandbox.Sandbox('workspace', lapse={lapse!r}))\n"
        f"command = BashArgs(command={command!r})\n"
        "print(anyio.run(BashTool().execute, command, ExecContext()).text, flush=True)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script], cwd=workspace, stdout=subprocess.PIPE, text=True
    )


@needs_bwrap
def test_a_stopped_owners_sandbox_ends_within_its_lapse(workspace: Path) -> None:
    """The owner SIGSTOPped mid-call (a frozen worker): its command, which would write END
    3 s later, is ended by the sandbox itself within the 1 s lapse; woken, the owner reads
    that its sandbox ended because it did not answer."""
    owner = _owner(workspace, 1.0, "touch started; sleep 3; echo END > marker")
    try:
        anyio.run(poll, lambda: (workspace / "started").exists())
        owner.send_signal(signal.SIGSTOP)
        anyio.run(poll, lambda: sandboxes_of(workspace) == [])  # within the lapse, not the 3 s
        anyio.run(anyio.sleep, 4)  # past the moment the command would have written END
        assert not (workspace / "marker").exists()
        owner.send_signal(signal.SIGCONT)
        out, _ = owner.communicate(timeout=30)
    finally:
        owner.kill()
        owner.wait()
    assert "harness did not answer for 1 s (stopped or frozen)" in out
    assert "the call was lost" in out


@needs_bwrap
def test_a_call_cannot_beat_for_a_stopped_owner(workspace: Path) -> None:
    """A command that writes to every descriptor of the server it can reopen through /proc
    (the heartbeat pipe's read end would open for writing) does not keep a stopped owner's
    sandbox alive: it ends within the lapse all the same."""
    forge = (
        "touch started; while :; do for fd in $(seq 0 20); do "
        "echo . 2>/dev/null >/proc/1/fd/$fd; done; sleep 0.1; done"
    )
    owner = _owner(workspace, 1.0, forge)
    try:
        anyio.run(poll, lambda: (workspace / "started").exists())
        owner.send_signal(signal.SIGSTOP)
        anyio.run(poll, lambda: sandboxes_of(workspace) == [])
        owner.send_signal(signal.SIGCONT)
        out, _ = owner.communicate(timeout=30)
    finally:
        owner.kill()
        owner.wait()
    assert "harness did not answer for 1 s (stopped or frozen)" in out


@needs_bwrap
def test_an_owner_that_answers_keeps_its_sandbox_past_the_lapse(workspace: Path) -> None:
    """A call far longer than the lapse runs to its end while the owner is alive (busy or
    not, its heartbeat goes on)."""
    owner = _owner(workspace, 0.5, "sleep 2; echo END > marker; echo done")
    out, _ = owner.communicate(timeout=60)
    assert out == "done\n[exit code 0]\n"
    assert (workspace / "marker").read_text() == "END\n"


# -- the workspace is never a system place ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/", "it is the whole file system"),
        ("/tmp", "it is /tmp"),
        ("/tmp/", "it is /tmp"),
        ("/var/tmp", "it is /var/tmp"),
        ("/var", "it holds /var/tmp"),
        ("/dev/shm", "it is /dev/shm"),
        ("/dev", "it holds /dev/shm"),
        ("/run", "it is /run"),
        ("/var/run", "it is /run"),  # a link to /run
        ("/proc/sys/kernel", "it lies in /proc"),
        ("/sys/fs", "it lies in /sys"),
        ("/etc", "it lies in /etc"),
        ("/boot", "it lies in /boot"),
    ],
)
def test_a_system_place_is_refused_in_one_line(path: str, why: str) -> None:
    problem = workspace_problem(path)
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f"the working directory {path}")
    assert why in problem


def test_a_link_to_a_system_place_is_that_place(tmp_path: Path) -> None:
    (tmp_path / "scratch").symlink_to("/tmp")
    problem = workspace_problem(str(tmp_path / "scratch"))
    assert problem is not None and f"{tmp_path}/scratch (that is /tmp)" in problem


@pytest.mark.parametrize("path", ["/tmp/project", "/var/tmp/x", "/run/user/0/x", "/home/me"])
def test_a_directory_of_its_own_is_a_workspace(path: str) -> None:
    """Under /tmp and the runtime directories is fine: the workspace is bound on top of the
    sandbox's private /tmp, never over it."""
    assert workspace_problem(path) is None


@needs_bwrap
def test_the_sandbox_itself_refuses_a_system_place(tmp_path: Path) -> None:
    """A host that skipped the check still cannot start a command there: the call is an
    error naming the directory, and nothing runs."""
    context = ExecContext(agent=None, call_id="call_1")
    tools = ToolRegistry()
    tools.register(BashTool(), provider="builtins")
    sandbox_module.install(Sandbox("workspace"))
    cwd = os.getcwd()
    try:
        os.chdir("/")
        result = anyio.run(tools.execute, "bash", '{"command": "echo ran"}', context)
    finally:
        os.chdir(cwd)
    assert result.is_error and "ran\n" not in result.text
    assert "the working directory / cannot be the sandbox's workspace" in result.text
