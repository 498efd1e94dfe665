"""A batch sample's own workspace: a fresh copy of its line's template, made by the worker.

`harness batch` names each copy before anything is queued, since the session records where
its turn runs (`session/start` `cwd`): `$TMPDIR/harness-workspaces-UID/BATCH/POSITION-XXXXXX`,
TMPDIR as the batch was queued. The worker that runs the sample makes it just before the
turn, on its own machine: a git repository (a `.git` at the template's top) becomes a clone
of the commit its HEAD named when the batch was queued, with no remote, so nothing of the
copy is shared with the template or with another sample (a `git worktree` would share the
template's objects and refs); any other directory is copied as a tree, links kept as links.
After the check the copy is removed, unless the batch was queued with `--keep`.

Whoever can write the queue chooses a job, so the worker makes and removes only a path of
that exact shape, under a directory of its own user that no one else may write, which it
makes itself where it is missing: clean-up never reaches a user's files.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Final

from harness_core.runtime import SetupError

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["commit_of", "copy_path", "make", "remove", "root"]

ROOT_PREFIX: Final = "harness-workspaces-"
GIT_TIMEOUT: Final = 300.0


def root() -> Path:
    """Where this process's batches put their copies: private to its user, in TMPDIR."""
    return Path(tempfile.gettempdir()).resolve() / f"{ROOT_PREFIX}{os.getuid()}"


def copy_path(batch: str, position: int) -> str:
    """A new sample's copy, named before it exists (its session records it)."""
    return str(root() / batch / f"{position}-{secrets.token_hex(3)}")


def commit_of(template: str) -> str | None:
    """The commit a git repository's HEAD names (None: not the top of a repository)."""
    if not (Path(template) / ".git").exists():
        return None
    found = _git("-C", template, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if found.returncode != 0:
        raise ValueError(f"{template} is a git repository without a commit: commit the task first")
    return found.stdout.strip()


def make(job: Job, *, fresh: bool) -> None:
    """The job's copy, made anew when its turn has not started (a copy a worker that died
    before the turn left is replaced); one that must go on in it must still be there."""
    copy = _checked(job)
    if not fresh:
        if not copy.is_dir():
            raise SetupError(
                f"the sample's workspace {copy} is gone (its turn began on another machine, "
                f"or the copy was removed): `harness batch retry {job.batch}` runs it again"
            )
        return
    if copy.exists() or copy.is_symlink():
        _rmtree(copy)
    assert job.workspace is not None  # _checked refuses a job without one
    if job.commit is not None:
        _clone(job.workspace, job.commit, copy)
    else:
        try:
            shutil.copytree(job.workspace, copy, symlinks=True)
        except (OSError, shutil.Error) as exc:
            _rmtree(copy)
            raise SetupError(f"cannot copy the workspace {job.workspace}: {_reason(exc)}") from None


def remove(job: Job) -> bool:
    """Remove the job's copy, if it is there: whether it was."""
    copy = _checked(job)
    if not (copy.exists() or copy.is_symlink()):
        return False
    _rmtree(copy)
    with suppress(OSError):
        copy.parent.rmdir()  # the batch's directory, once its last copy went
    return True


def _checked(job: Job) -> Path:
    """The job's copy, once its path has the shape only `harness batch` gives it and its
    root is a directory of this user's that nobody else may write (made here if missing)."""
    if job.workspace is None or job.cwd is None or job.batch is None or job.position is None:
        raise SetupError("a workspace job names its template, its copy, its batch and position")
    copy = Path(job.cwd)
    shaped = (
        copy.is_absolute()
        and os.path.normpath(copy) == str(copy)
        and re.fullmatch(rf"{job.position}-[0-9a-f]{{6}}", copy.name) is not None
        and copy.parent.name == job.batch
        and copy.parent.parent.name.startswith(ROOT_PREFIX)
    )
    if not shaped:
        raise SetupError(f"{copy} is not a place for a batch's workspace copy")
    _private(copy.parent.parent)
    _own_directory(copy.parent)
    return copy


def _private(path: Path) -> None:
    """`path` exists, is a directory (not a link) of this user's, and only they may write it."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SetupError(f"cannot make {path} for the batch's workspaces: {_reason(exc)}") from None
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise SetupError(
            f"{path} is not a directory of this user's that only they can write: the "
            "workspace copies are not made there (remove it, or queue with another TMPDIR)"
        )


def _own_directory(path: Path) -> None:
    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise SetupError(f"cannot make {path} for the batch's workspaces: {_reason(exc)}") from None
    if not stat.S_ISDIR(path.lstat().st_mode):
        raise SetupError(f"{path} is not a directory: the workspace copies are not made there")


def _clone(template: str, commit: str, copy: Path) -> None:
    steps = (
        ("clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", template, str(copy)),
        ("-C", str(copy), "checkout", "--quiet", "--detach", commit),
        ("-C", str(copy), "remote", "remove", "origin"),
    )
    for step in steps:
        done = _git(*step)
        if done.returncode != 0:
            _rmtree(copy)
            why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            raise SetupError(f"cannot copy commit {commit[:12]} of {template}: {why[0]}")


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"git {args[0]} did not run: {exc}") from None


def _rmtree(path: Path) -> None:
    """Remove `path` (a link as a link), even where the sample took away its write bits."""

    def writable(function: object, name: str, exc: BaseException) -> None:
        del function
        if not isinstance(exc, PermissionError):
            raise exc
        os.chmod(os.path.dirname(name), 0o700)
        if os.path.isdir(name) and not os.path.islink(name):
            os.chmod(name, 0o700)
            shutil.rmtree(name)
        else:
            os.unlink(name)

    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    shutil.rmtree(path, onerror=lambda f, n, e: writable(f, n, e[1]))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, shutil.Error):
        first = exc.args[0][0] if exc.args and exc.args[0] else None
        return str(first[2]) if first else str(exc)
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or exc}: {exc.filename}"
    return str(exc)
