"""`harness store copy`: sessions from one store to another, as the very lines they hold.

A session is copied as its stored envelope lines, never re-encoded, so file -> Postgres ->
file gives back byte-identical files. Each session is compared first: one the destination
holds with the same lines is left alone, one it holds a prefix of is extended by the rest,
and any other difference refuses the whole copy before anything is written.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness_core.log import SessionLog, SessionNotFound, SessionStore, Store

from ._store import event_of

__all__ = ["Plan", "apply", "plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    session_id: str
    action: Literal["copy", "extend", "same"]
    lines: list[bytes]  # what to write: every line (copy), the missing ones (extend), none
    have: int  # lines the destination holds already


class Divergent(Exception):
    """The destination holds the session with other events than the source's."""


def plan(source: Store, destination: Store, ids: Sequence[str]) -> list[Plan]:
    """What copying `ids` would do, each session compared whole; Divergent names the first
    session the destination holds differently."""
    plans = []
    for session_id in ids:
        lines = list(source.lines(session_id))
        try:
            have = list(destination.lines(session_id))
        except SessionNotFound:
            plans.append(Plan(session_id, "copy", lines, 0))
            continue
        if have == lines:
            plans.append(Plan(session_id, "same", [], len(have)))
        elif len(have) < len(lines) and lines[: len(have)] == have:
            plans.append(Plan(session_id, "extend", lines[len(have) :], len(have)))
        else:
            raise Divergent(
                f"session {session_id} differs in {destination.url} from {source.url} "
                f"(it holds {len(have)} events, the source {len(lines)}, and not as their "
                "prefix); nothing was copied"
            )
    return plans


def apply(destination: Store, step: Plan) -> None:
    if step.action == "same":
        return
    if step.action == "copy" and isinstance(destination, SessionStore):
        _new_file(destination, step.session_id, step.lines)
        return
    if step.action == "copy":
        from ._store import PostgresStore

        assert isinstance(destination, PostgresStore)
        log: SessionLog = destination.adopt(step.session_id, event_of(step.lines[0]))
    else:
        log = destination.open(step.session_id)
    with log:
        if log.next_seq != step.have:  # a writer appended since the comparison
            raise Divergent(
                f"session {step.session_id} changed in {destination.url} while copying; "
                "nothing more was copied to it"
            )
        append_lines(log, step.lines)


def append_lines(log: SessionLog, lines: Sequence[bytes]) -> None:
    """Write envelope lines as they are (their seq, ts and bytes kept), then commit."""
    for line in lines:
        log.append_line(line)
    log.commit()


def _new_file(store: SessionStore, session_id: str, lines: Sequence[bytes]) -> None:
    """The session's file, whole or not at all: written aside, then linked into place (a
    session of that id appearing meanwhile is refused, never overwritten)."""
    store.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    store.directory.mkdir(mode=0o700, exist_ok=True)
    path = store.directory / f"{session_id}.jsonl"
    aside = store.directory / f".{session_id}.{secrets.token_hex(4)}.copying"
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"".join(line + b"\n" for line in lines))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            raise Divergent(
                f"session {session_id} appeared in {store.url} while copying; not copied"
            ) from None
        _fsync_dir(store.directory)
    finally:
        Path(aside).unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
