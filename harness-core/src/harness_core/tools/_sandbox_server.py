"""The long-lived inside of a workspace sandbox: one bubblewrap that runs call after call.

harness runs this file as `bwrap --as-pid-1 ... python -I -S - FD`, its source on stdin
(standard library only, no import of harness, nothing read from the file system), so this
process is PID 1 of the sandbox's PID namespace. FD is a stream socket to harness. For each
call harness sends b"c" carrying the write end of the call's output pipe, then the request (a
4-byte length, then JSON `{"argv", "cwd", "env"}`); anything it sends later (or closing the
socket) kills the call. The server starts the command, waits for it, then kills and reaps every
other process in the namespace, empties /tmp and /dev/shm, and only then answers with the exit
status (4 bytes): each call starts in an empty sandbox, as if bubblewrap had been started for
it alone.

Being PID 1 protects the server: the kernel drops the signals a command sends it (SIGKILL and
SIGSTOP included), and it is not dumpable, so a command (with no capabilities: bubblewrap drops
them all) can neither trace it nor read its memory or descriptors through /proc. When it ends,
for whatever reason, the kernel ends every process in the sandbox.
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import select
import signal
import socket
import stat
import struct
import sys

PR_SET_DUMPABLE = 4
LENGTH = struct.Struct("!I")
STATUS = struct.Struct("!i")
SCRATCH = ("/tmp", "/dev/shm")  # the writable places a call may leave things in


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code  # killed by a signal: 128 + its number, as a shell


def _exactly(source: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = source.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _receive_call(channel: socket.socket) -> tuple[int, dict[str, object]] | None:
    """The next call's output descriptor and request; None once harness is done."""
    fds = array.array("i")
    message = b"k"
    while message == b"k":  # a kill that came after its call had ended: nothing to do
        message, ancillary, _, _ = channel.recvmsg(
            1, socket.CMSG_SPACE(fds.itemsize), socket.MSG_CMSG_CLOEXEC
        )
        for level, kind, data in ancillary:
            if (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS):
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if message != b"c" or len(fds) != 1:
        return None
    request = json.loads(_exactly(channel, LENGTH.unpack(_exactly(channel, LENGTH.size))[0]))
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


def _run(channel: socket.socket, request: dict[str, object], output: int) -> tuple[int, bool]:
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
        ready, _, _ = select.select([pidfd, channel.fileno()], [], [])
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


def serve(channel: socket.socket) -> None:
    scratch = [(path, os.stat(path).st_dev) for path in SCRATCH]
    while True:
        call = _receive_call(channel)
        if call is None:
            return
        code, gone = _run(channel, call[1], call[0])
        _end_the_rest()
        for path, device in scratch:
            _empty(path, device)
        if gone:
            return
        channel.sendall(STATUS.pack(code))


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    channel.set_inheritable(False)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.exit(f"sandbox server: prctl: {os.strerror(ctypes.get_errno())}")
    try:
        serve(channel)
    except (OSError, EOFError, ValueError) as exc:
        sys.exit(f"sandbox server: {exc}")  # harness names this line when the call fails


if __name__ == "__main__":
    main()
