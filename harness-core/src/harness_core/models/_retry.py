"""Retrying a provider's request: one driver (`with_retries`), the policy, the server's
Retry-After, the error beneath, and the one-line message a failure ends in.

Shared by every model that talks to a provider over HTTP (the OpenAI-compatible model, a
plugin's provider), so a retry count and a failure's message mean the same everywhere. A
provider says only what one failed attempt was (`Failure`: its line, and whether another try
may help); the driver owns the rule no SDK can know: once output reached the host, nothing is
retried, because a retry would show a second, different answer.
"""

from __future__ import annotations

import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal, TypeVar

import anyio

from ..sanitize import one_line
from ._base import ContextLengthExceeded, DeltaSink, ModelBase, ModelError, ModelResponse

__all__ = [
    "ERROR_WIDTH",
    "BrokenStream",
    "Endpoint",
    "Failure",
    "GarbledStream",
    "ProviderModel",
    "RetryPolicy",
    "attempts_text",
    "error_cause",
    "read_timeout",
    "retry_after",
    "retryable",
    "status_failure",
    "status_message",
    "stream_failure",
    "transport_message",
    "with_retries",
]

logger = logging.getLogger("harness.models")

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


class BrokenStream(Exception):
    """A stream that ended before its response was complete: the connection closed early."""


class GarbledStream(BrokenStream):
    """A stream that sent something no response is made of (not JSON, not UTF-8, the wrong
    shape); its text says what, to follow "PROVIDER sent"."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt as its provider reads it: the line a turn ends with if it ends
    here, the short cause the line "stream broke after output had started" gives, whether
    another try may help, the server's Retry-After, and the error to raise."""

    message: str
    cause: str
    retryable: bool = False
    retry_after: float | None = None
    error: type[ModelError] = ModelError


# A provider's reading of an exception from one attempt (and the attempts so far); None for
# one that is not the provider's failure (a bug of ours), which propagates as it is.
Judge = Callable[[Exception, int], Failure | None]


async def with_retries(
    name: str,
    policy: RetryPolicy,
    judge: Judge,
    attempt: Callable[[DeltaSink], Awaitable[_T]],
    on_delta: DeltaSink | None,
) -> _T:
    """`attempt(sink)` until it returns or `judge` ends it: a failure is retried while it is
    retryable, attempts are left and nothing it streamed reached `on_delta`."""
    tries = 0
    while True:
        tries += 1
        shown = _Shown(on_delta)
        try:
            return await attempt(shown)
        except Exception as exc:
            failure = judge(exc, tries)
            if failure is None:
                raise
            if shown.started:
                raise ModelError(_broken_message(name, failure.cause)) from exc
            if not failure.retryable or tries >= policy.attempts:
                raise failure.error(failure.message) from exc
            delay = policy.delay(tries, failure.retry_after)
        logger.info("%s: attempt %d failed, retrying in %.2fs", name, tries, delay)
        await anyio.sleep(delay)


class ProviderModel(ModelBase, ABC):
    """A model a provider serves over HTTP: one streamed request per response, retried by
    `with_retries` per `retry`. A provider gives the request body (`request`), one attempt
    (`stream`, which passes its text and reasoning to the sink) and what a failed attempt was
    (`failure`)."""

    name: str
    retry: RetryPolicy

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        """Stream one response, retrying per `self.retry`; every failure is a ModelError."""
        attempt = partial(self.stream, self.request(messages, tools))
        return await with_retries(self.name, self.retry, self.failure, attempt, on_delta)

    @abstractmethod
    def request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The request body for `messages` (never mutated) and `tools`."""

    @abstractmethod
    async def stream(self, request: dict[str, Any], sink: DeltaSink) -> ModelResponse:
        """One attempt: the response to `request`, its deltas passed to `sink`."""

    @abstractmethod
    def failure(self, exc: Exception, attempts: int) -> Failure | None:
        """What one failed attempt was; None for an error that is not the provider's."""


class _Shown:
    """The host's delta sink, noting whether anything reached it."""

    __slots__ = ("_sink", "started")

    def __init__(self, sink: DeltaSink | None) -> None:
        self._sink = sink
        self.started = False

    def __call__(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        if self._sink is not None and chunk:
            self.started = True
            self._sink(kind, chunk)


def _broken_message(name: str, cause: str) -> str:
    return (
        f"{name} stream broke after output had started ({cause}); not retried because part "
        "of the answer was already shown; run the turn again"
    )


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
    timeout_error: type[BaseException] | tuple[type[BaseException], ...]
    connection_error: type[BaseException] | tuple[type[BaseException], ...]


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
    if status == 529:  # Anthropic's "overloaded"
        return f"{where}{tries}: {detail} (the provider is overloaded; try again later)"
    if status >= 500:
        return f"{where}{tries}: {detail} (the provider failed; try again later)"
    return f"{where}: {detail} (the provider rejected the request)"


def attempts_text(attempts: int) -> str:
    return f"{attempts} attempt" + ("s" if attempts != 1 else "")


def transport_message(endpoint: Endpoint, exc: BaseException, attempts: int) -> str:
    """One line for a request that got no status: it timed out, found no connection, or its
    stream failed or was garbled."""
    tries = attempts_text(attempts)
    if isinstance(exc, GarbledStream):
        return (
            f"{endpoint.name} sent {exc} ({tries}): the provider (or a proxy in between) "
            "garbled its stream; try again later, or check the base URL"
        )
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


def stream_failure(endpoint: Endpoint, exc: BaseException, attempts: int) -> Failure:
    """A request that got no status (a timeout, no connection, a cut, a garbled or short
    stream): always worth another try."""
    cause = str(exc) if isinstance(exc, BrokenStream) else error_cause(exc)
    return Failure(transport_message(endpoint, exc, attempts), cause, retryable=True)


def status_failure(
    endpoint: Endpoint,
    status: int,
    detail: str,
    attempts: int,
    headers: Mapping[str, str],
    *,
    too_long: bool = False,
) -> Failure:
    """An HTTP error status (`detail`: the provider's message): retried when `retryable`,
    after the server's Retry-After; `too_long` (the prompt exceeds the context window) asks
    the loop to compact."""
    return Failure(
        status_message(endpoint, status, detail, attempts),
        detail,
        retryable=retryable(status),
        retry_after=retry_after(headers),
        error=ContextLengthExceeded if too_long else ModelError,
    )
