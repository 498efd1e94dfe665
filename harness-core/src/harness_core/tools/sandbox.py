"""The sandbox tool processes run in: `workspace` (bubblewrap) or `off`.

Under `workspace` a command sees the whole file system read-only except the session's working
directory and a private, empty /tmp; it gets its own PID namespace (nothing it starts outlives
it, and no other process, such as harness itself with its keys, is visible in /proc) and, unless
`sandbox_network = true`, its own network namespace with nothing but a down loopback.

The host resolves the mode once (`resolve`: the flag, else HARNESS_SANDBOX / config `sandbox`,
else `workspace` where bubblewrap works) and installs it; the bash tool, in every agent and
subagent of the process, wraps its command through `current()`.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["MODES", "Sandbox", "SandboxUnavailable", "current", "install", "probe", "resolve"]

Mode = Literal["workspace", "off"]
MODES: Final = ("workspace", "off")
PROBE_TIMEOUT: Final = 10.0


class SandboxUnavailable(Exception):
    """`--sandbox workspace` was asked for where bubblewrap cannot run."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    mode: Mode = "off"
    network: bool = False

    def wrap(self, argv: list[str], cwd: str) -> list[str]:
        """`argv` as run in this sandbox with `cwd` writable (unchanged when off)."""
        if self.mode == "off":
            return argv
        bwrap = shutil.which("bwrap") or "bwrap"
        # Order matters: the private /tmp is mounted before the workspace, so a workspace
        # under /tmp is bound on top of it instead of being hidden by it.
        return [
            bwrap,
            *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"),
            *("--bind", cwd, cwd, "--chdir", cwd),
            *(() if self.network else ("--unshare-net",)),
            *("--unshare-pid", "--die-with-parent", "--new-session"),
            "--",
            *argv,
        ]


def probe(network: bool = False) -> str | None:
    """None when bubblewrap can sandbox a command here; else why not, in one line."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = Sandbox("workspace", network).wrap(["true"], "/")
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = why[-1] if why else f"exit status {done.returncode}"
        return f"bwrap cannot create its namespaces here ({detail}); user namespaces may be off"
    return None


def resolve(flag: str | None, setting: str | None, network: bool) -> tuple[Sandbox, str | None]:
    """The sandbox to use and a warning to print, if any.

    `flag` (--sandbox) wins over `setting` (HARNESS_SANDBOX, then config `sandbox`). Asked for
    explicitly, `workspace` where bubblewrap cannot run raises SandboxUnavailable; by default
    it falls back to `off` with a warning.
    """
    asked = flag or setting
    if asked == "off":
        return Sandbox("off", network), None
    why = probe(network)
    if why is None:
        return Sandbox("workspace", network), None
    if asked == "workspace":
        raise SandboxUnavailable(f"--sandbox workspace cannot run: {why}")
    return Sandbox("off", network), f"sandbox off: {why}; bash runs with your full rights"


_installed: Sandbox = Sandbox()


def install(sandbox: Sandbox) -> None:
    """Make `sandbox` the one tool processes of this process run in."""
    global _installed
    _installed = sandbox


def current() -> Sandbox:
    """The installed sandbox; `off` until a host installs one (embedding hosts choose)."""
    return _installed
