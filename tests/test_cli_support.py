"""Helpers the CLI tests share (no tests here): run `harness` as a user does, in a subprocess
with pipes or in a real pseudo-terminal read through the pyte terminal emulator."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pyte
import pytest

HARNESS = str(Path(sys.executable).with_name("harness"))
REPO = Path(__file__).resolve().parents[1]


def run_cli(
    *args: str,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`harness ARGS` with pipes (so not a TTY); `env` entries of None are removed."""
    return subprocess.run(
        [HARNESS, *args],
        env=child_env(env),
        input=input,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def child_env(overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # A developer's keys and settings never reach the CLI under test.
    for provider in ("OPENAI", "DEEPSEEK"):
        for suffix in ("API_KEY", "BASE_URL", "MODEL"):
            env.pop(f"{provider}_{suffix}", None)
    for name in (
        "HARNESS_DEBUG",
        "HARNESS_MAX_STEPS",
        "HARNESS_SYSTEM_PROMPT",
        "HARNESS_APPROVAL",
        "HARNESS_SANDBOX",
        "NO_COLOR",
    ):
        env.pop(name, None)
    for name, value in (overrides or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def write_script(path: Path, steps: Sequence[Mapping[str, Any]]) -> str:
    """Write a scripted-model file (docs/loop.md) and return its `--model` spec."""
    path.write_text(json.dumps({"steps": list(steps)}), encoding="utf-8")
    return f"scripted:{path}"


def todo_call(*items: tuple[str, str]) -> dict[str, Any]:
    """A scripted todo_write call from (content, status) pairs."""
    todos = [{"content": content, "status": status} for content, status in items]
    return {"name": "todo_write", "arguments": {"todos": todos}}


def bash_call(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def session_ids(home: Path) -> list[str]:
    """Session ids under `home`, oldest first by their session/start `created` time.

    Ids start with their creation second only: two sessions made in one second would sort by
    their random suffix.
    """

    def created(path: Path) -> str:
        try:
            with path.open("rb") as handle:
                return str(json.loads(handle.readline())["data"]["created"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""  # not a session (a test's garbage file): first

    paths = (home / "sessions").glob("*.jsonl")
    return [p.stem for p in sorted(paths, key=lambda p: (created(p), p.stem))]


def read_events(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


# What harness says where bubblewrap cannot run (sandbox.resolve's fallback).
SANDBOX_OFF = "harness: warning: sandbox off: "


def own_stderr(text: str) -> str:
    """`text` less the warning a machine without bubblewrap adds: a test that compares stderr
    and is not about the sandbox then has the same outcome with or without bubblewrap."""
    return "".join(line for line in text.splitlines(True) if not line.startswith(SANDBOX_OFF))


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The failure's stderr, asserted to be exactly one `harness: error:` line (besides the
    warning of a machine without bubblewrap)."""
    assert result.returncode != 0, result.stdout
    lines = own_stderr(result.stderr).splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("harness: error: "), lines[0]
    return lines[0]


# select() and pselect6() by machine: what /proc/PID/syscall shows while readline waits.
_SELECT_CALLS: Final = {"x86_64": {"23", "270"}, "aarch64": {"72"}}


class Terminal:
    """`harness ARGS` on a real pseudo-terminal, its output fed to a pyte screen."""

    def __init__(
        self,
        *args: str,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
        columns: int = 100,
        rows: int = 40,
    ) -> None:
        self.screen = pyte.Screen(columns, rows)
        self._stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self.status: int | None = None
        # On a terminal the approval policy defaults to ask; tests that are not about approval
        # let tools run (an approval test passes --approval, which wins, or unsets this).
        defaults = {"TERM": "xterm-256color", "NO_COLOR": None, "HARNESS_APPROVAL": "auto"}
        environment = child_env({**defaults, **(env or {})})
        environment.pop("COLUMNS", None)
        environment.pop("LINES", None)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        # A session of its own with the terminal as its controlling one, as a login shell
        # would: Ctrl-C typed into the terminal then reaches harness as SIGINT.
        self.process = subprocess.Popen(
            [HARNESS, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=environment,
            start_new_session=True,
            preexec_fn=_take_controlling_terminal,
        )
        os.close(slave)
        self.fd = master

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(self.lines).rstrip()

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def expect(self, wanted: str | Callable[[Terminal], bool], timeout: float = 30) -> None:
        """Read output until the screen shows `wanted` (or the predicate holds)."""

        def done() -> bool:
            if not callable(wanted):
                return wanted in self.text
            try:
                return wanted(self)
            except (AssertionError, IndexError):  # not on screen yet
                return False

        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline or not self._read(deadline - time.monotonic()):
                self.kill()
                raise AssertionError(f"never saw {wanted!r}; the screen:\n{self.text}")

    def wait_reading(self, timeout: float = 30) -> None:
        """Wait until the program's main thread sleeps in select() on its stdin: readline is
        waiting for a key, as a person at the prompt would see it.

        CPython's readline checks for signals only when that select() is interrupted, so a
        Ctrl-C that lands while the main thread is between two selects (echoing the last key,
        say) waits for the next key. A person is never that quick; a test on a loaded machine
        is, so it types only once the program is reading."""
        deadline = time.monotonic() + timeout
        calls = _SELECT_CALLS[platform.machine()]
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{self.process.pid}/syscall").read_text().split()
                if fields[:2] and fields[0] in calls and fields[1] == "0x1":  # nfds: stdin
                    return
            time.sleep(0.01)
        raise AssertionError(f"the program never waited for a key; the screen:\n{self.text}")

    def wait(self, timeout: float = 60) -> int:
        """Read until the program exits; its exit status."""
        deadline = time.monotonic() + timeout
        while self._read(deadline - time.monotonic()):
            pass
        if time.monotonic() > deadline:
            self.process.send_signal(signal.SIGKILL)
        self.status = self.process.wait()
        os.close(self.fd)
        return self.status

    def kill(self) -> None:
        """End the program (a failed expectation): no process outlives its test."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        os.close(self.fd)

    def _read(self, timeout: float) -> bool:
        """Feed what arrives within `timeout`; False at the end of output or on timeout."""
        if timeout <= 0:
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.raw += data
        self._stream.feed(data)
        return True

    def row_of(self, text: str) -> int:
        """The screen row showing `text` (the last one, if several do)."""
        rows = [number for number, line in enumerate(self.lines) if text in line]
        assert rows, f"{text!r} is not on the screen:\n{self.text}"
        return rows[-1]

    def style_at(self, row: int, text: str) -> pyte.screens.Char:
        """The character cell where `text` starts on `row`."""
        column = self.lines[row].index(text)
        return self.screen.buffer[row][column]


def _take_controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def npm_binary(package: str, binary: str, needed_by: str) -> str:
    """`binary` of the npm `package` (NAME@VERSION), installed once into the user's cache,
    under a lock (xdist's workers may ask at once); the test fails, saying why, where npm is
    missing or cannot install it."""
    prefix = Path.home() / ".cache" / "harness-tests" / package.lstrip("@").replace("/", "-")
    path = prefix / "node_modules" / ".bin" / binary
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.with_name(f"{prefix.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return str(path)
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(f"npm is not installed ({needed_by} needs it): ./scripts/test installs it")
        installed = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", package],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if installed.returncode != 0 or not path.exists():
            pytest.fail(f"npm could not install {package}: {installed.stderr.strip()[-300:]}")
    return str(path)
