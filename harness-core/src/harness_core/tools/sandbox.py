"""The sandbox tool processes run in: `workspace` (bubblewrap) or `off`.

Under `workspace` a command sees the whole file system read-only except the session's working
directory and a private, empty /tmp; it gets its own PID namespace (nothing it starts outlives
the call, and no other process, such as harness itself with its keys, is visible in /proc) and,
unless `sandbox_network = true`, its own network namespace with nothing but a down loopback.

Starting bubblewrap costs more than the command it runs, so it is started once per session, not
per call: the session's first call starts a bubblewrap whose PID 1 is a small server
(`_sandbox_server`), and every later call runs in it. The server starts each command, and when
it exits kills everything else in the sandbox and empties /tmp and /dev/shm (its own tmpfs
mounts, never what covers them) before it answers, so each call still begins in an empty
sandbox. Calls that run at the same time get one sandbox each. The sandboxes end with their
session (its agent object), with `install` of another sandbox, with harness, and when harness
stops answering for the sandbox's lapse (`_Heartbeat`); a call whose sandbox dies under it is
an error, and the next call starts a new one.

The workspace is never a system place (`workspace_problem`: /, what is or holds /tmp, ...):
hosts refuse one before anything runs, and `start` refuses it too.

The host resolves the mode once (`resolve`: the flag, else HARNESS_SANDBOX / config `sandbox`,
else `workspace` where bubblewrap works) and installs it; the bash tool, in every agent and
subagent of the process, starts its command through `current().start`.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import functools
import json
import os
import secrets
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol

import anyio
from anyio.abc import Process

from . import _sandbox_server
from ._limits import (
    DEFAULT_LIMITS,
    Cgroup,
    Limits,
    bwrap_has,
    cgroup_for,
    describe,
    tmpfs_sizes,
)

__all__ = [
    "DEFAULT_LAPSE",
    "MODES",
    "Command",
    "Limits",
    "Sandbox",
    "SandboxCrashed",
    "SandboxUnavailable",
    "WorkspaceRefused",
    "current",
    "describe_limits",
    "install",
    "probe",
    "resolve",
    "workspace_problem",
]

Mode = Literal["workspace", "off"]
MODES: Final = ("workspace", "off")
PROBE_TIMEOUT: Final = 10.0
CHUNK: Final = 65536
DEFAULT_LAPSE: Final = 30.0
# Inside the sandbox, an execute-only copy of this Python's dynamic loader, through which the
# server starts (so that it is not dumpable: `_sandbox_server`). Under /dev, which bubblewrap
# makes and the sandbox remounts read-only.
LOADER: Final = "/dev/.harness-sandbox-loader"
PT_INTERP: Final = 3  # the ELF program header naming the program's interpreter
BEAT_SECONDS: Final = 1.0  # how often harness tells its sandboxes it still answers, at most


class SandboxUnavailable(Exception):
    """`--sandbox workspace` was asked for where bubblewrap cannot run."""


class WorkspaceRefused(Exception):
    """The working directory is a system place: no sandbox makes it writable."""


class SandboxCrashed(Exception):
    """The session's sandbox ended while a call ran in it (the next call starts a new one)."""


class Command(Protocol):
    """A started command: its combined output, its exit status, and a way to end it all."""

    def output(self) -> AsyncIterator[bytes]:
        """stdout and stderr as they come, until every process holding them has ended."""
        ...

    async def wait(self) -> int:
        """The exit status (128 + N for signal N in the sandbox); SandboxCrashed if unknown."""
        ...

    def kill(self) -> None:
        """SIGKILL every process the command started (idempotent, never blocks)."""
        ...

    async def aclose(self) -> None:
        """Reap what is left and release the descriptors (after `kill`)."""
        ...


@dataclass(frozen=True, slots=True)
class Sandbox:
    mode: Mode = "off"
    network: bool = False
    limits: Limits = DEFAULT_LIMITS
    # Seconds a sandbox outlives an owner that stopped answering (a stopped or frozen
    # process): its server then ends every process in it.
    lapse: float = DEFAULT_LAPSE

    def wrap(
        self,
        argv: list[str],
        cwd: str | None,
        keep: Sequence[str] = (),
        mark: str = "",
        loader: int | None = None,
    ) -> list[str]:
        """`argv` as run in this sandbox with `cwd` writable (unchanged when off; None: no
        directory writable but the private ones), and the directories `keep` visible
        read-only even under the private /tmp. `mark` names a directory made first in each
        private tmpfs (the server's proof of which mounts are its own); `loader` is a
        descriptor whose content becomes LOADER, execute-only (the server's).

        WorkspaceRefused when `cwd` is a system place (`workspace_problem`)."""
        if self.mode == "off":
            return argv
        if cwd is not None and (problem := workspace_problem(cwd)) is not None:
            raise WorkspaceRefused(problem)
        bwrap = shutil.which("bwrap") or "bwrap"
        workdir = cwd or "/"
        # A runtime directory inside the workspace is the workspace's (the user chose it).
        hidden = [path for path in _runtime_dirs() if not _within(path, workdir)]
        # Order matters: the private /tmp and the hidden runtime directories are mounted before
        # the workspace, so a workspace under one of them is bound on top of it instead of
        # being hidden by it; they are made read-only only after that bind (a non-recursive
        # remount: the workspace under them stays writable). /tmp and /dev/shm are the only
        # writable places besides the workspace (the server empties both after every call);
        # /dev itself is read-only, so no call can break it for the next. The workspace is
        # never one of them nor holds one (`workspace_problem`), so it never covers them.
        return [
            bwrap,
            *("--ro-bind", "/", "/", "--dev", "/dev"),
            *(() if loader is None else ("--perms", "0111", "--ro-bind-data", str(loader), LOADER)),
            *tmpfs_sizes(bwrap, self.limits.shm),
            *("--tmpfs", "/dev/shm", *_marked("/dev/shm", mark)),
            # /proc read-only: bubblewrap covers /proc/sys only where its own access() check
            # says it is writable, which it does not say to root without capabilities, while
            # the kernel still lets uid 0 write sysctls (kernel/core_pattern names a program
            # the kernel runs as host root). No capability guards them: the mount must.
            *("--remount-ro", "/dev", "--proc", "/proc", "--remount-ro", "/proc"),
            *tmpfs_sizes(bwrap, self.limits.tmp),
            *("--tmpfs", "/tmp", *_marked("/tmp", mark)),
            # Host services listen on Unix sockets under the runtime directories (docker.sock,
            # the user's D-Bus, ssh and gpg agents); a read-only mount does not stop connect(),
            # so the directories are replaced by empty ones.
            *(arg for path in hidden for arg in ("--tmpfs", path)),
            *(arg for path in _kept(keep, hidden) for arg in ("--ro-bind", path, path)),
            *(("--bind", cwd, cwd) if cwd is not None else ()),
            *("--chdir", workdir),
            *(arg for path in hidden for arg in ("--remount-ro", path)),
            *(() if self.network else ("--unshare-net",)),
            # --unshare-ipc: SysV shared memory, semaphores and message queues of the host
            # (and of other sandboxes) are out of reach.
            # --as-pid-1: the command is the namespace's init, no bubblewrap process in it.
            # --cap-drop ALL: run by root, bubblewrap would otherwise keep root's capabilities
            # (mknod, ptrace, ...) for everything inside.
            *("--unshare-ipc", "--unshare-pid", "--as-pid-1", "--cap-drop", "ALL"),
            *("--die-with-parent", "--new-session", "--"),
            *argv,
        ]

    async def start(
        self, argv: list[str], cwd: str, env: Mapping[str, str], owner: object = None
    ) -> Command:
        """`argv` started in `cwd` with exactly `env`, in this sandbox, stdin from /dev/null.

        `owner` is the session the call belongs to (its agent): calls of one owner share the
        long-lived sandbox, which ends when the owner is garbage. OSError when `cwd` is gone,
        WorkspaceRefused when it is a system place.
        """
        if self.mode == "off":
            return await _LocalCommand.start(argv, cwd, env)
        if (problem := workspace_problem(cwd)) is not None:
            raise WorkspaceRefused(problem)
        # FileNotFoundError as a local process would give, before anything runs.
        directory = os.stat(cwd)  # one stat: cheaper than a thread
        return await _server_for(self, cwd, directory, owner).start(argv, cwd, env)


class _LocalCommand:
    """A command harness starts itself, as the leader of a new process group."""

    def __init__(self, process: Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, argv: list[str], cwd: str, env: Mapping[str, str]) -> _LocalCommand:
        # Shielded: a cancel landing while asyncio still wires up the pipes would kill only the
        # shell and orphan its children. Once the caller holds the command, its `finally`
        # ends the whole group whatever happens.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=dict(env),
            )
        return cls(process)

    async def output(self) -> AsyncIterator[bytes]:
        assert self.process.stdout is not None
        async for chunk in self.process.stdout:
            yield chunk

    async def wait(self) -> int:
        return await self.process.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.process.wait()
            await self.process.aclose()


class _SandboxedCall:
    """A command the session's sandbox server runs: output through a pipe, status by socket."""

    def __init__(self, server: _Server, output: int) -> None:
        self.server = server
        self.output_fd = output
        self.status = bytearray()
        self.over = False  # the status came, or the server is gone: nothing left to kill
        self.killed = False

    async def output(self) -> AsyncIterator[bytes]:
        while True:
            await anyio.wait_readable(self.output_fd)
            try:
                chunk = os.read(self.output_fd, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return
            yield chunk

    async def wait(self) -> int:
        """The status, sent once the command and everything it left are gone."""
        size = _sandbox_server.STATUS.size
        channel = self.server.channel
        while not self.over:
            await anyio.wait_readable(channel)
            try:
                chunk = channel.recv(size - len(self.status))
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            self.status += chunk
            self.over = not chunk or len(self.status) == size
        if len(self.status) == size:
            return int(_sandbox_server.STATUS.unpack(self.status)[0])
        # Both wait on the dead sandbox (up to a second and a half): not on the event loop,
        # where every other session's stream would wait with them.
        why = await anyio.to_thread.run_sync(self.server.why_ended)
        await anyio.to_thread.run_sync(self.server.close)
        if self.killed:
            return 128 + signal.SIGKILL
        raise SandboxCrashed(why)

    def kill(self) -> None:
        if not self.over and not self.killed:
            self.killed = True
            with contextlib.suppress(OSError):
                self.server.channel.send(b"k")

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(SandboxCrashed):
            await self.wait()
        os.close(self.output_fd)
        self.server.busy = False


_RUNTIME_DIRS: Final = ("/run", "/var/run", "/var/tmp")


def _runtime_dirs() -> tuple[str, ...]:
    """The directories where host services keep their sockets, as real paths: the system's
    and the user's runtime directories and /var/tmp (where the host has them)."""
    found: list[str] = []
    for name in (*_RUNTIME_DIRS, os.environ.get("XDG_RUNTIME_DIR", "")):
        path = os.path.realpath(name) if name.startswith("/") else ""
        covered = any(_within(path, d) for d in (*found, "/tmp"))
        if path not in ("", "/") and not covered and os.path.isdir(path):
            found.append(path)
    return tuple(found)


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


# Places other programs share: a workspace is none of them and holds none of them (a bind of
# it would cover the sandbox's private /tmp and /dev/shm, and a command's `rm -rf *` in it
# would reach everyone's files).
SHARED_PLACES: Final = ("/tmp", "/var/tmp", "/dev/shm", "/run")
# The kernel's and the system's own: a workspace never lies in one (a writable bind of
# /proc/sys/kernel re-opens the sysctls the read-only /proc closed).
SYSTEM_PLACES: Final = ("/proc", "/sys", "/dev", "/boot", "/etc")
_FIX: Final = "start harness in a directory of the project (mktemp -d makes a scratch one)"


def workspace_problem(path: str) -> str | None:
    """Why the working directory `path` cannot be a sandbox's workspace, in one line naming
    it; None when it can. Links are followed: a link to /tmp is /tmp."""
    real = os.path.realpath(path)
    named = path if real == path else f"{path} (that is {real})"
    shared = next((p for p in _real(SHARED_PLACES) if _within(p, real)), None)
    system = next((p for p in _real(SYSTEM_PLACES) if _within(real, p)), None)
    if real == "/":
        why = "it is the whole file system, /tmp and /dev/shm of every program included"
    elif shared is not None:
        held = "it is" if shared == real else "it holds"
        why = f"{held} {shared}, where other programs keep their files"
    elif system is not None:
        why = f"it lies in {system}, the system's own, which the sandbox keeps read-only"
    else:
        return None
    return f"the working directory {named} cannot be the sandbox's workspace: {why}; {_FIX}"


def _real(places: Sequence[str]) -> list[str]:
    """`places` as named and, where one is a link (/var/run), as the place it leads to."""
    return list(dict.fromkeys([*places, *(os.path.realpath(p) for p in places)]))


def _marked(scratch: str, mark: str) -> tuple[str, ...]:
    """The bubblewrap arguments that make the directory `mark` in the tmpfs just mounted at
    `scratch`: the server reads the tmpfs's device from it (its own, whatever covers it)."""
    return ("--dir", f"{scratch}/{_sandbox_server.MARK_PREFIX}{mark}") if mark else ()


def _kept(keep: Sequence[str], hidden: Sequence[str]) -> list[str]:
    """`keep`, and the resolver configuration when a hidden directory holds it
    (/etc/resolv.conf is often a link into /run), which a command with the network needs."""
    resolver = os.path.realpath("/etc/resolv.conf")
    under = any(_within(resolver, d) for d in hidden)
    return [*keep, resolver] if under and os.path.isfile(resolver) else list(keep)


def _runtime_under_tmp() -> tuple[str, ...]:
    """The interpreter's installation when it lives under /tmp, which the sandbox replaces
    with an empty one (a Python unpacked in a temporary directory): bound read-only."""
    prefix = os.path.realpath(sys.base_prefix)
    return (prefix,) if prefix == "/tmp" or prefix.startswith("/tmp/") else ()


def program_interpreter(executable: str) -> str | None:
    """The program interpreter an ELF `executable` names (PT_INTERP: its dynamic loader);
    None for a statically linked program or one that is not ELF."""
    with open(executable, "rb") as file:
        head = file.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF":
            return None
        wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
        # ELF64 / ELF32: e_phoff, e_phentsize, e_phnum; a header's p_type, p_offset, p_filesz.
        header, entry = ("Q14xHH", "I4xQ16xQ") if wide else ("I10xHH", "II8xI")
        table, size, count = struct.unpack_from(order + header, head, 32 if wide else 28)
        file.seek(table)
        headers = file.read(size * count)
        for start in range(0, len(headers) - size + 1, size):
            kind, offset, length = struct.unpack_from(order + entry, headers, start)
            if kind == PT_INTERP:
                file.seek(offset)
                return file.read(length).rstrip(b"\0").decode()
    return None


@functools.cache
def _loader() -> str:
    """This Python's dynamic loader; OSError (why, in one line) for a static Python."""
    python = os.path.realpath(sys.executable)
    loader = program_interpreter(python)
    if loader is None:
        raise OSError(f"{python} has no dynamic loader; the sandbox needs one to start its server")
    return loader


class _Server:
    """One long-lived bubblewrap running `_sandbox_server` as its PID 1: one call at a time."""

    def __init__(self, sandbox: Sandbox, cwd: str, directory: os.stat_result) -> None:
        self.directory = (directory.st_dev, directory.st_ino)  # the one bound writable
        # Started through an execute-only copy of its loader: not dumpable (_sandbox_server).
        loader = os.open(_loader(), os.O_RDONLY | os.O_CLOEXEC)
        self.channel, inside = socket.socketpair()
        beats, self.beat = os.pipe()  # harness writes while it answers: _Heartbeat
        # The source on stdin, not in argv: `ps` shows `LOADER python -I -S - FD ...`, no file.
        # The base interpreter, not a virtual environment's link to it: the server needs only
        # the standard library (-I -S), and the environment may live where the sandbox
        # cannot see it.
        mark = secrets.token_hex(16)
        python = [LOADER, os.path.realpath(sys.executable), "-I", "-S", "-"]
        python += [str(inside.fileno()), str(beats), repr(sandbox.lapse), mark]
        # Processes and memory are capped by a cgroup the sandbox is started in (where one
        # can be made here: `harness sandbox-check` says).
        self.cgroup, _ = cgroup_for(sandbox.limits)
        with inside, _closed(beats), _closed(loader), _removed_on_error(self.cgroup, self.beat):
            argv = sandbox.wrap(python, cwd, _runtime_under_tmp(), mark, loader)
            self.process = subprocess.Popen(
                self.cgroup.enter(argv),
                pass_fds=(inside.fileno(), beats, loader),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                # Its own session: Ctrl-C at the terminal reaches harness, not the sandbox.
                start_new_session=True,
                # Nothing of harness's environment: the server's is readable in /proc inside.
                env={},
            )
        _heartbeat.add(self.beat, sandbox.lapse)
        assert self.process.stdin is not None
        # Far less than a pipe holds, so this never blocks. A bubblewrap that failed at once
        # has closed it: the call then reads the sandbox's end, with what it said.
        with contextlib.suppress(BrokenPipeError), self.process.stdin as source:
            source.write(_server_source())
        self.channel.setblocking(False)
        self.busy = True  # made for a call
        self.closed = False

    def idle(self, directory: os.stat_result) -> bool:
        """Free for a call in `directory` (not a new one made under the same name since)."""
        same = self.directory == (directory.st_dev, directory.st_ino)
        return same and not self.busy and not self.closed and self.process.poll() is None

    async def start(self, argv: list[str], cwd: str, env: Mapping[str, str]) -> _SandboxedCall:
        """Send the call; the server answers with its status when it is over."""
        request = json.dumps({"argv": argv, "cwd": cwd, "env": dict(env)}).encode()
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        call = _SandboxedCall(self, read_end)
        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(PROBE_TIMEOUT):
                fds = array.array("i", (write_end,))
                self.channel.sendmsg([b"c"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
                message = _sandbox_server.LENGTH.pack(len(request)) + request
                await _send_all(self.channel, message)
        except (OSError, TimeoutError):
            call.over = True  # nothing runs: the server is gone or not reading; `wait` says so
            self.close()
        finally:
            os.close(write_end)
        return call

    def why_ended(self) -> str:
        """One line: the sandbox's own last words, if it said any."""
        try:
            self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "the session's sandbox stopped answering"
        stderr = self.process.stderr
        assert stderr is not None
        said = b""
        if not self.closed and select.select([stderr], [], [], 0.5)[0]:
            said = os.read(stderr.fileno(), CHUNK)
        lines = said.decode("utf-8", "replace").strip().splitlines()
        last = f": {lines[-1]}" if lines else ""
        return f"the session's sandbox ended (exit status {self.process.returncode}){last}"

    def close(self) -> None:
        """End the sandbox and the call running in it, if any."""
        if self.closed:
            return
        self.closed = True
        self.channel.close()  # the server exits; bubblewrap's --die-with-parent backs it up
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        _heartbeat.drop(self.beat)
        self.cgroup.remove()
        if self.process.stderr is not None:
            self.process.stderr.close()


@contextlib.contextmanager
def _removed_on_error(cgroup: Cgroup, beat: int) -> Iterator[None]:
    try:
        yield
    except BaseException:
        cgroup.remove()
        os.close(beat)
        raise


@contextlib.contextmanager
def _closed(fd: int) -> Iterator[None]:
    try:
        yield
    finally:
        os.close(fd)


class _Heartbeat:
    """A thread of harness's own that writes a byte to every live sandbox's heartbeat pipe
    every `BEAT_SECONDS` (a quarter of the shortest lapse, if less). While harness answers,
    its sandboxes hear it; once it stops (SIGSTOP, a frozen machine) every thread of it
    stops with it, and each sandbox's server, outside harness's process, ends the sandbox
    when its lapse passes without a beat (`_sandbox_server.Watchdog`). So a turn recovered on
    another worker never runs beside a command still running for this one.

    Only this thread closes the pipes it writes: a sandbox dropped meanwhile (by the
    garbage collector, on any thread) is handed over, never closed under a write.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.lapses: dict[int, float] = {}  # write end of each live sandbox's pipe -> lapse
        self.dropped: list[int] = []
        self.woken = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, fd: int, lapse: float) -> None:
        os.set_blocking(fd, False)  # a server that does not read must not stop the beat
        with self.lock:
            self.lapses[fd] = lapse
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self.run, name="harness-sandbox-heartbeat", daemon=True
                )
                self.thread.start()
        self.woken.set()  # a shorter lapse may need a shorter beat

    def drop(self, fd: int) -> None:
        with self.lock:
            if self.lapses.pop(fd, None) is not None:
                self.dropped.append(fd)
        self.woken.set()

    def run(self) -> None:
        # Signals are the main thread's: a Ctrl-C the kernel handed to this thread would not
        # interrupt the main thread's read at the chat prompt, and the typed line would go.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        while True:
            with self.lock:
                dropped, self.dropped = self.dropped, []
                for fd in dropped:
                    os.close(fd)
                for fd in list(self.lapses):
                    with contextlib.suppress(OSError):  # full (a stopped server), or gone
                        os.write(fd, b".")
                period = min([BEAT_SECONDS, *(lapse / 4 for lapse in self.lapses.values())])
            self.woken.wait(period)
            self.woken.clear()


_heartbeat = _Heartbeat()


@functools.cache
def _server_source() -> bytes:
    """Read on the first sandboxed call, not when harness starts."""
    return Path(_sandbox_server.__file__).read_bytes()


async def _send_all(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            sent = sock.send(view)
        except BlockingIOError:
            await anyio.wait_writable(sock)
            continue
        view = view[sent:]


_Key = tuple[int, str, bool]  # id of the owner (0: none), working directory, network
_pools: dict[_Key, list[_Server]] = {}
# Owners are finalized on whichever thread drops them, and by the garbage collector, which
# may run inside `_server_for` itself: hence reentrant.
_lock = threading.RLock()


def _server_for(sandbox: Sandbox, cwd: str, directory: os.stat_result, owner: object) -> _Server:
    """An idle sandbox of the owner's for `cwd`: as many as calls run at once, each started
    on first need (again, after a crash) and kept for the owner's next calls."""
    key = (0 if owner is None else id(owner), cwd, sandbox.network)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = []
            if owner is not None:
                with contextlib.suppress(TypeError):  # without weak references: until exit
                    weakref.finalize(owner, _close, key, pool)
        for server in list(pool):
            if server.idle(directory):
                server.busy = True
                return server
            if not server.busy:  # crashed, or its directory was replaced
                pool.remove(server)
                server.close()
        server = _Server(sandbox, cwd, directory)
        pool.append(server)
        return server


def _close(key: _Key, pool: list[_Server]) -> None:
    with _lock:
        if _pools.get(key) is pool:
            del _pools[key]
        servers = list(pool)
    for server in servers:
        server.close()


def _close_all() -> None:
    with _lock:
        pools = list(_pools.items())
    for key, pool in pools:
        _close(key, pool)


atexit.register(_close_all)


def probe(network: bool = False) -> str | None:
    """None when bubblewrap can sandbox a command here; else why not, in one line."""
    # The kernel first: where it lacks pidfd_open, installing bubblewrap would not help.
    if (missing := _no_pidfd()) is not None:
        return missing
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = Sandbox("workspace", network).wrap(["true"], None)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = why[-1] if why else f"exit status {done.returncode}"
        return f"bwrap cannot create its namespaces here ({detail}); user namespaces may be off"
    return _server_problem(bwrap)


def _server_problem(bwrap: str) -> str | None:
    """Why the sandbox's server could not be kept out of its commands' reach here, or None."""
    if not bwrap_has(bwrap, "--perms"):
        return "bubblewrap has no --perms; the sandbox needs bubblewrap 0.5 or later"
    try:
        _loader()
    except OSError as exc:
        return str(exc)
    return _sandbox_server.traceable()


def describe_limits(limits: Limits) -> list[str]:
    """One line per cap of the sandbox: its value and whether it holds here."""
    return describe(limits, shutil.which("bwrap") or "bwrap")


def _no_pidfd() -> str | None:
    """Why the sandbox's server could not wait for a command here (it waits on a pidfd, which
    Linux has since 5.3), or None."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as exc:  # AttributeError: a Python built without it
        return f"this system has no pidfd_open ({exc}); the sandbox needs Linux 5.3 or later"
    return None


def resolve(
    flag: str | None,
    setting: str | None,
    network: bool,
    limits: Limits = DEFAULT_LIMITS,
    lapse: float = DEFAULT_LAPSE,
) -> tuple[Sandbox, str | None]:
    """The sandbox to use and a warning to print, if any.

    `flag` (--sandbox) wins over `setting` (HARNESS_SANDBOX, then config `sandbox`). Asked for
    explicitly, `workspace` where bubblewrap cannot run raises SandboxUnavailable; by default
    it falls back to `off` with a warning.
    """
    asked = flag or setting
    if asked == "off":
        return Sandbox("off", network, limits, lapse), None
    why = probe(network)
    if why is None:
        return Sandbox("workspace", network, limits, lapse), None
    if asked == "workspace":
        raise SandboxUnavailable(f"--sandbox workspace cannot run: {why}")
    warning = f"sandbox off: {why}; bash runs with your full rights"
    return Sandbox("off", network, limits, lapse), warning


_installed: Sandbox = Sandbox()


def install(sandbox: Sandbox) -> None:
    """Make `sandbox` the one tool processes of this process run in (ending the old one's)."""
    global _installed
    if sandbox != _installed:
        _close_all()
    _installed = sandbox


def current() -> Sandbox:
    """The installed sandbox; `off` until a host installs one (embedding hosts choose)."""
    return _installed
