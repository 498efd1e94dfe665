"""What one workspace sandbox may use: the size of its temporary file systems, its processes
and its memory.

The temporary file systems are capped by bubblewrap (`--size` on each tmpfs). Processes and
memory are capped by a cgroup of the sandbox's own, which every process in it joins before
bubblewrap starts: cgroup v2 where the machine's controllers are there (made under the
hierarchy's root, which needs root), else the v1 `pids` and `memory` hierarchies (made under
harness's own cgroup in each). RLIMIT_NPROC would not do: the kernel never applies it to
uid 0, and it counts every process of the user, not the sandbox's. Where no cgroup can be
made the sandbox still runs, uncapped there; `harness sandbox-check` says which caps hold.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Cgroup", "Limits", "bwrap_has", "cgroup_for", "describe", "tmpfs_sizes"]

MiB: Final = 1 << 20
GiB: Final = 1 << 30
# Far above what a build or a test run uses, far below what takes a machine down.
DEFAULT_TMP: Final = 2 * GiB
DEFAULT_SHM: Final = 512 * MiB
DEFAULT_MEMORY: Final = 8 * GiB
DEFAULT_PROCESSES: Final = 4096
PARENT: Final = "harness-sandbox"
CONTROLLERS: Final = ("pids", "memory")


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps of one sandbox; 0 leaves that resource uncapped."""

    tmp: int = DEFAULT_TMP  # bytes of /tmp
    shm: int = DEFAULT_SHM  # bytes of /dev/shm
    memory: int = DEFAULT_MEMORY  # bytes of memory of all its processes (tmpfs pages included)
    processes: int = DEFAULT_PROCESSES  # processes and threads at once


DEFAULT_LIMITS: Final = Limits()


def size_text(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"


@functools.cache
def _bwrap_help(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def bwrap_has(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap has `option` (`--size`: 0.8 and later; `--perms`: 0.5)."""
    return f"{option} " in _bwrap_help(bwrap)


def tmpfs_sizes(bwrap: str, size: int) -> tuple[str, ...]:
    """The arguments that cap the next `--tmpfs` of `bwrap` at `size` bytes, where it can."""
    return ("--size", str(size)) if size and bwrap_has(bwrap, "--size") else ()


# -- cgroups ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Hierarchy:
    version: int
    directory: Path  # where this process's sandboxes' cgroups go (not made yet)


@functools.cache
def _hierarchies() -> dict[str, _Hierarchy]:
    """For each controller harness caps, the hierarchy that has it here (v2 first)."""
    mounts: dict[str, tuple[str, str]] = {}  # "2" or a v1 controller -> (mount point, its root)
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as lines:
        for line in lines:
            fields, _, rest = line.partition(" - ")
            kind, _, options = [*rest.split(), "", "", ""][:3]
            root, point = fields.split()[3:5]
            if kind == "cgroup2":
                mounts["2"] = (point, root)
            elif kind == "cgroup":
                mounts.update({name: (point, root) for name in options.split(",")})
    found: dict[str, _Hierarchy] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as lines:
        for line in lines:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else ["2"]:
                if name in mounts:
                    found.update(_placed(name, path, *mounts[name]))
    return found


def _placed(name: str, path: str, point: str, root: str) -> dict[str, _Hierarchy]:
    if name != "2":
        if name not in CONTROLLERS:
            return {}
        own = Path(point, os.path.relpath(path, root))  # v1: under harness's own cgroup
        return {name: _Hierarchy(1, own / PARENT)}
    # v2: a cgroup holding processes cannot hand controllers to children, so the sandboxes'
    # parent hangs off the hierarchy's root, whose controllers are the machine's.
    try:
        offered = Path(point, "cgroup.controllers").read_text().split()
    except OSError:
        return {}
    return {c: _Hierarchy(2, Path(point, PARENT)) for c in CONTROLLERS if c in offered}


def _settings(limits: Limits, controller: str, version: int) -> list[tuple[str, int]]:
    """(file, value) pairs capping `controller`: the swap file last, best effort."""
    if controller == "pids":
        return [("pids.max", limits.processes)] if limits.processes else []
    if not limits.memory:
        return []
    if version == 2:
        return [("memory.max", limits.memory), ("memory.swap.max", 0)]
    swap = "memory.memsw.limit_in_bytes"  # memory and swap together, where swap is accounted
    return [("memory.limit_in_bytes", limits.memory), (swap, limits.memory)]


_serial = itertools.count()


class Cgroup:
    """The cgroup directories of one sandbox (one per hierarchy), made and capped."""

    def __init__(self, directories: Sequence[Path]) -> None:
        self.directories = tuple(directories)

    def enter(self, argv: list[str]) -> list[str]:
        """`argv` started by a shell that first moves itself into every directory: whatever
        it execs, and every process that starts, is counted from its very first fork."""
        if not self.directories:
            return argv
        join = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'  # noqa: E501
        procs = [str(d / "cgroup.procs") for d in self.directories]
        return ["/bin/sh", "-c", join, "sh", str(len(procs)), *procs, *argv]

    def remove(self) -> None:
        """Remove the directories once the sandbox's processes are gone (they go with its
        PID 1, but the kernel may take a moment to release the last of them)."""
        for directory in self.directories:
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def cgroup_for(limits: Limits) -> tuple[Cgroup, dict[str, str]]:
    """A new cgroup capping processes and memory as `limits` says, and for each cap that could
    not be set here, why not (the sandbox then runs without it)."""
    made: dict[Path, None] = {}
    failed: dict[str, str] = {}
    for controller in CONTROLLERS:
        hierarchy = _hierarchies().get(controller)
        settings = _settings(limits, controller, hierarchy.version if hierarchy else 0)
        if not settings:
            continue
        if hierarchy is None:
            failed[controller] = f"no cgroup hierarchy here has the {controller} controller"
            continue
        directory = hierarchy.directory / f"{os.getpid()}-{next(_serial)}"
        try:
            _make(hierarchy, directory, controller)
            for file, value in settings:
                _write(directory / file, value, required=file == settings[0][0])
        except OSError as exc:
            where = hierarchy.directory.parent
            failed[controller] = f"cannot make a cgroup in {where}: {exc.strerror}"
            with contextlib.suppress(OSError):
                directory.rmdir()
            continue
        made[directory] = None
    return Cgroup(list(made)), failed


def _make(hierarchy: _Hierarchy, directory: Path, controller: str) -> None:
    parent = hierarchy.directory
    if not parent.is_dir():
        parent.mkdir()
        _sweep(parent)
    if hierarchy.version == 2:
        # The controllers must be handed down to the parent's children at each level.
        for level in (parent.parent, parent):
            enabled = (level / "cgroup.subtree_control").read_text().split()
            if controller not in enabled:
                (level / "cgroup.subtree_control").write_text(f"+{controller}")
    directory.mkdir(exist_ok=True)


def _write(path: Path, value: int, required: bool) -> None:
    try:
        path.write_text(str(value))
    except OSError:
        if required:  # the swap caps are missing where the kernel keeps no swap accounting
            raise


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups of harness processes that died without removing theirs."""
    for child in parent.iterdir():
        pid = child.name.partition("-")[0]
        if child.is_dir() and pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                child.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe(limits: Limits, bwrap: str) -> list[str]:
    """One line a cap: its value, and whether it holds here (made and removed, to be sure)."""
    cgroup, failed = cgroup_for(limits)
    cgroup.remove()
    versions = {c: h.version for c, h in _hierarchies().items()}
    lines = []
    for name, size in (("/tmp", limits.tmp), ("/dev/shm", limits.shm)):
        held = "held (tmpfs size)" if tmpfs_sizes(bwrap, size) else "not held: bwrap has no --size"
        lines.append(f"{name}: {size_text(size)}, {held}" if size else f"{name}: not capped")
    for name, controller, cap, text in (
        ("processes", "pids", limits.processes, str(limits.processes)),
        ("memory", "memory", limits.memory, size_text(limits.memory)),
    ):
        if not cap:
            lines.append(f"{name}: not capped")
        elif controller in failed:
            lines.append(f"{name}: {text}, not held: {failed[controller]}")
        else:
            lines.append(f"{name}: {text}, held (cgroup v{versions[controller]} {controller})")
    return lines
