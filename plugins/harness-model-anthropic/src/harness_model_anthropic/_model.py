"""Claude on the `anthropic` SDK's native Messages API: one streamed request per `respond`.

The SDK's stream helper (`client.messages.stream`) puts the Message together: content blocks,
tool_use input from its JSON deltas, thinking with its signature, usage. We map its events to
the host (text deltas as "text", thinking deltas as "reasoning") and its final Message to a
response, and name what went wrong in a stream the SDK reads (an event that is not JSON or not
UTF-8, one for a content block never started, a cut) as one line.

Retries are ours, as for `openai:` (the client is built with `max_retries=0`, and
`harness_core.models.ProviderModel` drives them): a stream that breaks after output reached the
host is not retried, since a retry would show a second, different answer. 429, 529
(overloaded), 408 and 5xx are retried, honouring `retry-after`, and so is a broken or garbled
stream before output.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import anthropic
import anyio
import httpx2
from anthropic.lib.streaming import AsyncMessageStream
from anthropic.types import Message, Usage

# One retry driver (ProviderModel.respond), one reading of `retry-after`, and one wording of a
# failure for every provider: this module says only what a failed attempt was (`failure`).
from harness_core.models import (
    ERROR_WIDTH,
    BrokenStream,
    DeltaSink,
    Endpoint,
    Failure,
    GarbledStream,
    ModelResponse,
    ProviderModel,
    ResponseToolCall,
    RetryPolicy,
    Thinking,
    read_timeout,
    status_failure,
    stream_failure,
)
from harness_core.sanitize import one_line

from ._request import messages_of, system_of, tools_of

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_TIMEOUT", "AnthropicModel", "RetryPolicy"]

DEFAULT_MAX_TOKENS: Final = 8192
DEFAULT_TIMEOUT: Final = read_timeout(anthropic.Timeout)
# An error event inside a 200 stream has no status of its own: its type says which.
_EVENT_STATUS: Final = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}
_TOO_LONG: Final = re.compile(r"prompt is too long|context (length|window)", re.IGNORECASE)
# What the SDK raises while it reads and accumulates a stream that is not a Message: the
# event's JSON (ValueError, UnicodeDecodeError among them), a block index never started
# (IndexError), a wrong shape (the others).
_GARBLED: Final = (ValueError, LookupError, TypeError, AttributeError)


class AnthropicModel(ProviderModel):
    """`AnthropicModel(name, api_key=...)`; close it with `aclose()` or `async with`.

    `thinking_budget` turns extended thinking on with that many tokens (it must be below
    `max_tokens`); the model's thinking then streams to the host as "reasoning" deltas and
    its signed blocks are kept on the log and sent back.
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | anthropic.Timeout = DEFAULT_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budget: int | None = None,
        context_window: int | None = 200_000,
        key_env: str = "ANTHROPIC_API_KEY",
    ) -> None:
        self.model_name = model_name
        self.name = f"anthropic:{model_name}"
        self.context_window = context_window
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.key_env = key_env
        self._timeout = timeout
        # An explicit key and URL: the SDK then reads neither the environment nor a profile.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url or "https://api.anthropic.com",
            timeout=timeout,
            max_retries=0,
        )
        self.base_url = str(self._client.base_url).rstrip("/")

    async def aclose(self) -> None:
        await self._client.close()

    def failure(self, exc: Exception, attempts: int) -> Failure | None:
        if isinstance(exc, anthropic.APIStatusError):
            status, detail = _status(exc), _detail(exc)
            too_long = status in (400, 413) and bool(_TOO_LONG.search(detail))
            headers = exc.response.headers
            return status_failure(
                self._endpoint(), status, detail, attempts, headers, too_long=too_long
            )
        # The SDK wraps the transport's errors while it sends, not while it reads a stream.
        if isinstance(exc, anthropic.APIError | httpx2.TransportError | BrokenStream):
            return stream_failure(self._endpoint(), exc, attempts)
        if isinstance(exc, anthropic.AnthropicError):
            cause = one_line(str(exc), ERROR_WIDTH)
            return Failure(f"{self.name}: {cause}", cause)
        return None

    def request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": self.max_tokens,
            "messages": messages_of(messages),
        }
        system = system_of(messages)
        if system:
            request["system"] = system
        if tools:
            request["tools"] = tools_of(tools)
        if self.thinking_budget:
            request["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return request

    async def stream(self, request: dict[str, Any], sink: DeltaSink) -> ModelResponse:
        async with self._client.messages.stream(**request) as stream:
            try:
                message = await _read(stream, sink)
            finally:
                # Shielded and bounded: a host cancel must not interrupt the close itself.
                with anyio.move_on_after(2, shield=True):
                    await stream.close()
        return _response(message, self.model_name)

    # -- error messages: one line each, what failed and what to do -------------------------

    def _endpoint(self) -> Endpoint:
        timeout = self._timeout
        return Endpoint(
            name=self.name,
            model_name=self.model_name,
            base_url=self.base_url,
            key_hint=self.key_env,
            read_timeout=timeout.read if isinstance(timeout, anthropic.Timeout) else timeout,
            # A stream's own read timeout comes from the transport, unwrapped (see failure).
            timeout_error=(anthropic.APITimeoutError, httpx2.TimeoutException),
            connection_error=anthropic.APIConnectionError,
        )


async def _read(stream: AsyncMessageStream[Any], sink: DeltaSink) -> Message:
    """The stream's Message, its text and thinking deltas passed to `sink` as they come."""
    events = aiter(stream)
    while True:
        try:
            event = await anext(events)
        except StopAsyncIteration:
            raise BrokenStream("the stream ended before the response was complete") from None
        except _GARBLED as exc:
            raise GarbledStream(_garbled(exc)) from exc
        if event.type == "text":
            sink("text", event.text)
        elif event.type == "thinking":
            sink("reasoning", event.thinking)
        elif event.type == "message_stop":
            # The SDK passes an event before message_start on without a Message.
            message: Message | None = getattr(event, "message", None)
            if message is None:
                raise GarbledStream("an event before message_start")
            return message


def _garbled(problem: Exception) -> str:
    """What the provider sent, to follow "PROVIDER sent"."""
    if isinstance(problem, UnicodeDecodeError):
        where = f"{problem.reason} at byte {problem.start} of its line"
        return f"an event that is not valid UTF-8 ({where})"
    what = f"{type(problem).__name__}: {problem}"
    if isinstance(problem, json.JSONDecodeError):
        return one_line(f"an event that is not JSON ({what})", ERROR_WIDTH)
    if isinstance(problem, IndexError):  # the SDK looks a delta's block up by its index
        return one_line(f"an event for a content block it never started ({what})", ERROR_WIDTH)
    return one_line(f"a malformed event ({what})", ERROR_WIDTH)


def _response(message: Message, requested_model: str) -> ModelResponse:
    calls: list[ResponseToolCall] = []
    thinking: list[Thinking] = []
    text: list[str] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            # The SDK parsed the streamed JSON; a call with no input streams none and is {}.
            arguments = json.dumps(block.input, ensure_ascii=False)
            calls.append(ResponseToolCall(id=block.id, name=block.name, arguments=arguments))
        elif block.type == "thinking":
            thinking.append(Thinking(text=block.thinking, signature=block.signature or None))
        elif block.type == "redacted_thinking":
            thinking.append(Thinking(redacted=block.data))
    return ModelResponse(
        text="".join(text) or None,
        tool_calls=tuple(calls),
        thinking=tuple(thinking),
        model=message.model or requested_model,
        usage=_usage(message.usage),
    )


def _usage(usage: Usage) -> dict[str, int]:
    """Anthropic's input_tokens leaves out what the cache read and wrote; prompt_tokens
    counts the whole prompt (the compaction threshold compares it with the window)."""
    read = usage.cache_read_input_tokens or 0
    write = usage.cache_creation_input_tokens or 0
    prompt = (usage.input_tokens or 0) + read + write
    output = usage.output_tokens or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "cache_read_tokens": read,
        "cache_write_tokens": write,
    }


def _status(exc: anthropic.APIStatusError) -> int:
    if exc.status_code == 200:  # an error event inside the stream
        return _EVENT_STATUS.get(str(exc.type), 500)
    return exc.status_code


def _detail(exc: anthropic.APIStatusError) -> str:
    """The provider's own `{"error": {"message": ...}}`, or the SDK's text."""
    return one_line(exc.api_message or exc.message, ERROR_WIDTH)
