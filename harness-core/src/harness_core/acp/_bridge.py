"""The ACP agent behind `harness acp`: sessions, turns and what the client is told about them.

Every notification is a rendering of the shared conversation projection (`Conversation`):
live, each appended event is applied and its change becomes `session/update`s; on
`session/load` the whole log is folded first and replayed. One rule decides what is
presented: a tool whose only effect is its own log event (`log_only`, todo_write) changes
nothing a client could act on, and its state (the plan) is a presentation this automation
bridge deliberately does not send (notes/acp-automation-only.md). Its calls still run and
land on the log.

Under `--approval ask` a call with effects outside the log is asked about through
`session/request_permission` once its `tool_call` (status `pending`) is out; the client's
option becomes the decision the loop puts on the log (docs/acp.md).

The class implements the agent side of the protocol by duck typing, not by subclassing the
SDK's `Agent` protocol: a subclass would inherit a method for every request and answer the
ones it does not implement with an empty result instead of `-32601`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    StopReason,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
)

from .._version import __version__
from ..hosts import Change, Conversation, McpServerSpec, ToolRow, one_line, visible
from ..hosts._present import call_label
from ..log import Event, LogWriteError, SessionLog, SessionNotFound
from ..loop import Answer, Approval, ApprovalRequest, CannotAsk
from ..runtime import Runtime, SessionRuntime, describe_failure, utf8_text
from ..tools import ToolRegistry

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ..loop import Policy
    from ..models import Model

__all__ = ["Bridge"]

logger = logging.getLogger("harness.acp")

INVALID_PARAMS: Final = -32602
SERVER_ERROR: Final = -32603
STOP_REASONS: Final[dict[str, StopReason]] = {
    "completed": "end_turn",
    "cancelled": "cancelled",
    "max_steps": "max_turn_requests",
}
ROW_STATUS: Final[dict[str, ToolCallStatus]] = {
    "ok": "completed",
    "error": "failed",
    "running": "in_progress",
}
# The client picks an icon by kind; tools it cannot classify are "other".
TOOL_KINDS: Final[dict[str, ToolKind]] = {"bash": "execute"}
# The three answers of an approval question, as ACP permission options (option id = kind).
PERMISSION_OPTIONS: Final = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Deny", kind="reject_once"),
]
ANSWERS: Final[dict[str, Answer]] = {"allow_once": "once", "allow_always": "session"}

Update = Any  # one of the SDK's session update models


class Bridge:
    """The agent side of ACP for one client connection: its sessions and their turns."""

    def __init__(self, runtime: Runtime, model_flag: str | None, policy: Policy = "auto") -> None:
        self.runtime = runtime
        self.model_flag = model_flag
        self.policy = policy
        self.sessions: dict[str, _Session] = {}
        self.client: Client | None = None
        # The plugin that runs the MCP servers a client names per session, if one is installed.
        self.mcp = runtime.host.hooks.session_mcp()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        # Version 1 is the only one this bridge speaks; a client that cannot will disconnect.
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                mcp_capabilities=McpCapabilities(http=bool(self.mcp and self.mcp.http), sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="harness", title="harness", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        directory = _directory(cwd)
        model = self._model()  # before the session: a bad model spec leaves none
        session = await self._open(None, model, mcp_servers, directory)
        return NewSessionResponse(session_id=session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        session = self.sessions.get(session_id)
        if session is None:
            session = await self._open(session_id, self._model(), mcp_servers, cwd)
            if session.cwd not in (None, cwd):
                logger.warning(
                    "session %s runs its tools in %s, where it was created, not in %s",
                    session_id,
                    session.cwd,
                    cwd,
                )
        elif session.running:
            raise RequestError(SERVER_ERROR, f"session {session_id} is running a prompt")
        await session.replay()
        return LoadSessionResponse()

    async def list_sessions(self, cwd: str | None = None, **_: Any) -> ListSessionsResponse:
        infos = [
            SessionInfo(
                session_id=summary.id,
                cwd=summary.cwd or "",
                title=one_line(summary.title) if summary.title else None,
                updated_at=summary.updated,
            )
            for summary in self.runtime.store.list()
            # Subagent sessions belong to their parent's tool call, not to the client's list.
            if summary.problem is None and summary.parent_session is None
            if cwd is None or summary.cwd == cwd
        ]
        return ListSessionsResponse(sessions=infos)

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        return await self._session(session_id).prompt(_prompt_text(prompt))

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        # Only a running prompt is cancelled: the loop would remember a cancel that comes
        # between turns and end the next turn at once, which no ACP client means.
        if session is not None:
            session.runtime.cancel()

    async def aclose(self) -> None:
        """Release every session (its writer lock) and close the models."""
        for session in self.sessions.values():
            await session.aclose()
        self.sessions.clear()

    # -- helpers ---------------------------------------------------------------------------

    def _model(self) -> Model:
        """The model a new session plays: its own player for a scripted spec."""
        try:
            return self.runtime.model(self.model_flag, None)
        except Exception as exc:
            raise _request_error(exc) from None

    async def _open(
        self, session_id: str | None, model: Model, mcp_servers: list[Any] | None, cwd: str
    ) -> _Session:
        """A new session in `cwd` (session_id None) or an existing one, as this connection's:
        its writer taken (a crashed turn closed), its client's MCP servers started."""
        assert self.client is not None, "the connection calls on_connect first"
        stop: Callable[[], None] | None = None
        try:
            tools, stop = self._client_tools(mcp_servers or [], cwd)
            runtime = self.runtime.open(session_id, model, tools=tools, cwd=cwd)
        except BaseException as exc:
            if stop is not None:  # the client's MCP servers started: stop them again
                stop()
            if not isinstance(exc, Exception):
                raise
            await model.aclose()
            if isinstance(exc, SessionNotFound):
                raise RequestError(INVALID_PARAMS, one_line(str(exc), 2000)) from None
            raise _request_error(exc) from None
        if stop is not None:
            runtime.on_close(stop)
        session = _Session(runtime, self.client, self.policy)
        self.sessions[session.id] = session
        return session

    def _client_tools(
        self, servers: list[Any], cwd: str
    ) -> tuple[ToolRegistry, Callable[[], None] | None]:
        """The session's tools: the host's, plus those of the MCP servers the client names."""
        specs = [spec for server in servers if (spec := self._mcp_spec(server)) is not None]
        if not specs:
            return self.runtime.host.tools, None
        if self.mcp is None:
            names = ", ".join(spec.name for spec in specs)
            logger.warning("MCP servers %s not started: install harness-tool-mcp", names)
            return self.runtime.host.tools, None
        tools = ToolRegistry(base=self.runtime.host.tools)
        return tools, self.mcp.attach(specs, tools, cwd)

    def _mcp_spec(self, server: Any) -> McpServerSpec | None:
        if isinstance(server, McpServerStdio):
            env = tuple((variable.name, variable.value) for variable in server.env)
            return McpServerSpec(server.name, server.command, tuple(server.args), env)
        if isinstance(server, HttpMcpServer) and self.mcp is not None and self.mcp.http:
            headers = tuple((header.name, header.value) for header in server.headers)
            return McpServerSpec(server.name, url=server.url, headers=headers)
        # initialize said which kinds work; a client that sends another is told on stderr.
        kind = getattr(server, "type", "unknown")
        logger.warning("MCP server %s not started: %s servers are not supported", server.name, kind)
        return None

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                INVALID_PARAMS,
                f"no session {session_id!r} on this connection: session/new or session/load it",
            )
        return session


class _Session:
    """One harness session a client drives: its runtime, projection and update queue."""

    def __init__(self, runtime: SessionRuntime, client: Client, policy: Policy) -> None:
        log = runtime.log
        assert log is not None  # the bridge holds its sessions' writers while it serves them
        self.runtime = runtime
        self.log = log
        self.id = runtime.id
        self.client = client
        self.tools = runtime.tools
        self.asks = policy == "ask"
        self._client_failed = False  # a failed question is reported once per session
        # Live changes only; `replay` folds the history anew. Nothing before now is open: the
        # runtime closed any turn a crashed process left open when it took the writer.
        self.conversation = Conversation(keep=False)
        # Subagents share this Approval, so their questions reach the client on this session.
        approval = Approval(policy, self._ask)
        runtime.set_approval(approval)
        runtime.observe(self._on_event, self._on_delta)
        self._streamed: set[str] = set()  # delta kinds the current step already sent
        # Callbacks from the loop are synchronous; the queue keeps the updates in order and
        # `prompt` drains it before it answers, so the answer comes after every update.
        self._updates: asyncio.Queue[Update] = asyncio.Queue()
        self._pump = asyncio.create_task(self._send_updates(), name=f"acp updates {self.id}")

    @property
    def running(self) -> bool:
        return self.runtime.busy

    @property
    def cwd(self) -> str | None:
        """Where the session's tools run (its session/start's `cwd`)."""
        agent = self.runtime.agent
        return agent.cwd if agent is not None else None

    async def prompt(self, text: str) -> PromptResponse:
        if self.running:
            raise RequestError(SERVER_ERROR, f"session {self.id} is already running a prompt")
        try:
            outcome = await self.runtime.run(text)
        except LogWriteError as exc:
            reason = one_line(f"the session log refused a write: {exc}", 2000)
            raise RequestError(SERVER_ERROR, reason) from None
        await self._updates.join()
        if outcome.status == "error":
            raise RequestError(SERVER_ERROR, one_line(outcome.error or "the turn failed", 2000))
        return PromptResponse(stop_reason=STOP_REASONS[outcome.status])

    async def replay(self) -> None:
        """The conversation so far, as the client would have seen it live, then returns."""
        folded = Conversation()
        for event in self.log.history():
            folded.apply(event)
        for entry in folded.entries:
            if entry.role == "user":
                self._updates.put_nowait(update_user_message_text(entry.text))
                continue
            if entry.reasoning:
                self._updates.put_nowait(update_agent_thought_text(entry.reasoning))
            if entry.text:
                self._updates.put_nowait(update_agent_message_text(entry.text))
            for row in entry.rows:
                if self._presented(row):
                    self._updates.put_nowait(self._call_started(row, final=True))
        await self._updates.join()

    async def aclose(self) -> None:
        """Models closed, the client's MCP servers stopped, the writer let go."""
        self._pump.cancel()
        await self.runtime.aclose()

    # -- the loop's callbacks --------------------------------------------------------------

    async def _ask(self, request: ApprovalRequest) -> Answer:
        """The agent's Asker: `session/request_permission` for one call, mapped to an Answer.

        A `cancelled` outcome refuses the call; a failed request refuses it by the policy,
        saying why (CannotAsk). A `session/cancel` while
        the client decides cancels the turn instead: the CancelledError passes through and
        the loop answers the call "interrupted".
        """
        await self._updates.join()  # the call's `tool_call` reaches the client first
        call_id = request.question_id(self.id)  # the client never saw a subagent's calls
        # What the client shows its user is escaped (`visible`), so a bidi override cannot
        # make the command read differently from the one that runs; rawInput stays as sent.
        detail = None if request.detail is None else visible(request.detail)
        tool_call = ToolCallUpdate(
            tool_call_id=call_id,
            title=visible(one_line(request.summary)),  # as the `tool_call` titles it
            kind=TOOL_KINDS.get(request.tool, "other"),
            status="pending",
            content=[tool_content(text_block(detail))] if detail is not None else None,
            raw_input=_arguments(request.arguments),
        )
        try:
            response = await self.client.request_permission(
                session_id=self.id, tool_call=tool_call, options=PERMISSION_OPTIONS
            )
        except Exception as exc:  # a client without the method, or one that went away
            why = one_line(str(exc), 300)
            if not self._client_failed:
                self._client_failed = True
                logger.warning(
                    "the client could not be asked whether %s may run (%s): it is refused",
                    request.tool,
                    why,
                )
            raise CannotAsk(
                f"the approval policy is ask and the ACP client could not be asked ({why}); "
                "run with --approval auto to let tools run"
            ) from None
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome):
            return ANSWERS.get(outcome.option_id, "deny")
        # ACP clients answer `cancelled` right after they send session/cancel: let that
        # cancel reach the turn first, so the call is answered interrupted, not denied.
        await asyncio.sleep(0)
        return "deny"

    def _on_event(self, log: SessionLog, event: Event) -> None:
        if log is not self.log or not self.running:
            # A subagent's session (the client sees its parent's tool call only), or the
            # repair of a crashed turn, which the fold in __init__ covers.
            return
        for update in self._live(self.conversation.apply(event)):
            self._updates.put_nowait(update)

    def _on_delta(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        self._streamed.add(kind)
        if kind == "text":
            self._updates.put_nowait(update_agent_message_text(chunk))
        else:
            self._updates.put_nowait(update_agent_thought_text(chunk))

    def _live(self, change: Change) -> list[Update]:
        if change.kind == "assistant" and change.entry is not None:
            entry, streamed = change.entry, self._streamed
            self._streamed = set()
            # A model that does not stream sent no deltas: its text goes out whole.
            updates: list[Update] = []
            if entry.reasoning and "reasoning" not in streamed:
                updates.append(update_agent_thought_text(entry.reasoning))
            if entry.text and "text" not in streamed:
                updates.append(update_agent_message_text(entry.text))
            updates += [self._call_started(r) for r in entry.rows if self._presented(r)]
            return updates
        if change.kind == "approval" and change.row is not None:
            row = change.row
            if self._waits(row) and (row.approval or {}).get("decision") == "allow":
                return [update_tool_call(row.call_id, status="in_progress")]
        if change.kind == "row_finished" and change.row is not None:
            row = change.row
            if self._presented(row):
                return [
                    update_tool_call(
                        row.call_id,
                        status=ROW_STATUS[row.state],
                        content=[tool_content(text_block(row.text or ""))],
                        raw_output=row.data,
                    )
                ]
        return []

    # -- presentation ----------------------------------------------------------------------

    def _presented(self, row: ToolRow) -> bool:
        """Whether the client is told about a call: not for log-only tools (todo_write)."""
        tool = self.tools.get(row.name)
        return tool is None or tool.effect != "log_only"

    def _waits(self, row: ToolRow) -> bool:
        """Whether a call starts `pending`: the policy asks before it runs (approval)."""
        tool = self.tools.get(row.name)
        return self.asks and tool is not None and tool.effect == "outside"

    def _call_started(self, row: ToolRow, *, final: bool = False) -> Update:
        if final:
            status = ROW_STATUS[row.state]
        else:
            status = "pending" if self._waits(row) else "in_progress"
        return start_tool_call(
            row.call_id,
            visible(call_label(self.tools, row.name, row.arguments)),  # shown while it is asked
            kind=TOOL_KINDS.get(row.name, "other"),
            status=status,
            content=[tool_content(text_block(row.text))] if final and row.text else None,
            raw_input=_arguments(row.arguments),
        )

    async def _send_updates(self) -> None:
        while True:
            update = await self._updates.get()
            try:
                await self.client.session_update(self.id, update)
            except Exception as exc:  # the client went away: the turn still lands on the log
                logger.debug("session/update for %s not sent: %s", self.id, exc)
            finally:
                self._updates.task_done()


def _request_error(exc: Exception) -> RequestError:
    """The one-line reason for a failure a user can fix; anything else is re-raised."""
    reason = describe_failure(exc)
    if reason is None:
        raise exc
    return RequestError(SERVER_ERROR, one_line(reason, 2000))


def _directory(cwd: str) -> str:
    try:
        cwd = utf8_text(cwd, "cwd", "pass an absolute path of an existing directory")
    except Exception as exc:
        raise RequestError(INVALID_PARAMS, str(exc)) from None
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise RequestError(INVALID_PARAMS, f"cwd {cwd!r} is not an absolute path of a directory")
    return cwd


def _prompt_text(blocks: list[Any]) -> str:
    """The prompt's text blocks, and resource links as their URI (the tools can read them)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(block.uri)
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            parts.append(block.resource.text)
    text = "\n\n".join(parts)
    if not text.strip():
        raise RequestError(INVALID_PARAMS, "the prompt has no text")
    try:
        return utf8_text(text, "the prompt", "send UTF-8 text")
    except Exception as exc:
        raise RequestError(INVALID_PARAMS, str(exc)) from None


def _arguments(raw: str) -> Any:
    """A call's arguments as JSON for `rawInput`; the raw string when the model sent bad JSON."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
