"""Copying sessions between any two stores (`harness store copy`), as the very lines they hold.

A session is copied as its stored envelope lines, never re-encoded, so file -> Postgres ->
file gives back byte-identical files. Each session is compared first: one the destination
holds with the same lines is left alone, one it holds a prefix of is extended by the rest,
and any other difference refuses the whole copy before anything is written. Only `Store`
methods are used (`lines`, `adopt`, `open` and `append_line`), so every store can be either
side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ._session import LogWriteError
from ._stores import SessionNotFound, Store

__all__ = ["CopyStep", "Divergent", "apply_copy", "plan_copy"]


@dataclass(frozen=True, slots=True)
class CopyStep:
    """What copying one session does: copy it whole, extend it, or nothing (the same)."""

    session_id: str
    action: Literal["copy", "extend", "same"]
    lines: list[bytes]  # what to write: every line (copy), the missing ones (extend), none
    have: int  # lines the destination holds already


class Divergent(Exception):
    """The destination holds the session with other events than the source's."""


def plan_copy(source: Store, destination: Store, ids: Sequence[str]) -> list[CopyStep]:
    """What copying `ids` would do, each session compared whole; Divergent names the first
    session the destination holds differently."""
    plans = []
    for session_id in ids:
        lines = list(source.lines(session_id))
        try:
            have = list(destination.lines(session_id))
        except SessionNotFound:
            plans.append(CopyStep(session_id, "copy", lines, 0))
            continue
        if have == lines:
            plans.append(CopyStep(session_id, "same", [], len(have)))
        elif len(have) < len(lines) and lines[: len(have)] == have:
            plans.append(CopyStep(session_id, "extend", lines[len(have) :], len(have)))
        else:
            raise Divergent(
                f"session {session_id} differs in {destination.url} from {source.url} "
                f"(it holds {len(have)} events, the source {len(lines)}, and not as their "
                "prefix); nothing was copied"
            )
    return plans


def apply_copy(destination: Store, step: CopyStep) -> None:
    """Write one step of `plan_copy` to `destination`; Divergent when it changed meanwhile."""
    if step.action == "copy":
        try:
            destination.adopt(step.session_id, step.lines)
        except (FileExistsError, LogWriteError):  # a file's name, a row's key: taken meanwhile
            raise Divergent(
                f"session {step.session_id} appeared in {destination.url} while copying; not copied"
            ) from None
    elif step.action == "extend":
        with destination.open(step.session_id) as log:
            if log.next_seq != step.have:  # a writer appended since the comparison
                raise Divergent(
                    f"session {step.session_id} changed in {destination.url} while copying; "
                    "nothing more was copied to it"
                )
            for line in step.lines:
                log.append_line(line)
