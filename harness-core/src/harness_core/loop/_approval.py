"""Approval: whether a call with effects outside the log may run, decided before it runs.

The policy decides per call: `auto` lets it run, `deny` refuses it, `ask` asks the host (the
terminal inline, the web page on the tool row, an ACP client through
`session/request_permission`). Every decision lands on the log as `tool/approval` before the
call runs or is refused, so `show`, the web page and a replay say who allowed what. A user's
"allow for this session" is folded from those events, never kept in memory only: it survives a
resume. See docs/security.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from ..log import ApprovalBy, ApprovalDecision, ApprovalScope, SessionLog

__all__ = [
    "POLICIES",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "Asker",
    "CannotAsk",
    "Decision",
    "Policy",
    "SessionGrants",
    "denied_text",
]

Policy = Literal["ask", "auto", "deny"]
POLICIES: Final[tuple[Policy, ...]] = ("ask", "auto", "deny")

# What a person answers: allow this call, allow this tool for the rest of the session, or no.
Answer = Literal["once", "session", "deny"]

DENIED_BY_POLICY: Final = "the approval policy is deny (--approval)"
DENIED_BY_USER: Final = "the user refused it"
NOBODY_TO_ASK: Final = (
    "the approval policy is ask and there is no one to ask here (no terminal); "
    "run with --approval auto to let tools run"
)


class CannotAsk(Exception):
    """Raised by an Asker that could not put the question (an ACP client without
    `session/request_permission`, or one that went away): the call is refused by the policy,
    and the message, the reason, reaches the model. Nobody refused it."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One question for a person: may this call run?"""

    session_id: str
    call_id: str
    tool: str
    summary: str  # the call's one line, as hosts show it
    detail: str | None  # what else the person must see (bash: the whole command)
    arguments: str  # the raw arguments, as the model sent them

    def question_id(self, asked_on: str) -> str:
        """The call's id as the host of session `asked_on` names the question: a subagent's
        call id is unique only in the subagent's session, so it is qualified with it
        (`SUBAGENT_SESSION/CALL_ID`) and never names one of the host session's calls."""
        if self.session_id == asked_on:
            return self.call_id
        return f"{self.session_id}/{self.call_id}"


Asker = Callable[[ApprovalRequest], Awaitable[Answer]]


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision as `tool/approval` records it, and the reason the model reads on a deny."""

    decision: ApprovalDecision
    by: ApprovalBy
    scope: ApprovalScope = "once"
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Approval:
    """An agent's approval policy and, for `ask`, the host that answers (None: nobody can)."""

    policy: Policy = "auto"
    asker: Asker | None = None

    async def decide(self, request: ApprovalRequest, granted: bool) -> Decision:
        """Decide one call; `granted` says a user allowed its tool for the session."""
        if self.policy == "auto":
            return Decision("allow", "policy")
        if self.policy == "deny":
            return Decision("deny", "policy", reason=DENIED_BY_POLICY)
        if granted:
            return Decision("allow", "user", "session")
        if self.asker is None:
            return Decision("deny", "policy", reason=NOBODY_TO_ASK)
        try:
            answer = await self.asker(request)
        except CannotAsk as exc:
            return Decision("deny", "policy", reason=str(exc))
        if answer == "deny":
            return Decision("deny", "user", reason=DENIED_BY_USER)
        return Decision("allow", "user", answer)


def denied_text(tool: str, reason: str) -> str:
    """The error result a refused call gets (docs/security.md)."""
    return f"Error: {tool} was denied: {reason}"


class SessionGrants:
    """The tools a user allowed for the session: those its log folded from its `tool/approval`
    events (`SessionLog.grants`), and those it started with. A subagent's session starts with
    its parent's grants (`inherited`): the person who allowed bash for the session also
    allowed it for the subagents that session starts.
    """

    def __init__(self, inherited: frozenset[str] = frozenset()) -> None:
        self._inherited = inherited

    def tools(self, session: SessionLog) -> frozenset[str]:
        return self._inherited | session.grants.tools
