"""What a turn is on a worker: the DBOS workflow `harness_turn`, and how it goes on.

A job is a JSON object: `session`, `prompt`, `model` (a spec, or None for the worker's
default), `disable` (plugins whose tools the turn goes without), `check` and `cwd` (a
batch task's), `batch` and `position` (its row). The workflow takes the session's writer,
then claims the turn number the log gives it next, in a DBOS step: DBOS records the answer,
so when the worker dies and another recovers the workflow, the step answers the number
first claimed, and the log says what became of that turn:

- never started: it runs now;
- open (the worker died in it): it goes on from where the log stops (`go_on`): each call
  that has no result is answered "interrupted" and the model is asked again, so no call runs
  a second time behind the log's back;
- ended: nothing runs again.

Then a batch task's check runs, and its row gets the turn's figures. Whoever can write the
queue chooses a check, so a check is a command like any other: it runs only on a worker
started with `--checks` and never under `--approval deny` (else it is recorded "skipped" and
nothing runs), in the sandbox the worker's bash runs in, in the task's directory, with the
tool environment (no keys, no store URL) and a time limit.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import anyio
from dbos import DBOS
from harness_core import secret
from harness_core.log import SessionLocked
from harness_core.tools import sandbox

from . import _tables
from ._engine import WORKFLOW

if TYPE_CHECKING:
    from harness_core.log import Event, SessionLog
    from harness_core.loop import Policy
    from harness_core.runtime import Runtime, SessionRuntime

__all__ = ["Summary", "WorkerHost", "harness_turn", "serve"]

logger = logging.getLogger("harness.worker")

# How long a turn waits for its session's writer: a dead worker's lock goes with its
# database connection, at once when its process died; longer means someone else writes it.
LOCK_WAIT: Final = 30.0
CHECK_TIMEOUT: Final = 600.0
CANCEL_POLL_SECONDS: Final = 0.5

_host: WorkerHost | None = None


def serve(host: WorkerHost) -> None:
    """Run this process's turns on `host` (before DBOS launches: recovery starts then)."""
    global _host
    _host = host


@DBOS.step(name="harness_claim_turn")
def _claim(next_turn: int) -> int:
    return next_turn


@DBOS.workflow(name=WORKFLOW)
def harness_turn(job: dict[str, Any]) -> dict[str, Any]:
    if _host is None:
        raise RuntimeError("harness_turn runs in `harness worker` only")
    return _host.run(job).as_dict()


@dataclass(frozen=True, slots=True)
class Summary:
    """What became of one turn, from its log (and its check)."""

    status: str
    error: str | None
    steps: int
    tokens: tuple[int, int, int]  # input, output, cached
    seconds: float
    plan_used: bool
    check: str | None  # "passed", "failed", "skipped", or None without a check

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "error": self.error,
            "steps": self.steps,
            "tokens": dict(zip(("input", "output", "cached"), self.tokens, strict=True)),
            "seconds": self.seconds,
            "plan_used": self.plan_used,
            "check": self.check,
        }


class WorkerHost:
    """Runs jobs on the process's runtime under the worker's approval policy."""

    def __init__(
        self,
        runtime: Runtime,
        policy: Policy,
        url: str,
        concurrency: int = 1,
        *,
        checks: bool = False,
    ) -> None:
        self.runtime = runtime
        self.policy = policy
        self.url = url
        # Checks run only where the worker's operator said so (`--checks`), never under deny.
        self.checks = checks and policy != "deny"
        # DBOS keeps one per-worker limit for the whole queue (the last worker started sets
        # it): a worker started with a smaller --concurrency still holds itself to its own.
        self._slots = threading.BoundedSemaphore(concurrency)

    def run(self, job: dict[str, Any]) -> Summary:
        with self._slots:
            return self._run(job)

    def _run(self, job: dict[str, Any]) -> Summary:
        self._record(job, state="running")
        workflow = DBOS.workflow_id  # this turn's, read here where DBOS's context is
        try:
            turn, events = anyio.run(self._turn, job, workflow)
            summary = self._summary(job, turn, events)
            summary = replace(summary, check=anyio.run(self._check, job))
        except Exception as exc:  # the turn could not run: say why on its row and result
            logger.warning("turn of session %s failed: %s", job["session"], exc)
            summary = Summary("error", str(exc), 0, (0, 0, 0), 0.0, False, None)
        self._record(
            job,
            state=summary.status,
            check_result=summary.check,
            steps=summary.steps,
            tokens_input=summary.tokens[0],
            tokens_output=summary.tokens[1],
            tokens_cached=summary.tokens[2],
            seconds=summary.seconds,
            plan_used=summary.plan_used,
        )
        return summary

    def _record(self, job: dict[str, Any], **fields: Any) -> None:
        if job.get("batch") is not None:  # only a batch's task has a row
            with _tables.connect(self.url) as conn:
                _tables.record(conn, job, **fields)

    async def _turn(
        self, job: dict[str, Any], workflow: str | None
    ) -> tuple[int, list[Event] | None]:
        """The turn's number, and its events when this process ran all of it."""
        session = await self._open(job)
        seen: list[Event] = []
        session.observe(lambda log, event: seen.append(event))
        try:
            assert session.log is not None  # held for the turn
            turn = _claim(session.log.next_turn)
            start = session.log.latest("turn/start")
            async with anyio.create_task_group() as group:
                if workflow is not None:
                    group.start_soon(_cancel_when_asked, session, workflow)
                if start is None or start.turn is None or start.turn < turn:
                    await session.run(job["prompt"], job.get("model"))
                elif _is_open(session.log, start):
                    await session.go_on(job.get("model"))
                    seen = []  # part of the turn is another process's: read it back
                group.cancel_scope.cancel()
            return turn, seen or None
        finally:
            await session.aclose()

    async def _open(self, job: dict[str, Any]) -> SessionRuntime:
        runtime = self.runtime
        approval = runtime.approval(self.policy, None)
        tools = runtime.host.tools.without(job.get("disable") or ())
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                session = runtime.open(
                    job["session"], runtime.model, approval=approval, tools=tools, go_on=True
                )
            except SessionLocked:
                if time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.2)
                continue
            session.default_spec = job.get("model")
            return session

    def _summary(self, job: dict[str, Any], turn: int, seen: list[Event] | None) -> Summary:
        if seen is None:  # a turn another process began: its events come from the store
            seen = list(self.runtime.store.read(job["session"]))
        events = [e for e in seen if e.turn == turn]
        end = next((e for e in reversed(events) if e.type == "turn/end"), None)
        steps, tokens = 0, [0, 0, 0]
        for event in events:
            if event.type == "message/assistant":
                steps += 1
                usage = event.data.get("usage") or {}
                tokens[0] += usage.get("prompt_tokens") or 0
                tokens[1] += usage.get("completion_tokens") or 0
                tokens[2] += usage.get("cache_read_tokens") or 0
        return Summary(
            status=str(end.data.get("status")) if end is not None else "error",
            error=end.data.get("error") if end is not None else "the turn did not end",
            steps=steps,
            tokens=(tokens[0], tokens[1], tokens[2]),
            seconds=_seconds(events[0], events[-1]) if events else 0.0,
            plan_used=any(e.type == "todo/write" for e in events),
            check=None,
        )

    async def _check(self, job: dict[str, Any]) -> str | None:
        """A batch task's check after its turn: exit 0 passes; "skipped" where none may run."""
        command = job.get("check")
        if not command:
            return None
        if not self.checks:
            return "skipped"
        cwd = job.get("cwd") or os.getcwd()
        try:
            code = await _sandboxed(str(command), str(cwd))
        except (OSError, sandbox.SandboxCrashed) as exc:
            logger.warning("the check of session %s did not run: %s", job["session"], exc)
            return "failed"
        if code is None:
            logger.warning(
                "the check of session %s timed out after %gs", job["session"], CHECK_TIMEOUT
            )
        return "passed" if code == 0 else "failed"


async def _cancel_when_asked(session: SessionRuntime, workflow: str) -> None:
    """Cancel the turn when its workflow is cancelled (`serve --queue`'s stop button asks
    DBOS, from another machine): the turn ends `cancelled` as Ctrl-C would end it."""
    while True:
        await anyio.sleep(CANCEL_POLL_SECONDS)
        status = await anyio.to_thread.run_sync(DBOS.get_workflow_status, workflow)
        if status is not None and status.status == "CANCELLED":
            session.cancel()
            return


def _is_open(log: SessionLog, start: Event) -> bool:
    end = log.latest("turn/end")
    return end is None or end.seq < start.seq


def _seconds(first: Event, last: Event) -> float:
    return (datetime.fromisoformat(last.ts) - datetime.fromisoformat(first.ts)).total_seconds()


class _CheckOwner:
    """What a check's sandbox belongs to: its own, ended when the check is over."""


async def _sandboxed(command: str, cwd: str) -> int | None:
    """`bash -c command`'s exit status, run as the bash tool runs a call (the installed
    sandbox, the tool environment), or None when it ran out of time (then it is killed)."""
    owner = _CheckOwner()
    started = await sandbox.current().start(
        ["bash", "-c", command],
        cwd,
        secret.current().tool_environment(os.environ),
        owner=owner,
    )
    try:
        with anyio.move_on_after(CHECK_TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(_drain, started)
                code = await started.wait()
                started.kill()  # what it left behind, so the output ends
            return code
        return None
    finally:
        started.kill()
        await started.aclose()


async def _drain(command: sandbox.Command) -> None:
    """A check is judged by its status; its output is read only so that it never blocks."""
    async for _ in command.output():
        pass
