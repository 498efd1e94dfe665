"""The tail index: where the newest event of each type sits in a session file.

`harness todos ID` asks for the newest `todo/write`. When the plan was written 100k events
ago, reading back to it means reading the whole file. The writer knows the offset of every
line it appends, so it keeps, for each event type, the seq and offset of the newest one, and
saves them in `$HARNESS_HOME/cache/tail/<id>.json` when it closes and after each MiB it
appends. The file is a cache (`_cache.py`): the log stays the only record.

A reader (`_tail.find_latest`) scans back from the end only over the bytes the index does not
cover, then checks the index against the log before it takes its answer: the line that ends
where the index ends must be the event the index names, and the line at an offset must be the
event the index says it is. Anything else (no index, an older or hand-edited log, a torn cache
file) falls back to reading back over the rest of the file.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from ._cache import cache_dir, read_cache, write_cache

__all__ = ["SAVE_EVERY", "TailIndex", "forget_index", "load_index", "save_index"]

# How much a writer appends between two saves: a reader scans at most this much (about a
# millisecond) past what the index covers, and a writer saves about once per MiB.
SAVE_EVERY = 1024 * 1024


@dataclass(slots=True)
class TailIndex:
    """What a writer knows of the lines in `[start, size)` of its session file."""

    start: int  # the writer knows every line from here on: 0, or where it opened the file
    size: int  # up to here: whole lines, all of them committed
    seq: int  # the seq of the line that ends at `size`
    latest: dict[str, tuple[int, int]]  # type -> (seq, offset) of its newest line

    def newest(self, types: frozenset[str]) -> tuple[int, int] | None:
        """The (seq, offset) of the newest indexed event of one of `types`, or None."""
        found = [self.latest[t] for t in types if t in self.latest]
        return max(found) if found else None


def _index_path(session: Path) -> Path | None:
    """`$HARNESS_HOME/cache/tail/<id>.json` for a session in a sessions directory; a log
    elsewhere (a test's temporary file) has no home to keep a cache in."""
    if session.parent.name != "sessions":
        return None
    return cache_dir(session.parent) / "tail" / f"{session.stem}.json"


def load_index(session: Path) -> TailIndex | None:
    """The session's saved index, or None when there is none or it is not one."""
    path = _index_path(session)
    raw = read_cache(path) if path is not None else None
    if raw is None:
        return None
    try:
        obj = orjson.loads(raw)
        latest = {
            str(kind): (int(seq), int(offset)) for kind, (seq, offset) in obj["latest"].items()
        }
        index = TailIndex(int(obj["start"]), int(obj["size"]), int(obj["seq"]), latest)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None  # torn by a crash, or not ours: the scan answers instead
    return index if 0 <= index.start <= index.size else None


def save_index(session: Path, index: TailIndex) -> None:
    """Save `index` for the session; a failure only makes later queries scan further."""
    path = _index_path(session)
    if path is not None and index.size > index.start:
        data = {"start": index.start, "size": index.size, "seq": index.seq}
        write_cache(path, orjson.dumps({**data, "latest": index.latest}))


def forget_index(session: Path) -> None:
    """Remove a saved index (a new session reusing the name must not find an old one)."""
    path = _index_path(session)
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)
