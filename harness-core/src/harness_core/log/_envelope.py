"""The on-disk envelope: one JSON object per line, `{"seq", "type", "ts", "data"}` + `"turn"`.

Encoding writes the keys in that order, compactly, so every line this version writes spells
its type the same way (`"type":"todo/write"`): a tail query finds candidate lines by searching
the bytes for it (see `_tail.py`).
"""

from __future__ import annotations

import time
from typing import Any, Final

__all__ = ["EnvelopeError", "Event", "decode_line", "now_ts"]


class Event:
    """One envelope as it is on disk. `data` is the payload as plain JSON values."""

    __slots__ = ("data", "seq", "ts", "turn", "type")

    def __init__(
        self, seq: int, type: str, ts: str, data: dict[str, Any], turn: int | None = None
    ) -> None:
        self.seq = seq
        self.type = type
        self.ts = ts
        self.data = data
        self.turn = turn

    @classmethod
    def from_json(cls, obj: Any) -> Event:
        """The event of a parsed envelope line, or EnvelopeError (`decode_line`; a store that
        parses its one line with another JSON library)."""
        if type(obj) is not dict:
            raise EnvelopeError("not a JSON object")
        seq = obj.get("seq")
        kind = obj.get("type")
        ts = obj.get("ts")
        data = obj.get("data")
        turn = obj.get("turn")
        if type(seq) is not int or seq < 0:
            raise EnvelopeError("'seq' is not a non-negative integer")
        if type(kind) is not str or type(ts) is not str or type(data) is not dict:
            raise EnvelopeError("'type' and 'ts' must be strings and 'data' an object")
        if turn is not None and type(turn) is not int:
            raise EnvelopeError("'turn' is not an integer")
        return cls(seq, kind, ts, data, turn)

    def to_json(self) -> dict[str, Any]:
        envelope: dict[str, Any] = {
            "seq": self.seq,
            "type": self.type,
            "ts": self.ts,
            "data": self.data,
        }
        if self.turn is not None:
            envelope["turn"] = self.turn
        return envelope

    def __repr__(self) -> str:
        return f"Event(seq={self.seq}, type={self.type!r}, turn={self.turn})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]


class EnvelopeError(ValueError):
    """A line that is valid JSON (or not) but is not a well-formed envelope."""


class _Clock:
    """UTC timestamps with millisecond precision, `2026-01-02T03:04:05.678Z`.

    Every append stamps its event, and appends come in bursts: formatting only when the
    millisecond (and the date part only when the second) changes makes this several times
    cheaper than `datetime.isoformat` on the commit benchmark's path (scripts/bench/log.py).
    """

    __slots__ = ("_ms", "_prefix", "_second", "_ts")

    def __init__(self) -> None:
        self._ms = self._second = -1
        self._prefix = self._ts = ""

    def now(self) -> str:
        ms = int(time.time() * 1000)  # truncated, like isoformat(timespec="milliseconds")
        if ms != self._ms:
            second, milli = divmod(ms, 1000)
            if second != self._second:
                self._prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
                self._second = second
            self._ts = f"{self._prefix}.{milli:03d}Z"
            self._ms = ms
        return self._ts


now_ts: Final = _Clock().now


def decode_line(line: bytes) -> Event:
    """Parse one line (without its newline) into an Event, or raise EnvelopeError."""
    # Imported here: `Event` alone (a plugin's projections, `harness todos ID` on a store that
    # parses for itself) needs no codec, and orjson's import brings uuid, platform and
    # datetime with it.
    import orjson

    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise EnvelopeError(f"not JSON: {exc}") from None
    return Event.from_json(obj)
