"""Retrying a provider's request: the policy, the server's Retry-After, the error beneath.

Shared by every model that talks to a provider over HTTP (the OpenAI-compatible model, a
plugin's provider), so a retry count means the same everywhere (`model_retries`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..sanitize import one_line

__all__ = ["ERROR_WIDTH", "RetryPolicy", "error_cause", "retry_after"]

ERROR_WIDTH: Final = 300  # characters of a provider's error message shown
# seconds; a longer Retry-After falls back to our backoff, so the attempts run out soon
# instead of hanging the turn for an hour.
_MAX_RETRY_AFTER: Final = 60.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often to try one request, and how long to wait between tries.

    Retried: HTTP 408, 429 and 5xx, connection errors and timeouts, and a stream that broke
    before any of its output reached the host. Delay before retry n (1-based):
    `min(max_delay, initial_delay * multiplier**(n-1))`, less up to `jitter` of it at random,
    or the server's `Retry-After` when it sends one of at most 60 s.
    """

    attempts: int = 4  # the first try included
    initial_delay: float = 0.5
    max_delay: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.25

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None and 0 <= retry_after <= _MAX_RETRY_AFTER:
            return retry_after
        backoff = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        return backoff * (1 - self.jitter * random.random())


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait (`retry-after-ms` or `retry-after`), else None."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                return None  # an HTTP date: fall back to our own backoff
    return None


def error_cause(exc: BaseException) -> str:
    """The error under the SDK's generic one (`Connection error.` says nothing of why)."""
    inner = exc.__cause__ or exc.__context__
    while inner is not None and not str(inner):
        inner = inner.__cause__ or inner.__context__
    if inner is None:
        return one_line(str(exc), ERROR_WIDTH)
    return one_line(f"{type(inner).__name__}: {inner}", ERROR_WIDTH)
