"""Compaction: the session's own model summarizes a prefix of its history, on the log.

    span     = projection.compaction_range(keep, ..)  the prefix before the kept tail
    request  = messages[:span] + SUMMARY_PROMPT       the session's model, like any step
    append     context/compact {summary, first_seq, last_seq, model}

The request repeats the prefix of the last request exactly, so a provider's prompt cache
serves it. Nothing is appended until the summary is in: a failed or cancelled request leaves
the log as it was. The projection renders the summary (and what plugins carry, such as the
plan) in place of the span; the events stay on the log. See docs/loop.md, "Compaction".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..log import ContextCompact, SessionLog
from ..models import Model, ModelError
from ..tools import ToolRegistry

__all__ = [
    "BY_HAND_KEEP",
    "DEFAULT_COMPACT_AT",
    "DEFAULT_KEEP",
    "SUMMARY_PROMPT",
    "CompactionPolicy",
    "NothingToCompact",
    "request_summary",
]

# The one summarization prompt. It asks for what the next steps need, not a story of the past.
SUMMARY_PROMPT: Final = """\
The conversation above is about to be replaced by a summary, to free context. Write that \
summary now, as plain text, without calling any tool. Include: the user's requests and \
constraints, in their words where it matters; what has been done and what was found (files, \
commands, results, errors and their causes); decisions taken and why; and exactly where the \
work stands and what the next step is. Be specific and brief: you will continue from this \
summary alone."""

DEFAULT_COMPACT_AT: Final = 0.8  # of the context window, in the last request's prompt tokens
DEFAULT_KEEP: Final = 4  # trailing messages a turn's compaction keeps verbatim
# A compaction by hand runs between turns and summarizes everything: the next turn starts
# from the summary (and the plan), as a user who asks for it expects.
BY_HAND_KEEP: Final = 0


class NothingToCompact(ModelError):
    """The history has nothing before its kept tail (or a call is still open)."""


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When a turn compacts on its own, and how much recent history stays verbatim.

    `context_window` in tokens (None: the model's own `context_window`, else never by size);
    a turn compacts before a model call once the previous request's prompt tokens reached
    `compact_at` of it.
    """

    context_window: int | None = None
    compact_at: float = DEFAULT_COMPACT_AT
    keep: int = DEFAULT_KEEP

    def limit(self, model: Model) -> int | None:
        """Prompt tokens at which a compaction is due, or None when the window is unknown."""
        window = self.context_window or model.context_window
        return int(window * self.compact_at) if isinstance(window, int) and window > 0 else None


async def request_summary(
    session: SessionLog, model: Model, tools: ToolRegistry, keep: int
) -> ContextCompact:
    """Ask `model` to summarize all but the last `keep` messages (0: all); append nothing.

    Raises NothingToCompact, or ModelError when the model fails or answers with anything
    but text (a scripted model must answer with a `text` step).
    """
    span = session.projection.compaction_range(keep, session.next_seq - 1)
    if span is None:
        raise NothingToCompact(f"session {session.session_id} has nothing to compact yet")
    prefix = session.projection.request_messages()[: span.messages]
    request = [*prefix, {"role": "user", "content": SUMMARY_PROMPT}]
    response = await model.respond(request, tools.schemas(), None)
    if response.tool_calls or not (response.text or "").strip():
        raise ModelError(
            f"{model.name} answered the summary request with "
            f"{'tool calls' if response.tool_calls else 'no text'}; a summary must be text"
        )
    return ContextCompact(
        summary=response.text or "",
        first_seq=span.first_seq,
        last_seq=span.last_seq,
        model=response.model or model.name,
    )
