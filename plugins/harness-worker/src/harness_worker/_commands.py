"""`harness worker`, `harness submit` and `harness batch`: their grammar and their runs.

Each takes `--store URL` (else HARNESS_STORE, else config `store`): the PostgreSQL store
whose database holds the sessions, DBOS's queue and harness-worker's tables.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

# This module loads for every command a plugin adds (`harness todos` too): what only the
# worker needs (socket, signal, threading, os) is imported where it runs.
from harness_core.hosts import Command, CommandContext, CommandError

if TYPE_CHECKING:
    from harness_core.runtime import Runtime

__all__ = ["BATCH", "SUBMIT", "WORKER"]

BEAT_SECONDS: Final = 2.0
# A worker whose heartbeat is this old is taken for dead even if its lock is still held (a
# machine that vanished keeps its connections open until the server's keepalive gives up).
# HARNESS_WORKER_LAPSE sets it, between 5 s and 60 s.
LAPSE_SECONDS: Final = 30.0
LAPSE_RANGE: Final = (5.0, 60.0)
GRACE_SECONDS: Final = 30
STORE_HELP: Final = "postgresql://USER@HOST/DATABASE (else HARNESS_STORE, else config store)"


# -- harness worker ----------------------------------------------------------------------------


def _configure_worker(parser: ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)
    parser.add_argument(
        "--concurrency", type=_positive, default=1, metavar="N", help="turns at once (default 1)"
    )
    parser.add_argument(
        "--approval",
        choices=("auto", "deny"),
        help="calls with effects outside the log: run them (auto, the default) or refuse them",
    )
    parser.add_argument("--sandbox", choices=("workspace", "off"), help="where bash runs")
    parser.add_argument("--id", metavar="ID", help="this worker's identity (default HOST-PID)")
    parser.add_argument(
        "--checks",
        action="store_true",
        help="run batch tasks' checks, in the sandbox (else each is recorded skipped)",
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _worker(args: Namespace, ctx: CommandContext) -> int:
    import os
    import socket

    from harness_core.log import redact_url
    from harness_core.runtime import Runtime

    from . import _engine, _tables, _turn

    runtime = Runtime.of(ctx)
    policy = runtime.approval_policy(args.approval, interactive=False)
    if policy == "ask":
        raise CommandError(
            "a worker cannot ask anyone to approve a call, and approval is ask (from "
            "HARNESS_APPROVAL or config approval): pass --approval auto or --approval deny"
        )
    url = _engine.database_url(runtime.store)
    lapse = _lapse(os.environ.get("HARNESS_WORKER_LAPSE"))
    # A sandbox outlives this worker stopped (SIGSTOP, a frozen machine) by half the lapse
    # after which a peer takes its turns: a recovered turn never runs beside its command.
    mode = runtime.use_sandbox(args.sandbox, lapse=lapse / 2)
    if args.checks and mode == "off":
        # Whoever can write the queue chooses a check: it never runs outside a sandbox.
        raise CommandError(
            "--checks runs each batch check in the sandbox, and the sandbox is off: start "
            "the worker with --sandbox workspace (bubblewrap), or without --checks"
        )
    worker_id = args.id or f"{socket.gethostname()}-{os.getpid()}"
    with _engine.translated(url, "cannot start the worker"):
        store = _tables.store_schema(url)
    # Every connection of the worker names it and its store (`application_name`), so a peer
    # that takes it for dead can end them, and with them the locks they hold: the store's
    # (the turns' writers), harness-worker's own and DBOS's.
    name = _tables.app_name(worker_id, store)
    named = _engine.with_application_name(url, name)
    runtime.store = runtime.open_store(named)
    _engine.store_ready(runtime.store)  # an uninitialised store: its one line, nothing made
    conn = _tables.connect(named)
    with _engine.translated(url, "cannot start the worker"):
        schema = _engine.system_schema(_tables.ensure(conn))
        workers = _tables.Workers(conn, worker_id, store)
        holder = workers.claim()
    if holder is not None:
        raise CommandError(f"worker {worker_id} is already running ({holder})")
    host = _turn.WorkerHost(
        runtime, policy, named, args.concurrency, checks=args.checks, alive=workers.alive
    )
    _turn.serve(host)
    _engine.launch(named, schema, worker_id, args.concurrency, name)
    print(
        f"worker {worker_id}: taking turns from {redact_url(url)} "
        f"({args.concurrency} at once, {_checks(args.checks, policy)}); "
        "SIGTERM or Ctrl-C stops it",
        file=ctx.stdout,
        flush=True,
    )
    lost = _watch(workers, host, lapse, ctx)
    if lost is not None:
        return _lost(workers, host, lost)
    return _stop(host, workers, schema, ctx)


def _checks(asked: bool, policy: str) -> str:
    if not asked:
        return "batch checks skipped: --checks runs them"
    return "batch checks skipped under --approval deny" if policy == "deny" else "batch checks run"


def _lapse(text: str | None) -> float:
    if text is None:
        return LAPSE_SECONDS
    low, high = LAPSE_RANGE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not low <= value <= high:
        raise CommandError(
            f"HARNESS_WORKER_LAPSE is {text!r}: give the seconds after which a silent worker "
            f"is taken for dead, from {low:g} to {high:g}"
        )
    return value


def _watch(workers: Any, host: Any, lapse: float, ctx: CommandContext) -> Exception | None:
    """Beat, hand back the turns of peers that are gone, and end what this worker was handed
    but cannot run, until SIGTERM or Ctrl-C (None) or until the database connection is lost
    (the error)."""
    import signal
    import threading

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(BEAT_SECONDS):
        try:
            workers.beat()
            gone = workers.gone(lapse)
        except Exception as exc:  # psycopg's: the connection was ended, or the server left
            return exc
        _recover(gone, ctx)
        _cancel_stranded(host, workers.id, ctx)
    return None


def _recover(gone: list[str], ctx: CommandContext) -> None:
    from . import _engine

    for worker in gone:
        count = _engine.recover([worker])
        print(
            f"worker {worker} is gone: {count} of its turns go back to the queue",
            file=ctx.stdout,
            flush=True,
        )


def _cancel_stranded(host: Any, worker_id: str, ctx: CommandContext) -> None:
    """A queue row harness did not write (another workflow's name, inputs DBOS cannot read)
    is one line and is cancelled, so it holds no session's turns back."""
    from dbos import DBOS
    from harness_core.sanitize import one_line

    try:
        stranded = host.stranded(worker_id)
    except Exception:  # the database is away this beat: the next one looks again
        return
    for workflow, name in stranded:
        DBOS.cancel_workflow(workflow)
        print(
            f"queued workflow {one_line(workflow, 80)} ({one_line(str(name), 40)}) never "
            "started on this worker: no worker runs it, so it is cancelled",
            file=ctx.stdout,
            flush=True,
        )


def _lost(workers: Any, host: Any, exc: Exception) -> int:
    """This worker lost its database connection: a peer took it for dead (its heartbeat
    lapsed) and ended its connections, or the server went away. Its turns are, or will be,
    a peer's to recover: going on here could only race them, so it leaves at once, with no
    grace: its running turns are abandoned (stopped where they are, their commands killed,
    nothing more written, their workflows left PENDING), DBOS stops taking turns, and the
    process exits 1 once the turns' threads have ended: at once when a peer ended the
    connections; while the server is away, after DBOS's own calls, which wait for it."""
    import sys

    from dbos import DBOS

    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(
        f"harness: error: worker {workers.id} lost its database connection ({reason}); "
        "its turns go to the live workers: start it again to take turns",
        file=sys.stderr,
        flush=True,
    )
    host.stop()  # first: a turn that fails as DBOS goes is handed on, not ended as an error
    host.abandon()
    DBOS.destroy()  # no turn is taken from here on
    host.wait()
    workers.conn.close()
    return 1


def _stop(host: Any, workers: Any, schema: str, ctx: CommandContext) -> int:
    """Take no more turns, give running ones GRACE_SECONDS to end, abandon the rest, and
    leave in order: DBOS shut down, every turn's thread ended, the connection closed.

    A turn still running after the grace is abandoned, not cancelled: a cancelled turn ends
    in the log (`turn/end` cancelled), and the peer that recovers its workflow would find it
    over and run nothing, so the rest of the turn would be lost. Abandoned, it stays open,
    its command killed and its workflow PENDING, and the peer goes on with it as with a dead
    worker's. That is also why this worker's row is marked ended only when DBOS holds no
    pending turn for it: a peer takes the turns of a worker whose row is not ended as soon
    as its lock goes, with its connection, here."""
    from contextlib import suppress

    from dbos import DBOS

    from . import _engine

    print("stopping: no new turns; waiting for running ones", file=ctx.stdout, flush=True)
    host.stop()
    with _beating(workers, host):  # a peer must not take this worker for dead meanwhile
        DBOS.destroy(workflow_completion_timeout_sec=GRACE_SECONDS)
        left = host.abandon()
        host.wait()
    if left:
        print(
            f"stopped with {left} turn(s) still running after {GRACE_SECONDS}s: they go to "
            "the live workers",
            file=ctx.stdout,
            flush=True,
        )
    with suppress(Exception):  # psycopg's: the database is away, so the row stays as it is
        if not _engine.pending(workers.conn, schema, workers.id):
            workers.leave()
    workers.conn.close()
    return 0


@contextmanager
def _beating(workers: Any, host: Any) -> Iterator[None]:
    """Keep beating in a thread while the main thread waits: a worker that stops beating
    is taken for dead once its heartbeat lapses, and a peer would go on with a turn still
    running here. A beat that fails means that has happened: the turns are abandoned."""
    import threading

    done = threading.Event()

    def beat() -> None:
        while not done.wait(BEAT_SECONDS):
            if not workers.alive():
                host.abandon()
                return

    thread = threading.Thread(target=beat, name="harness-worker-beat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


WORKER: Final = Command(
    name="worker",
    help="run queued turns until stopped",
    run=_worker,
    configure=_configure_worker,
    description="Takes turns from the queue in the store's database and runs them, at most "
    "--concurrency at once, until SIGTERM or Ctrl-C. A worker whose process died has its "
    "turns recovered by the live ones; one restarted with the same --id recovers its own. "
    "A batch task's check runs only with --checks (in the sandbox, in the task's directory, "
    "with the tools' environment) and never under --approval deny; else it is recorded "
    "skipped.",
)


# -- harness submit ----------------------------------------------------------------------------


def _configure_submit(parser: ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)
    parser.add_argument("--session", metavar="ID", help="a turn of this session (default: new)")
    parser.add_argument("--model", metavar="SPEC", help="the model the turn plays")
    parser.add_argument("--wait", action="store_true", help="follow the turn until it ends")
    parser.add_argument("prompt", metavar="PROMPT")


def _submit(args: Namespace, ctx: CommandContext) -> int:
    from harness_core.runtime import Runtime, utf8_text

    from . import _engine, _follow, _tables

    runtime = Runtime.of(ctx)
    prompt = utf8_text(args.prompt, "the prompt", "convert it to UTF-8 first")
    if not prompt.strip():
        raise CommandError("the prompt is empty: pass the text of the turn")
    url = _engine.database_url(runtime.store)
    if args.model:
        runtime.model(args.model)  # a spec no plugin provides fails here, not on a worker
    if args.session is not None:
        _existing(runtime, args.session)
    else:
        _engine.store_ready(runtime.store)  # an uninitialised store: its one line, nothing made
    with _engine.translated(url, "cannot queue the turn"), _tables.connect(url) as conn:
        schema = _engine.queue_schema(conn, url)  # reached before the turn's session is made
        session_id = args.session or _new_session(runtime)
        job = {"session": session_id, "prompt": prompt, "model": args.model}
        try:
            workflow = _engine.enqueue(conn, schema, job)
        except BaseException:
            if args.session is None:  # a new session without its turn is nobody's
                runtime.store.delete(session_id)
            raise
        print(session_id, file=ctx.stdout, flush=True)
        if not args.wait:
            return 0
        return _follow.follow(runtime, (conn, schema), session_id, workflow, ctx.stdout)


def _existing(runtime: Runtime, session_id: str) -> None:
    """The session the turn goes to must exist (asking checks the store's schema too)."""
    from harness_core.log import SessionNotFound

    if runtime.store.latest(session_id, ("session/start",)) is None:
        raise SessionNotFound(f"no session {session_id} in {runtime.store.url}")


def _new_session(runtime: Runtime) -> str:
    log = runtime.create()
    log.close()
    return log.session_id


SUBMIT: Final = Command(
    name="submit",
    help="queue one turn for the workers",
    run=_submit,
    configure=_configure_submit,
    description="Queues PROMPT as the next turn of --session (else of a new session) and "
    "prints the session id on the first line. No worker needs to be running: the turn waits "
    "in the queue. --wait follows the turn until it ends and exits as `harness run` would.",
)


# -- harness batch -----------------------------------------------------------------------------


def _configure_batch(parser: ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)
    parser.add_argument("--model", metavar="SPEC", help="the model of tasks that name none")
    parser.add_argument("--wait", action="store_true", help="show progress until every task ends")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="queue every line N times (default 1)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep each sample's workspace copy after its check (status says where)",
    )
    parser.add_argument("--json", action="store_true", help="status as one JSON object")
    parser.add_argument(
        "--html", metavar="FILE", help="status: also write the report to FILE as one HTML page"
    )
    parser.add_argument(
        "target", metavar="FILE.jsonl|status|retry", help="tasks, one JSON per line"
    )
    parser.add_argument("batch", nargs="?", metavar="ID", help="the batch (status, retry)")


def _batch(args: Namespace, ctx: CommandContext) -> int:
    from harness_core.runtime import Runtime

    from . import _batch

    runtime = Runtime.of(ctx)
    if args.target in ("status", "retry"):
        if not args.batch:
            usage = "[--json] [--html FILE]" if args.target == "status" else "[--wait]"
            raise CommandError(f"name the batch: harness batch {args.target} ID {usage}")
        for flag, given in (("--repeat N", args.repeat != 1), ("--keep", args.keep)):
            if given:
                raise CommandError(f"{flag} goes with a file: harness batch FILE.jsonl {flag}")
    if args.target == "status":
        return _batch.status(runtime, args.batch, as_json=args.json, out=ctx.stdout, html=args.html)
    if args.html:
        raise CommandError("--html goes with status: harness batch status ID --html FILE")
    if args.target == "retry":
        if args.json:
            raise CommandError("--json goes with status: harness batch status ID --json")
        return _batch.retry(runtime, args.batch, wait=args.wait, out=ctx.stdout)
    if args.batch:
        raise CommandError(f"unexpected argument {args.batch!r}: harness batch FILE.jsonl")
    return _batch.submit(
        runtime,
        args.target,
        args.model,
        wait=args.wait,
        out=ctx.stdout,
        repeat=args.repeat,
        keep=args.keep,
    )


BATCH: Final = Command(
    name="batch",
    help="queue a file of tasks; compare variants",
    run=_batch,
    configure=_configure_batch,
    description="`harness batch FILE.jsonl` makes one session per line of FILE, each with one "
    'queued turn: {"prompt": ..., "task"?, "model"?, "check"?, "workspace"?, "cwd"?, '
    '"variant"?, "disable"?, "system"?}; --repeat N queues every line N times. A workspace is '
    "copied afresh for every sample, on its worker, and removed after the check unless --keep. "
    "It prints `batch ID` first; --wait shows progress and exits 0 when every turn completed. "
    "`harness batch status ID [--json] [--html FILE]` counts the tasks and compares the "
    "variants (pass rates with Wilson intervals, pass@k, pass^k, and for each pair a paired "
    "bootstrap interval, McNemar's p and a verdict); --html also writes that report to FILE as "
    "a self-contained HTML page. `harness batch retry ID [--wait]` queues again, as new "
    "sessions, the samples whose turn did not complete (never a failed check).",
)
