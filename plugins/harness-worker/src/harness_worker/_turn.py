"""What a turn is on a worker: the DBOS workflow `harness_turn`, and how it goes on.

A job is a JSON object (`_job.Job`, checked before anything runs: a row that is not one ends
as an error, with one line). The workflow takes the session's writer,
then claims the turn number the log gives it next, in a DBOS step: DBOS records the answer,
so when the worker dies and another recovers the workflow, the step answers the number
first claimed, and the log says what became of that turn:

- never started: it runs now;
- open (the worker died in it): it goes on from where the log stops (`go_on`): each call
  that has no result is answered "interrupted" and the model is asked again, so no call runs
  a second time behind the log's back;
- ended: nothing runs again.

When the worker leaves (SIGTERM past its grace, or its database connection lost) it abandons
the turns still running (`SessionRuntime.abandon`): each stops where it is and stays open in
the log, and the workflow leaves by raising `Left`, so DBOS records no outcome and it stays
PENDING for a peer to go on with, exactly as if the worker had died.

A batch sample with a workspace gets its own copy of it, made on this worker before the turn
(`_workspace.py`; the session records the copy as its directory), and loses it after the
check unless its batch keeps copies. Then a batch task's check runs, and its row gets the
turn's figures. Whoever can write the
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
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio
from dbos import DBOS
from harness_core import secret
from harness_core.log import SessionLocked
from harness_core.loop import TurnAbandoned
from harness_core.runtime import SetupError
from harness_core.tools import sandbox

from . import _tables, _workspace
from ._engine import QUEUE, WORKFLOW
from ._job import Job, parse

if TYPE_CHECKING:
    from harness_core.log import Event, SessionLog
    from harness_core.loop import Policy
    from harness_core.runtime import Runtime, SessionRuntime

__all__ = ["Left", "Summary", "WorkerHost", "harness_turn", "serve"]

logger = logging.getLogger("harness.worker")

# How long a turn waits for its session's writer: a dead worker's lock goes with its
# database connection, at once when its process died; longer means someone else writes it.
LOCK_WAIT: Final = 30.0
CHECK_TIMEOUT: Final = 600.0
CANCEL_POLL_SECONDS: Final = 0.5
# How soon a running turn notices that its worker leaves: a flag in memory, so it costs nothing.
LEAVE_POLL_SECONDS: Final = 0.1
# DBOS hands a taken workflow to a thread within milliseconds; one not in `harness_turn` after
# this long never will be.
STRANDED_SECONDS: Final = 10.0

_host: WorkerHost | None = None


def serve(host: WorkerHost) -> None:
    """Run this process's turns on `host` (before DBOS launches: recovery starts then)."""
    global _host
    _host = host


class Left(BaseException):
    """The worker left while this turn ran: the turn stays open in the log and its workflow
    PENDING, for a peer to go on with.

    A BaseException on purpose: DBOS records a workflow's outcome when it returns or raises an
    Exception, and only then; anything else leaves the workflow as a dead process leaves it.
    Recording an outcome here (an error, or a turn closed `cancelled`) would tell the peer
    that recovers the workflow that the turn is over, and the rest of it would be lost."""


@DBOS.step(name="harness_claim_turn")
def _claim(next_turn: int) -> int:
    return next_turn


@DBOS.workflow(name=WORKFLOW)
def harness_turn(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """One queued turn; any arguments at all, since whoever writes the queue chooses them."""
    if _host is None:
        raise RuntimeError("harness_turn runs in `harness worker` only")
    workflow = DBOS.workflow_id
    job = parse(args, kwargs)
    if isinstance(job, str):
        logger.warning("queued turn %s is not a job (%s): it ends as an error", workflow, job)
        _host.reject(args)
        return Summary("error", f"not a job: {job}", 0, (0, 0, 0), 0.0, False, None).as_dict()
    with _host.started(workflow):
        return _host.run(job).as_dict()  # or Left, which DBOS does not record


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
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        self.runtime = runtime
        self.policy = policy
        self.url = url
        # Checks run only where the worker's operator said so (`--checks`), never under deny.
        self.checks = checks and policy != "deny"
        # DBOS keeps one per-worker limit for the whole queue (the last worker started sets
        # it): a worker started with a smaller --concurrency still holds itself to its own.
        self._slots = threading.BoundedSemaphore(concurrency)
        self._active: set[str | None] = set()  # the workflows in `harness_turn` now
        self._stranded: dict[str, float] = {}  # first seen taken and not started: when
        self._copies: set[str] = set()  # the workspace copies turns of this process work in
        self._lock = threading.Lock()
        self._alive = alive  # whether this worker still holds its place (its heartbeat)
        self._stopping = threading.Event()  # SIGTERM: DBOS is being shut down
        self._leaving = threading.Event()  # running turns are abandoned

    @contextmanager
    def started(self, workflow: str | None) -> Iterator[None]:
        with self._lock:
            self._active.add(workflow)
        try:
            yield
        finally:
            with self._lock:
                self._active.discard(workflow)

    def running(self) -> bool:
        """Whether a turn is in `harness_turn` now."""
        with self._lock:
            return bool(self._active)

    def stop(self) -> None:
        """DBOS is about to be shut down beneath the running turns: a turn that fails from
        now on is handed on, never recorded as an error that may be the shutdown's."""
        self._stopping.set()

    def abandon(self) -> int:
        """Abandon every running turn: each stops within LEAVE_POLL_SECONDS, its command
        killed, nothing more written, its workflow left PENDING (`Left`); so does any turn
        DBOS hands over from now on. How many were running."""
        with self._lock:
            count = len(self._active)
        self._leaving.set()
        return count

    def wait(self) -> None:
        """Until no turn is in `harness_turn` (after `abandon`: at once)."""
        while self.running():
            time.sleep(LEAVE_POLL_SECONDS / 2)

    def _handing_on(self) -> bool:
        """Whether a turn that failed now is a peer's to go on with rather than this
        worker's to end: the worker is stopping or leaving, or was taken for dead (a peer
        ended its connections, which is how the turn failed)."""
        return self._stopping.is_set() or self._leaving.is_set() or not self._alive()

    def stranded(self, worker_id: str) -> list[tuple[str, str]]:
        """(id, name) of each workflow DBOS took for this worker from the queue that never
        reached `harness_turn` within STRANDED_SECONDS: a row of another workflow's name, or
        inputs DBOS cannot read, which would otherwise hold its partition PENDING forever."""
        flows = DBOS.list_workflows(
            status="PENDING",
            executor_id=worker_id,
            queue_name=QUEUE,
            load_input=False,
            load_output=False,
        )
        now, found = time.monotonic(), []
        with self._lock:
            waiting = {f.workflow_id: f.name for f in flows if f.workflow_id not in self._active}
            self._stranded = {w: self._stranded.get(w, now) for w in waiting}
            for workflow, since in self._stranded.items():
                if now - since >= STRANDED_SECONDS:
                    found.append((workflow, waiting[workflow]))
        return found

    def reject(self, args: tuple[Any, ...]) -> None:
        """A row that is not a job but names a batch's task (one key of it was bad): the
        task ends as an error, so `harness batch --wait` does not wait for it forever."""
        raw = args[0] if len(args) == 1 and isinstance(args[0], dict) else {}
        batch, position = raw.get("batch"), raw.get("position")
        if not (isinstance(batch, str) and "\0" not in batch and type(position) is int):
            return
        session = raw.get("session")
        session = session if isinstance(session, str) and "\0" not in session else None
        if -(2**31) <= position < 2**31:  # the column's range
            with _tables.connect(self.url) as conn:
                _tables.record(conn, batch, position, session, state="error")

    def run(self, job: Job) -> Summary:
        with self._slots:
            if self._leaving.is_set():  # taken, or let in, as the worker leaves: not started
                raise Left
            return self._run(job)

    def _run(self, job: Job) -> Summary:
        self._record(job, state="running")
        workflow = DBOS.workflow_id  # this turn's, read here where DBOS's context is
        try:
            turn, events = anyio.run(self._turn, job, workflow)
            summary = self._summary(job, turn, events)
            summary = replace(summary, check=anyio.run(self._check, job))
        except Exception as exc:  # the turn could not run: say why on its row and result
            if self._handing_on():
                raise Left from exc
            logger.warning("turn of session %s failed: %s", job.session, exc)
            summary = Summary("error", str(exc), 0, (0, 0, 0), 0.0, False, None)
        copy = self._clean(job)
        self._record(
            job,
            workspace_copy=copy,
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

    def _record(self, job: Job, **fields: Any) -> None:
        if job.batch is not None and job.position is not None:  # only a batch's task has a row
            with _tables.connect(self.url) as conn:
                _tables.record(conn, job.batch, job.position, job.session, **fields)

    def _clean(self, job: Job) -> str | None:
        """Remove the sample's workspace copy after its check, unless the batch keeps it:
        where the copy is now (None: gone, or the sample had none)."""
        with self._lock:  # only a copy this run made or went on in: never another turn's
            if job.workspace is None or job.cwd not in self._copies:
                return None
            self._copies.discard(job.cwd)
        if job.keep:
            return job.cwd
        try:
            _workspace.remove(job)
        except SetupError as exc:  # not a copy's place: nothing was made there
            logger.warning("the workspace copy %s was not removed: %s", job.cwd, exc)
        except OSError as exc:  # it stays where it is, and the row says so
            logger.warning("the workspace copy %s was not removed: %s", job.cwd, exc)
            return job.cwd
        return None

    async def _turn(self, job: Job, workflow: str | None) -> tuple[int, list[Event] | None]:
        """The turn's number, and its events when this process ran all of it."""
        if job.cwd and (problem := sandbox.workspace_problem(job.cwd)) is not None:
            raise SetupError(problem)  # a row queued past `harness batch`'s checks
        session = await self._open(job)
        seen: list[Event] = []
        session.observe(lambda log, event: seen.append(event))
        try:
            assert session.log is not None and session.agent is not None  # held for the turn
            # Before the turn's task group: its one line, not the group's.
            self.runtime.check_workspace(session.agent.cwd)
            turn = _claim(session.log.next_turn)
            start = session.log.latest("turn/start")
            fresh = start is None or start.turn is None or start.turn < turn
            if job.workspace is not None:  # its own copy, made here, before the turn
                if job.cwd is None or session.agent.cwd != job.cwd:
                    raise SetupError(f"the session's directory is not its copy {job.cwd}")
                await anyio.to_thread.run_sync(partial(_workspace.make, job, fresh=fresh))
                with self._lock:
                    self._copies.add(job.cwd)
                self._record(job, workspace_copy=job.cwd)
            async with anyio.create_task_group() as group:
                if workflow is not None:
                    group.start_soon(_cancel_when_asked, session, workflow)
                group.start_soon(self._when_leaving, session.abandon)
                try:
                    if fresh:
                        await session.run(job.prompt, job.model)
                    elif start is not None and _is_open(session.log, start):
                        await session.go_on(job.model)
                        seen = []  # part of the turn is another process's: read it back
                except TurnAbandoned:
                    pass  # the worker leaves: below
                group.cancel_scope.cancel()
            if self._leaving.is_set():
                raise Left
            return turn, seen or None
        finally:
            await session.aclose()

    async def _open(self, job: Job) -> SessionRuntime:
        runtime = self.runtime
        approval = runtime.approval(self.policy, None)
        tools = runtime.host.tools.without(job.disable)
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                session = runtime.open(
                    job.session, runtime.model, approval=approval, tools=tools, go_on=True
                )
            except SessionLocked:
                if self._leaving.is_set():
                    raise Left from None
                if time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.2)
                continue
            session.default_spec = job.model
            return session

    def _summary(self, job: Job, turn: int, seen: list[Event] | None) -> Summary:
        if seen is None:  # a turn another process began: its events come from the store
            seen = list(self.runtime.store.read(job.session))
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
            plan_used=bool(self.runtime.host.hooks.turn_usage(events).get("plan_used")),
            check=None,
        )

    async def _check(self, job: Job) -> str | None:
        """A batch task's check after its turn: exit 0 passes; "skipped" where none may run."""
        if not job.check:
            return None
        if not self.checks:
            return "skipped"
        try:
            code = await _sandboxed(job.check, job.cwd or os.getcwd(), self._when_leaving)
        except (OSError, sandbox.SandboxCrashed) as exc:
            logger.warning("the check of session %s did not run: %s", job.session, exc)
            return "failed"
        if self._leaving.is_set():  # killed as the worker leaves: the peer runs it again
            raise Left
        if code is None:
            logger.warning(
                "the check of session %s timed out after %gs", job.session, CHECK_TIMEOUT
            )
        return "passed" if code == 0 else "failed"

    async def _when_leaving(self, stop: Callable[[], object]) -> None:
        """Call `stop` once the worker leaves. Polled: the main thread sets the flag, and it
        holds no handle on each turn's event loop to wake it."""
        while not self._leaving.is_set():  # noqa: ASYNC110
            await anyio.sleep(LEAVE_POLL_SECONDS)
        stop()


async def _cancel_when_asked(session: SessionRuntime, workflow: str) -> None:
    """Cancel the turn when its workflow is cancelled (`serve --queue`'s stop button asks
    DBOS, from another machine): the turn ends `cancelled` as Ctrl-C would end it."""
    while True:
        await anyio.sleep(CANCEL_POLL_SECONDS)
        try:
            status = await anyio.to_thread.run_sync(DBOS.get_workflow_status, workflow)
        except Exception:  # DBOS is away this poll (shut down as the worker stops): not asked
            continue
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


async def _sandboxed(
    command: str, cwd: str, until: Callable[[Callable[[], object]], Coroutine[Any, Any, None]]
) -> int | None:
    """`bash -c command`'s exit status, run as the bash tool runs a call (the installed
    sandbox, the tool environment), or None when it ran out of time (then it is killed);
    `until(kill)` kills it sooner (the worker leaving)."""
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
                group.start_soon(until, started.kill)
                code = await started.wait()
                started.kill()  # what it left behind, so the output ends
                group.cancel_scope.cancel()  # `until`, and what is left to drain
            return code
        return None
    finally:
        started.kill()
        await started.aclose()


async def _drain(command: sandbox.Command) -> None:
    """A check is judged by its status; its output is read only so that it never blocks."""
    async for _ in command.output():
        pass
