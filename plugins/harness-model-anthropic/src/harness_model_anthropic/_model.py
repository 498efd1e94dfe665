"""Claude on the `anthropic` SDK's native Messages API: one streamed request per `respond`.

Retries are ours, as for `openai:` (the client is built with `max_retries=0`), so a retry
count means what the docs say and one rule holds that the SDK cannot know: a stream that
breaks after output reached the host is not retried, since a retry would show a second,
different answer. 429, 529 (overloaded), 408 and 5xx are retried, honouring `retry-after`.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final, Literal

import anthropic
import anyio

# One retry policy, one reading of `retry-after` and of an error's cause, and one wording of
# a failure for every provider: the helpers take any mapping, exception and SDK error types.
from harness_core.models import (
    ERROR_WIDTH,
    ContextLengthExceeded,
    DeltaSink,
    Endpoint,
    ModelBase,
    ModelError,
    ModelResponse,
    ResponseToolCall,
    RetryPolicy,
    Thinking,
    error_cause,
    read_timeout,
    retry_after,
    retryable,
    status_message,
    transport_message,
)
from harness_core.sanitize import one_line

from ._request import messages_of, system_of, tools_of

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_TIMEOUT", "AnthropicModel", "RetryPolicy"]

logger = logging.getLogger("harness.models")
DEFAULT_MAX_TOKENS: Final = 8192
DEFAULT_TIMEOUT: Final = read_timeout(anthropic.Timeout)
# An error event inside a 200 stream has no status of its own: its type says which.
_EVENT_STATUS: Final = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}
_TOO_LONG: Final = re.compile(r"prompt is too long|context (length|window)", re.IGNORECASE)


class _BrokenStream(Exception):
    """The stream ended before `message_stop`: the connection closed early."""


class AnthropicModel(ModelBase):
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

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        """Stream one response, retrying per `self.retry`; every failure is a ModelError."""
        request = self.request(messages, tools)
        attempt = 0
        while True:
            attempt += 1
            assembly = _Assembly(on_delta)
            try:
                return await self._stream(request, assembly)
            except anthropic.APIStatusError as exc:
                status = _status(exc)
                if status in (400, 413) and _TOO_LONG.search(_detail(exc)):
                    raise ContextLengthExceeded(self._status_message(exc, attempt)) from exc
                if assembly.delivered:
                    raise ModelError(self._broken_message(_detail(exc))) from exc
                if not retryable(status) or attempt >= self.retry.attempts:
                    raise ModelError(self._status_message(exc, attempt)) from exc
                delay = self.retry.delay(attempt, retry_after(exc.response.headers))
            except (anthropic.APIError, _BrokenStream) as exc:  # connection, timeout, a cut
                if assembly.delivered:
                    raise ModelError(self._broken_message(error_cause(exc))) from exc
                if attempt >= self.retry.attempts:
                    raise ModelError(self._transport_message(exc, attempt)) from exc
                delay = self.retry.delay(attempt)
            except anthropic.AnthropicError as exc:
                raise ModelError(f"{self.name}: {one_line(str(exc), ERROR_WIDTH)}") from exc
            logger.info("%s: attempt %d failed, retrying in %.2fs", self.name, attempt, delay)
            await anyio.sleep(delay)

    def request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The Messages API request body for `messages` (never mutated) and `tools`."""
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

    async def _stream(self, request: dict[str, Any], assembly: _Assembly) -> ModelResponse:
        stream = await self._client.messages.create(**request, stream=True)
        try:
            async for event in stream:
                assembly.add(event)
        finally:
            # Shielded and bounded: a host cancel must not interrupt the close itself.
            with anyio.move_on_after(2, shield=True):
                await stream.close()
        if not assembly.stopped:
            raise _BrokenStream("the stream ended before the response was complete")
        return assembly.response(self.model_name)

    # -- error messages: one line each, what failed and what to do -------------------------

    def _endpoint(self) -> Endpoint:
        timeout = self._timeout
        return Endpoint(
            name=self.name,
            model_name=self.model_name,
            base_url=self.base_url,
            key_hint=self.key_env,
            read_timeout=timeout.read if isinstance(timeout, anthropic.Timeout) else timeout,
            timeout_error=anthropic.APITimeoutError,
            connection_error=anthropic.APIConnectionError,
        )

    def _status_message(self, exc: anthropic.APIStatusError, attempts: int) -> str:
        status = _status(exc)
        if status == 529:
            tries = f" after {attempts} attempts" if attempts > 1 else ""
            return (
                f"{self.name} returned HTTP 529{tries}: {_detail(exc)} (the provider is "
                "overloaded; try again later)"
            )
        return status_message(self._endpoint(), status, _detail(exc), attempts)

    def _transport_message(self, exc: BaseException, attempts: int) -> str:
        return transport_message(self._endpoint(), exc, attempts)

    def _broken_message(self, why: str) -> str:
        return (
            f"{self.name} stream broke after output had started ({why}); not retried "
            "because part of the answer was already shown; run the turn again"
        )


class _Assembly:
    """One streamed Message being put together, event by event."""

    __slots__ = ("_blocks", "_sink", "delivered", "model", "stopped", "usage")

    def __init__(self, sink: DeltaSink | None) -> None:
        self._sink = sink
        self._blocks: dict[int, dict[str, Any]] = {}  # index -> the block so far
        self.delivered = False
        self.stopped = False
        self.model: str | None = None
        self.usage: dict[str, int] = {}

    def add(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start":
            self.model = event.message.model
            self._count(event.message.usage)
        elif kind == "content_block_start":
            self._blocks[event.index] = event.content_block.model_dump()
        elif kind == "content_block_delta":
            self._delta(self._blocks[event.index], event.delta)
        elif kind == "message_delta":
            self._count(event.usage)
        elif kind == "message_stop":
            self.stopped = True

    def _count(self, usage: Any) -> None:
        """message_start has the input side; message_delta the running output count (and,
        from newer servers, the input side again)."""
        for ours, theirs in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("read", "cache_read_input_tokens"),
            ("write", "cache_creation_input_tokens"),
        ):
            value = getattr(usage, theirs, None)
            if isinstance(value, int):
                self.usage[ours] = value

    def _delta(self, block: dict[str, Any], delta: Any) -> None:
        kind = delta.type
        if kind == "text_delta":
            self._emit("text", delta.text, block, "text")
        elif kind == "thinking_delta":
            self._emit("reasoning", delta.thinking, block, "thinking")
        elif kind == "signature_delta":
            block["signature"] = (block.get("signature") or "") + delta.signature
        elif kind == "input_json_delta":
            block["partial_json"] = block.get("partial_json", "") + delta.partial_json

    def _emit(
        self, kind: Literal["text", "reasoning"], chunk: str, block: dict[str, Any], key: str
    ) -> None:
        block[key] = (block.get(key) or "") + chunk
        if self._sink is not None and chunk:
            self.delivered = True
            self._sink(kind, chunk)

    def response(self, requested_model: str) -> ModelResponse:
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        text = "".join(b.get("text") or "" for b in blocks if b["type"] == "text")
        return ModelResponse(
            text=text or None,
            tool_calls=tuple(_call(b) for b in blocks if b["type"] == "tool_use"),
            thinking=tuple(t for t in map(_thinking, blocks) if t is not None),
            model=self.model or requested_model,
            usage=self._usage() if self.usage else None,
        )

    def _usage(self) -> dict[str, int]:
        """Anthropic's input_tokens leaves out what the cache read and wrote; prompt_tokens
        counts the whole prompt (the compaction threshold compares it with the window)."""
        read, write = self.usage.get("read", 0), self.usage.get("write", 0)
        prompt = self.usage.get("input", 0) + read + write
        output = self.usage.get("output", 0)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "cache_read_tokens": read,
            "cache_write_tokens": write,
        }


def _call(block: dict[str, Any]) -> ResponseToolCall:
    # The raw argument string as streamed; a call with no input streams no JSON at all.
    return ResponseToolCall(
        id=block["id"], name=block["name"], arguments=block.get("partial_json") or "{}"
    )


def _thinking(block: dict[str, Any]) -> Thinking | None:
    if block["type"] == "thinking":
        return Thinking(text=block.get("thinking") or "", signature=block.get("signature"))
    if block["type"] == "redacted_thinking":
        return Thinking(redacted=block.get("data") or "")
    return None


def _status(exc: anthropic.APIStatusError) -> int:
    if exc.status_code == 200:  # an error event inside the stream
        return _EVENT_STATUS.get(str(exc.type), 500)
    return exc.status_code


def _detail(exc: anthropic.APIStatusError) -> str:
    """The provider's own `{"error": {"message": ...}}`, or the SDK's text."""
    return one_line(exc.api_message or exc.message, ERROR_WIDTH)
