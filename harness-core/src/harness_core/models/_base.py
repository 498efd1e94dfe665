"""The model interface the loop drives: one `respond` per step, streaming text as it comes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self, runtime_checkable

__all__ = [
    "ContextLengthExceeded",
    "DeltaSink",
    "Model",
    "ModelBase",
    "ModelError",
    "ModelResponse",
    "ResponseToolCall",
    "Thinking",
]

# Streaming callback: ("text" | "reasoning", chunk). Hosts render it; nothing is logged until
# the whole response arrives as one message/assistant event.
DeltaSink = Callable[[Literal["text", "reasoning"], str], None]


class ModelError(RuntimeError):
    """The model could not answer (after retries). The turn ends as `error` with this text."""


class ContextLengthExceeded(ModelError):
    """The provider refused the request as longer than the model's context window.

    The loop compacts the session once and asks again; a second refusal ends the turn.
    """


@dataclass(frozen=True, slots=True)
class ResponseToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the provider streamed it (Anthropic: its parsed input, dumped)


@dataclass(frozen=True, slots=True)
class Thinking:
    """One block of a model's thinking that its provider wants back unchanged later.

    `signature` is the provider's proof that `text` is what the model thought; a redacted
    block has no readable text, only the provider's opaque `redacted` data.
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str | None = None
    tool_calls: tuple[ResponseToolCall, ...] = ()
    reasoning_content: str | None = None
    model: str | None = None
    # prompt_tokens, completion_tokens, total_tokens; cache_read_tokens and cache_write_tokens
    # when the provider reports them (the share of prompt_tokens its prompt cache served/took).
    usage: dict[str, int] | None = field(default=None)
    thinking: tuple[Thinking, ...] = ()  # in the order the model produced it, before the text


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a chat request with text and tool calls: everything a host
    or the loop asks of a model (`ModelBase` gives the defaults)."""

    name: str

    @property
    def context_window(self) -> int | None:
        """Tokens the model reads at most (compaction uses it), or None when unknown."""
        ...

    @property
    def remaining(self) -> int | None:
        """Steps a scripted model has not played yet; None for a model that is no script."""
        ...

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        """One model response for `messages`; raise ModelError when it cannot."""
        ...

    async def aclose(self) -> None:
        """Release what the model holds (an HTTP client's connections); idempotent."""
        ...


class ModelBase:
    """The defaults of `Model` a model without a window, a script or a client needs, and
    `async with model:`, which closes it."""

    name: str = "model"
    context_window: int | None = None
    remaining: int | None = None

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
