"""`harness show`'s usage line per turn: what the turn's requests cost, cache reads and writes
included, summed from the `usage` of its `message/assistant` events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # `sessions` imports this module too: the envelope codec (orjson) stays out
    from ..log import Event

__all__ = ["TurnUsage"]

_FIELDS: Final = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens")


class TurnUsage:
    """Sums the usage of one turn's requests; `take_line` reports and starts the next turn."""

    __slots__ = ("_cached", "_requests", "_sums")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._requests = 0
        self._cached = False  # whether any request reported cache figures
        self._sums = dict.fromkeys(_FIELDS, 0)

    def add(self, event: Event) -> None:
        usage = event.data.get("usage") if event.type == "message/assistant" else None
        if not isinstance(usage, dict):
            return
        self._requests += 1
        for field in _FIELDS:
            value: Any = usage.get(field)
            if isinstance(value, int):
                self._sums[field] += value
                self._cached |= field.startswith("cache_")

    def take_line(self) -> str | None:
        """`usage: 2 requests · 1,200 input tokens (...) · 34 output`, or None without usage."""
        if not self._requests:
            return None
        sums, requests = self._sums, self._requests
        cache = (
            f" ({sums['cache_read_tokens']:,} read from the cache, "
            f"{sums['cache_write_tokens']:,} written to it)"
            if self._cached
            else ""
        )
        line = (
            f"usage: {requests} request{'s' if requests != 1 else ''} · "
            f"{sums['prompt_tokens']:,} input tokens{cache} · {sums['completion_tokens']:,} output"
        )
        self._reset()
        return line
