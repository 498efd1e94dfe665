"""The core events' payload models: what the write path validates each append against.

Imported on first use (a write, or code that builds payloads): `_types.py` names them, so
reading a session never loads pydantic.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

__all__ = [
    "ApprovalBy",
    "ApprovalDecision",
    "ApprovalScope",
    "AssistantMessage",
    "ContextCompact",
    "SessionStart",
    "ThinkingBlock",
    "ToolApproval",
    "ToolCall",
    "ToolResultPayload",
    "TurnEnd",
    "TurnStart",
    "TurnStatus",
    "Usage",
    "UserMessage",
]


class _Payload(BaseModel):
    # Unknown keys are kept, not rejected: a newer harness may add optional fields and an
    # older reader must still fold the event.
    model_config = ConfigDict(extra="allow", frozen=True)


class SessionStart(_Payload):
    """The first event of every session."""

    id: str
    created: str
    harness_version: str
    cwd: str | None = None
    system_prompt: str | None = None
    parent_session: str | None = None
    parent_call_id: str | None = None

    @classmethod
    def new(
        cls,
        *,
        system_prompt: str | None = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        parent_call_id: str | None = None,
    ) -> SessionStart:
        """The session/start of a new session, with a new id (`YYYYmmdd-HHMMSS-xxxxxx`, in
        UTC: the ids sort by creation) and this version: what every store's `create` writes."""
        import secrets
        from datetime import UTC, datetime

        from .._version import __version__

        now = datetime.now(UTC)
        return cls(
            id=now.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3),
            created=now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            harness_version=__version__,
            cwd=cwd,
            system_prompt=system_prompt,
            parent_session=parent_session,
            parent_call_id=parent_call_id,
        )


class TurnStart(_Payload):
    """Opens a turn; every later event up to `turn/end` belongs to it."""


TurnStatus = Literal["completed", "cancelled", "error", "max_steps"]


class TurnEnd(_Payload):
    """Closes the open turn with how it ended."""

    status: TurnStatus
    error: str | None = None


class UserMessage(_Payload):
    text: str


class ToolCall(_Payload):
    id: str
    name: str
    # The raw argument string exactly as the model produced it, so malformed JSON is kept and
    # the model's history is replayed byte for byte.
    arguments: str


class _Sparse(_Payload):
    """A payload whose later optional fields are written only when set: events that have no
    use for them keep the exact shape older harnesses wrote (and older readers expect)."""

    _sparse: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        for key in self._sparse:
            if data.get(key) is None:
                data.pop(key, None)
        return data


class Usage(_Sparse):
    """Tokens of one request. `prompt_tokens` counts every input token; `cache_read_tokens`
    and `cache_write_tokens` (only when the provider reports them) are the part of it its
    prompt cache served, and the part it stored."""

    _sparse = ("cache_read_tokens", "cache_write_tokens")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class ThinkingBlock(_Payload):
    """One block of the model's thinking, kept so it can be sent back as the provider needs:
    `text` with the provider's `signature`, or a redacted block's opaque `redacted` data."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


class AssistantMessage(_Sparse):
    _sparse = ("thinking",)

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning_content: str | None = None
    model: str | None = None
    usage: Usage | None = None
    thinking: tuple[ThinkingBlock, ...] | None = None  # None: the provider sent none


class ToolResultPayload(_Payload):
    """`tool/result`: a call's result as the log keeps it (a tool returns a tools.ToolResult)."""

    call_id: str
    tool_name: str
    text: str
    is_error: bool = False
    data: Any = Field(default=None)


ApprovalDecision = Literal["allow", "deny"]
ApprovalBy = Literal["user", "policy"]
ApprovalScope = Literal["once", "session"]


class ToolApproval(_Payload):
    """`tool/approval`: who let a call run (or refused it), appended before it runs.

    `scope` "session" is a user's "allow for this session": later calls of the same tool in
    the session run without asking, also after a resume, because it is folded from here.
    """

    call_id: str
    decision: ApprovalDecision
    by: ApprovalBy
    scope: ApprovalScope = "once"


class ContextCompact(_Payload):
    """`context/compact`: `summary` stands for events `first_seq..last_seq` in the messages.

    The events themselves stay on the log; `model` wrote the summary.
    """

    summary: str
    first_seq: int
    last_seq: int
    model: str
