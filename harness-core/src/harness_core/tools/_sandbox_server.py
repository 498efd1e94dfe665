"""The long-lived inside of a workspace sandbox: one bubblewrap that runs call after call.

harness runs this file as `bwrap --as-pid-1 ... LOADER python -I -S - FD BEATS LAPSE MARK`,
its source on stdin (standard library only, no import of harness, nothing read from the file
system), so this process is PID 1 of the sandbox's PID namespace. FD is a stream socket to
harness; BEATS the read end of a pipe harness writes a byte to every second or so while it
answers. For each call harness sends b"c" carrying the write end of the call's output pipe,
then the request (a 4-byte length, then JSON `{"argv", "cwd", "env"}`); anything it sends
later (or closing the socket) kills the call. The server starts the command, waits for it,
then kills and reaps every other process in the namespace, empties /tmp and /dev/shm, and
only then answers with the exit status (4 bytes): each call starts in an empty sandbox, as
if bubblewrap had been started for it alone.

Emptying deletes files, so it touches only the sandbox's own tmpfs mounts: bubblewrap makes
the directory `MARK_PREFIX + MARK` in each right after mounting it, the server takes each
tmpfs's device from that directory (whatever may be mounted over the place since) and
deletes nothing on any other device. No mark, no server: it would rather not run than
guess.

The server ends the sandbox when harness stops answering: LAPSE seconds without a byte on
BEATS (harness stopped or frozen), or the pipe closed (harness gone). It has one thread, and
every wait of it listens to BEATS too (`Watchdog.wait`), so it notices within the lapse
whatever it waits for, and leaves as any program does; as PID 1 it takes every process of
the sandbox with it.

Being PID 1 protects the server: the kernel drops the signals a command sends it (SIGKILL and
SIGSTOP included; the server installs no handler, which would let its signal through). And
the server is not dumpable, so a command (its user, no capabilities: bubblewrap drops them
all) can neither trace it (stop it, steer it, read later calls' requests) nor read its memory
or reopen its descriptors through /proc (BEATS for writing: forged beats would keep the sandbox
alive after harness stopped). The kernel makes it so, with no call of the server's: a process
that execs a file it cannot read is not dumpable (prctl(2), "PR_SET_DUMPABLE"), and harness
starts this Python through an execute-only copy of its ELF loader (`sandbox.LOADER`). Where
fs.suid_dumpable is 1 such a process stays dumpable: the server then refuses to run
(`traceable`). When the server ends, for whatever reason, the kernel ends every process in
the sandbox.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import time

LENGTH = struct.Struct("!I")
STATUS = struct.Struct("!i")
SCRATCH = ("/tmp", "/dev/shm")  # the writable places a call may leave things in
MARK_PREFIX = ".harness-sandbox-"
EXIT_LAPSED = 3
SUID_DUMPABLE = "/proc/sys/fs/suid_dumpable"


def traceable(setting: str = SUID_DUMPABLE) -> str | None:
    """Why a process that execs a file it cannot read would stay dumpable here, or None."""
    try:
        with open(setting) as file:
            value = file.read().strip()
    except OSError as exc:
        return f"cannot read fs.suid_dumpable, so cannot keep commands from tracing it ({exc})"
    if value == "1":
        return "fs.suid_dumpable is 1 here, so commands could trace the sandbox's server"
    return None


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code  # killed by a signal: 128 + its number, as a shell


class Watchdog:
    """Harness's heartbeat: `wait` hears it while it waits for anything else."""

    def __init__(self, beats: int, lapse: float) -> None:
        self.beats, self.lapse = beats, lapse
        self.heard = time.monotonic()

    def wait(self, fds: list[int]) -> list[int]:
        """Those of `fds` that are ready, once one is; SystemExit (the sandbox ends) once
        harness has been silent for the lapse, or is gone."""
        while True:
            left = self.heard + self.lapse - time.monotonic()
            ready, _, _ = select.select([*fds, self.beats], [], [], max(left, 0))
            if self.beats in ready:
                if not os.read(self.beats, 4096):
                    raise SystemExit(0)  # harness is gone: --die-with-parent ends bubblewrap too
                self.heard = time.monotonic()
            elif time.monotonic() - self.heard >= self.lapse:
                why = f"harness did not answer for {self.lapse:g} s (stopped or frozen)"
                os.write(2, f"sandbox server: {why}: every process in the sandbox ended\n".encode())
                raise SystemExit(EXIT_LAPSED)
            if mine := [fd for fd in ready if fd != self.beats]:
                return mine


def _exactly(source: socket.socket, size: int, watchdog: Watchdog) -> bytes:
    data = bytearray()
    while len(data) < size:
        watchdog.wait([source.fileno()])
        chunk = source.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _receive_call(
    channel: socket.socket, watchdog: Watchdog
) -> tuple[int, dict[str, object]] | None:
    """The next call's output descriptor and request; None once harness is done."""
    fds = array.array("i")
    message = b"k"
    while message == b"k":  # a kill that came after its call had ended: nothing to do
        watchdog.wait([channel.fileno()])
        message, ancillary, _, _ = channel.recvmsg(
            1, socket.CMSG_SPACE(fds.itemsize), socket.MSG_CMSG_CLOEXEC
        )
        for level, kind, data in ancillary:
            if (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS):
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if message != b"c" or len(fds) != 1:
        return None
    size = LENGTH.unpack(_exactly(channel, LENGTH.size, watchdog))[0]
    request = json.loads(_exactly(channel, size, watchdog))
    return fds[0], request


def _program(name: str, env: dict[str, str]) -> str:
    """`name` looked up on the command's own PATH, as execvp would."""
    if "/" in name:
        return name
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return name


def _spawn(request: dict[str, object], output: int) -> int:
    """Start the command as the leader of a new session, output to `output`; its pid."""
    argv, cwd, env = request["argv"], request["cwd"], request["env"]
    assert isinstance(argv, list) and isinstance(cwd, str) and isinstance(env, dict)
    os.chdir(cwd)
    return os.posix_spawn(
        _program(argv[0], env),
        argv,
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, output, 1),
            (os.POSIX_SPAWN_DUP2, output, 2),
        ],
        setsid=True,
        # Python ignores SIGPIPE and SIGXFSZ; a shell started by harness has the defaults.
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT),
        setsigmask=(),
    )


def _run(
    channel: socket.socket, request: dict[str, object], output: int, watchdog: Watchdog
) -> tuple[int, bool]:
    """The command's exit status, and whether harness has gone away meanwhile."""
    try:
        command = _spawn(request, output)
    except (OSError, KeyError, AssertionError) as exc:
        os.write(output, f"sandbox: cannot start the command: {exc}\n".encode())
        return 127, False
    finally:
        os.close(output)
    pidfd = os.pidfd_open(command)
    try:
        ready = watchdog.wait([pidfd, channel.fileno()])
    finally:
        os.close(pidfd)
    gone = False
    if channel.fileno() in ready:  # a kill, or harness gone: the command goes with everything else
        gone = channel.recv(64) == b""
        os.kill(command, signal.SIGKILL)
    _, status = os.waitpid(command, 0)
    return exit_code(status), gone


def _end_the_rest() -> None:
    """Kill every process of the sandbox but this one, and reap them all (orphans are ours)."""
    try:
        os.kill(-1, signal.SIGKILL)  # from PID 1: everyone else in the namespace, at once
    except ProcessLookupError:
        return
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def _empty(directory: str, device: int) -> None:
    """Remove what a call left under `directory`, never crossing into another mount (the
    workspace itself may be mounted under /tmp)."""
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
                if info.st_dev != device:
                    continue  # a mount point: the workspace, or a directory above it
                if stat.S_ISDIR(info.st_mode):
                    os.chmod(entry.path, 0o700)  # a call may have locked itself out of it
                    _empty(entry.path, device)
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue  # a directory holding the workspace's mount point stays


def own_scratch(mark: str) -> list[tuple[str, int]]:
    """Each scratch place with the device of the tmpfs bubblewrap mounted there for this
    sandbox, read from the mark it made in it (then removed: commands never see it)."""
    found = []
    for path in SCRATCH:
        marked = os.path.join(path, MARK_PREFIX + mark)
        try:
            info = os.stat(marked, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise OSError(f"{path} is not the sandbox's own (something covers it): not serving")
        os.rmdir(marked)
        found.append((path, info.st_dev))
    return found


def serve(channel: socket.socket, scratch: list[tuple[str, int]], watchdog: Watchdog) -> None:
    while True:
        call = _receive_call(channel, watchdog)
        if call is None:
            return
        code, gone = _run(channel, call[1], call[0], watchdog)
        _end_the_rest()
        for path, device in scratch:
            _empty(path, device)
        if gone:
            return
        channel.sendall(STATUS.pack(code))


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    channel.set_inheritable(False)
    beats, lapse, mark = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    os.set_inheritable(beats, False)  # a command neither reads nor holds it
    if (why := traceable()) is not None:
        sys.exit(f"sandbox server: {why}")
    try:
        serve(channel, own_scratch(mark), Watchdog(beats, lapse))
    except (OSError, EOFError, ValueError) as exc:
        sys.exit(f"sandbox server: {exc}")  # harness names this line when the call fails


if __name__ == "__main__":
    main()
