"""An OpenAI-compatible chat model on `openai.AsyncOpenAI`: OpenAI, DeepSeek, or any endpoint
that speaks the chat-completions API.

One `respond` is one streamed request. Text and reasoning deltas go to the host as they
arrive; tool-call argument deltas are assembled by index; usage comes from the final chunk.

Retries are ours, not the SDK's (the client is built with `max_retries=0`): we need a
configurable backoff (tests run it in milliseconds), an attempt count for the error message,
and one rule the SDK cannot know — a stream that breaks *after* output reached the host is not
retried, because the host already showed part of an answer that a retry would contradict.
`ProviderModel` (models/_retry) drives them for every provider; this module says only what a
failed attempt was (`failure`).

This module imports the `openai` SDK; `harness_core.models` does not import this module, so
the SDK loads only when a real model is built (`build_model`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any, Final, Literal

import anyio
import openai

from ..sanitize import one_line
from ._base import (
    DeltaSink,
    ModelResponse,
    ResponseToolCall,
)
from ._retry import (
    ERROR_WIDTH,
    BrokenStream,
    Endpoint,
    Failure,
    GarbledStream,
    ProviderModel,
    RetryPolicy,
    read_timeout,
    status_failure,
    stream_failure,
)

__all__ = ["DEFAULT_TIMEOUT", "OpenAICompatModel", "RetryPolicy"]

DEFAULT_TIMEOUT: Final = read_timeout(openai.Timeout)


# Providers that want `reasoning_content` back on assistant messages. DeepSeek's thinking mode
# answers HTTP 400 when an assistant message with tool calls lacks it; OpenAI's API has no such
# field, so it is stripped there (and for unknown providers, unless asked for).
SENDS_REASONING_BACK: Final = frozenset({"deepseek"})

# The log's provider-neutral extras on derived messages (another provider's signed thinking
# blocks, a result's error flag): the chat-completions API has no such fields, and strict
# servers refuse a message with unknown ones, so they are never sent.
_NOT_SENT: Final = frozenset({"thinking", "is_error"})

# How providers say a request is longer than the context window: OpenAI's error code, and the
# wording OpenAI, DeepSeek and most compatible servers use ("maximum context length is ...").
_CONTEXT_CODE: Final = "context_length_exceeded"
_CONTEXT_WORDS: Final = re.compile(r"context[ _-]?(length|window)", re.IGNORECASE)


class _MalformedChunk(GarbledStream):
    """A stream chunk that is not JSON, or not shaped like a completion chunk."""

    def __init__(self, number: int, problem: BaseException) -> None:
        detail = one_line(f"{type(problem).__name__}: {problem}", 200)
        super().__init__(f"a malformed chunk from the provider (chunk {number}: {detail})")


class OpenAICompatModel(ProviderModel):
    """A chat-completions model: `OpenAICompatModel(name, api_key=..., base_url=...)`.

    `provider` names the service in errors and picks the `reasoning_content` policy;
    `send_reasoning` overrides that policy (True for a DeepSeek-style endpoint behind another
    name). `key_env` names the variable the key came from, for the message a rejected key
    gets. Close it with `await model.aclose()` or `async with model:`.
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str,
        base_url: str | None = None,
        provider: str = "openai",
        retry: RetryPolicy | None = None,
        timeout: float | openai.Timeout = DEFAULT_TIMEOUT,
        send_reasoning: bool | None = None,
        key_env: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.model_name = model_name
        self.context_window = context_window
        self.provider = provider
        self.key_env = key_env
        self.name = f"{provider}:{model_name}"
        self.retry = retry or RetryPolicy()
        self.send_reasoning = (
            provider in SENDS_REASONING_BACK if send_reasoning is None else send_reasoning
        )
        self._timeout = timeout
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.base_url = str(self._client.base_url).rstrip("/")

    async def aclose(self) -> None:
        await self._client.close()

    def failure(self, exc: Exception, attempts: int) -> Failure | None:
        if isinstance(exc, openai.APIStatusError):
            return status_failure(
                self._endpoint(),
                exc.status_code,
                _provider_detail(exc),
                attempts,
                exc.response.headers,
                too_long=_context_exceeded(exc),
            )
        if isinstance(exc, openai.APIError | BrokenStream):
            # Connection errors, timeouts, an error event, a cut or a garbled chunk.
            return stream_failure(self._endpoint(), exc, attempts)
        if isinstance(exc, openai.OpenAIError):
            cause = one_line(str(exc), ERROR_WIDTH)
            return Failure(f"{self.name}: {cause}", cause)
        if isinstance(exc, UnicodeDecodeError):  # the SDK decodes the body as UTF-8, strictly
            cause = f"{exc.reason} at byte {exc.start} of a stream line"
            return Failure(
                f"{self.name}: the provider sent a response that is not valid UTF-8 ({cause}); "
                "check the base URL points at an OpenAI-compatible endpoint",
                f"not valid UTF-8: {cause}",
            )
        return None

    # -- one request -----------------------------------------------------------------------

    def request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_name,
            "messages": [self._outgoing(message) for message in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:  # an empty `tools` list is a 400 at OpenAI
            request["tools"] = tools
        return request

    def _outgoing(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message as this provider wants it; the projection's dict is never mutated."""
        if not _NOT_SENT.isdisjoint(message):
            message = {key: value for key, value in message.items() if key not in _NOT_SENT}
        if message.get("role") != "assistant":
            return message
        out = dict(message)
        if out.get("tool_calls") and not out.get("content"):
            out["content"] = None  # "no text, only calls" is null content in the API
        if not self.send_reasoning:
            out.pop("reasoning_content", None)
        elif out.get("tool_calls"):
            # DeepSeek rejects a tool-calling assistant message without the field, even when
            # the model did not think (history from a non-thinking model, or empty thoughts).
            out.setdefault("reasoning_content", "")
        return out

    async def stream(self, request: dict[str, Any], sink: DeltaSink) -> ModelResponse:
        assembly = _Assembly(sink)
        stream = await self._client.chat.completions.create(**request)
        chunks = aiter(stream)
        number = 0
        try:
            while True:
                number += 1
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except UnicodeDecodeError:  # not a garbled chunk: the endpoint speaks no UTF-8
                    raise
                except (ValueError, RecursionError) as exc:  # not JSON (or nested too deeply)
                    raise _MalformedChunk(number, exc) from exc
                try:
                    assembly.add(chunk)
                except (AttributeError, TypeError, ValueError) as exc:  # JSON, wrong shape
                    raise _MalformedChunk(number, exc) from exc
        finally:
            # Shielded and bounded: a host cancel must not interrupt the close itself, so the
            # connection is released now rather than left to the garbage collector.
            with anyio.move_on_after(2, shield=True):
                await stream.close()
        if assembly.finish_reason is None:
            raise BrokenStream("the stream ended before the response was complete")
        return assembly.response(self.model_name)

    # -- error messages: one line each, what failed and what to do -------------------------

    def _endpoint(self) -> Endpoint:
        timeout = self._timeout
        return Endpoint(
            name=self.name,
            model_name=self.model_name,
            base_url=self.base_url,
            key_hint=self.key_env or "the API key",
            read_timeout=timeout.read if isinstance(timeout, openai.Timeout) else timeout,
            timeout_error=openai.APITimeoutError,
            connection_error=openai.APIConnectionError,
        )


class _Assembly:
    """One streamed response being put together, chunk by chunk."""

    __slots__ = (
        "_calls",
        "_reasoning",
        "_sink",
        "_text",
        "finish_reason",
        "model",
        "usage",
    )

    def __init__(self, sink: DeltaSink) -> None:
        self._sink = sink
        self._text: list[str] = []
        self._reasoning: list[str] | None = None  # None: the provider sent no reasoning field
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, argument parts]
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.usage: dict[str, int] | None = None

    def add(self, chunk: Any) -> None:
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            usage = chunk.usage
            self.usage = {
                "prompt_tokens": usage.prompt_tokens or 0,
                "completion_tokens": usage.completion_tokens or 0,
                "total_tokens": usage.total_tokens or 0,
            }
        for choice in chunk.choices:
            if choice.index == 0:  # we never ask for n > 1
                self._add_delta(choice.delta)
                self.finish_reason = choice.finish_reason or self.finish_reason

    def _add_delta(self, delta: Any) -> None:
        reasoning = getattr(delta, "reasoning_content", None)  # DeepSeek's extra field
        if reasoning is not None:
            if self._reasoning is None:
                self._reasoning = []
            self._emit("reasoning", reasoning, self._reasoning)
        if delta.content:
            self._emit("text", delta.content, self._text)
        for call in delta.tool_calls or ():
            if type(call.index) is not int:  # the calls are put together by index
                raise TypeError(f"a tool call delta has index {call.index!r}")
            entry = self._calls.setdefault(call.index, [None, None, []])
            entry[0] = entry[0] or call.id
            if call.function is not None:
                entry[1] = entry[1] or call.function.name
                if call.function.arguments:
                    entry[2].append(call.function.arguments)

    def _emit(self, kind: Literal["text", "reasoning"], chunk: str, parts: list[str]) -> None:
        parts.append(chunk)
        self._sink(kind, chunk)

    def response(self, requested_model: str) -> ModelResponse:
        calls = tuple(
            ResponseToolCall(
                id=call_id or f"call_{uuid.uuid4().hex[:24]}",  # some servers send no id
                name=name or "",
                arguments="".join(parts),
            )
            for call_id, name, parts in (self._calls[i] for i in sorted(self._calls))
        )
        return ModelResponse(
            text="".join(self._text) or None,
            tool_calls=calls,
            reasoning_content=None if self._reasoning is None else "".join(self._reasoning),
            model=self.model or requested_model,
            usage=self.usage,
        )


def _context_exceeded(exc: openai.APIStatusError) -> bool:
    if exc.status_code not in (400, 413):
        return False
    body = exc.body
    error = body.get("error", body) if isinstance(body, Mapping) else None
    if isinstance(error, Mapping) and error.get("code") == _CONTEXT_CODE:
        return True
    return bool(_CONTEXT_WORDS.search(_provider_detail(exc)))


def _provider_detail(exc: openai.APIStatusError) -> str:
    """The provider's own message from an `{"error": {"message": ...}}` body, or the SDK's."""
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return one_line(error["message"], ERROR_WIDTH)
    return one_line(exc.message, ERROR_WIDTH)
