"""Retrying a provider's request: the policy, the server's Retry-After, the error beneath,
and the one-line message a failure ends in.

Shared by every model that talks to a provider over HTTP (the OpenAI-compatible model, a
plugin's provider), so a retry count and a failure's message mean the same everywhere.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from ..sanitize import one_line

__all__ = [
    "ERROR_WIDTH",
    "Endpoint",
    "RetryPolicy",
    "attempts_text",
    "error_cause",
    "read_timeout",
    "retry_after",
    "retryable",
    "status_message",
    "transport_message",
]

ERROR_WIDTH: Final = 300  # characters of a provider's error message shown
# seconds; a longer Retry-After falls back to our backoff, so the attempts run out soon
# instead of hanging the turn for an hour.
_MAX_RETRY_AFTER: Final = 60.0

_T = TypeVar("_T")


def read_timeout(timeout: Callable[..., _T], seconds: float | None = None) -> _T:
    """An SDK's `Timeout` (openai's, anthropic's: both httpx's) with every provider's bounds.
    `read` bounds the silence between two bytes of a stream, not the whole answer: a long
    answer that keeps streaming never times out, a stalled connection does. `seconds` (the
    `model_timeout` setting) replaces its default of 180."""
    read = 180.0 if seconds is None else seconds
    return timeout(connect=10.0, read=read, write=60.0, pool=30.0)


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


def retryable(status: int) -> bool:
    """Whether an HTTP status is worth another try (RetryPolicy says which)."""
    return status in (408, 429) or status >= 500


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


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What a failure's message names and checks: the model (`provider:model`), where it was
    asked, what to check when the key is refused, the read timeout, and the SDK's own error
    types for a timeout and for no connection."""

    name: str
    model_name: str
    base_url: str
    key_hint: str
    read_timeout: object
    timeout_error: type[BaseException]
    connection_error: type[BaseException]


def status_message(endpoint: Endpoint, status: int, detail: str, attempts: int) -> str:
    """One line for an HTTP error status: what the provider said, and what to do."""
    where = f"{endpoint.name} returned HTTP {status}"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if status == 401:
        return f"{where}: {detail} (check {endpoint.key_hint})"
    if status == 403:
        return f"{where}: {detail} (the key has no access to {endpoint.model_name})"
    if status == 404:
        return f"{where}: {detail} (check the model name and the base URL {endpoint.base_url})"
    if status == 429:
        return f"{where}{tries}: {detail} (rate limited: wait, or lower the request rate)"
    if status >= 500:
        return f"{where}{tries}: {detail} (the provider failed; try again later)"
    return f"{where}: {detail} (the provider rejected the request)"


def attempts_text(attempts: int) -> str:
    return f"{attempts} attempt" + ("s" if attempts != 1 else "")


def transport_message(endpoint: Endpoint, exc: BaseException, attempts: int) -> str:
    """One line for a request that got no status: it timed out, found no connection, or its
    stream failed."""
    tries = attempts_text(attempts)
    if isinstance(exc, endpoint.timeout_error):
        return (
            f"{endpoint.name} timed out ({tries}, no data for {endpoint.read_timeout}s): the "
            "provider is slow or unreachable; try again, or raise model_timeout "
            "(HARNESS_MODEL_TIMEOUT)"
        )
    if isinstance(exc, endpoint.connection_error):
        return (
            f"cannot reach {endpoint.name} at {endpoint.base_url} ({tries}): "
            f"{error_cause(exc)}; check the network and the base URL"
        )
    return f"{endpoint.name} stream failed ({tries}): {error_cause(exc)}; try again later"
