"""`harness batch FILE.jsonl [--repeat N] [--keep] [--wait]`, `harness batch status ID
[--json] [--html FILE]` and `harness batch retry ID [--wait]`.

Every line of FILE is checked (`TaskLine`, a pydantic model) before anything is written: a
bad line is one error naming it, and nothing is made. Each line is then queued N times, each
sample a session with one queued turn and a row in `harness_tasks` (its task's id and its
repeat index, which pair it with the samples of other variants: see `_stats`); the rows and
the turns are written in one transaction (the rows first, so a fast worker always finds its
row), and should it fail the sessions are deleted again: no task is left waiting for a turn
that was never queued. A line's `system` is appended to the session's system prompt as its
session is made (`session/start` records it); a line's `workspace` gives each sample a copy
of its own, named here and made by the worker (`_workspace`).

`retry` gives each sample whose turn did not complete (an error, a cancellation, a workflow
that ended without its worker writing the row) a new session with the old one's system
prompt, directory (or a new copy) and job, on the same row: the old session stays in the
store, the row shows the new one. A failed check or a turn that used up its steps is a
result, and is never retried.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TextIO

from harness_core.hosts import CommandError
from harness_core.sanitize import one_line
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from . import _engine, _stats, _tables, _workspace

if TYPE_CHECKING:
    from harness_core.runtime import Runtime

__all__ = ["TaskLine", "retry", "status", "submit"]

FAILED: Final = ("error", "max_steps", "cancelled")
# A turn that ended so did not complete and may run again; max_steps is the model's result.
RETRIED: Final = ("error", "cancelled")
# DBOS's states of a workflow that a worker has yet to run or end.
LIVE: Final = ("ENQUEUED", "PENDING", "DELAYED")
JUDGED: Final = ("passed", "failed")
DEFAULT_VARIANT: Final = "default"
POLL_SECONDS: Final = 0.5


def submit(
    runtime: Runtime,
    path: str,
    model: str | None,
    *,
    wait: bool,
    out: TextIO,
    repeat: int = 1,
    keep: bool = False,
) -> int:
    if repeat < 1:
        raise CommandError(f"--repeat takes a count of 1 or more, not {repeat}")
    tasks, commits = _read(Path(path))
    samples = [(task, index) for task in tasks for index in range(repeat)]
    url = _engine.database_url(runtime.store)
    for spec in {task.model or model for task in tasks} - {None}:
        runtime.model(spec)  # a spec no plugin provides fails here, before anything is queued
    _engine.store_ready(runtime.store)  # an uninitialised store: its one line, nothing made
    with _engine.translated(url, "cannot queue the batch"), _tables.connect(url) as conn:
        schema = _engine.queue_schema(conn, url)
        batch = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        jobs: list[dict[str, Any]] = []
        try:
            for position, (task, _) in enumerate(samples):  # a refused session stops it all
                commit = commits.get(task.workspace) if task.workspace else None
                jobs.append(_job(runtime, batch, position, task, model, commit=commit, keep=keep))
            rows = [
                _row(job, task, index) for job, (task, index) in zip(jobs, samples, strict=True)
            ]
            with conn.transaction():  # every task queued, or none
                _tables.insert_tasks(conn, batch, rows)
                for job in jobs:
                    _engine.enqueue(conn, schema, job, workflow_id=_workflow_id(job))
        except BaseException:
            for job in jobs:  # the sessions made for it go too: no task waits forever
                runtime.store.delete(job["session"])
            raise
        print(f"batch {batch}", file=out, flush=True)
        if not wait:
            return 0
        return _progress(conn, batch, out)


def _workflow_id(job: dict[str, Any]) -> str:
    return f"{job['session']}/{job['batch']}-{job['position']}"


def _row(
    job: dict[str, Any], task: TaskLine, repeat: int
) -> tuple[int, str, str, str, int, str | None, bool, dict[str, Any]]:
    key = task.prompt if task.task is None else task.task
    return (
        job["position"],
        job["session"],
        _workflow_id(job),
        key,
        repeat,
        job["variant"],
        bool(job["check"]),
        job,
    )


def _stored(text: str) -> str:
    if "\0" in text:  # PostgreSQL's text and jsonb cannot hold it
        raise PydanticCustomError("nul", "holds a NUL character, which cannot be stored")
    return text


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank", "must not be empty")
    return text


def _directory(value: str | None) -> str | None:
    if value is None:
        return None
    try:  # `~nobody` has no home, a name can be too long: each is "not a directory" too
        cwd = Path(value).expanduser().resolve()
        found = cwd.is_dir()
    except (OSError, RuntimeError):
        found = False
    if not found:
        raise PydanticCustomError("cwd", "{cwd} is not a directory", {"cwd": repr(value)})
    from harness_core.tools.sandbox import workspace_problem

    if (problem := workspace_problem(str(cwd))) is not None:
        raise PydanticCustomError("workspace", "{problem}", {"problem": problem})
    return str(cwd)


Text = Annotated[str, AfterValidator(_stored)]


class TaskLine(BaseModel):
    """One line of a batch file: a task, its turn run once per repeat on a worker."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    prompt: Annotated[Text, AfterValidator(_not_blank)] = Field(description="the turn's prompt")
    task: Annotated[Text, AfterValidator(_not_blank)] | None = Field(
        None, description="an id pairing lines across variants (default: the prompt)"
    )
    model: Text | None = Field(None, description="a model spec")
    check: Text | None = Field(None, description="a shell command")
    workspace: Annotated[Text | None, AfterValidator(_directory)] = Field(
        None, description="a directory, copied afresh for every sample"
    )
    cwd: Annotated[Text | None, AfterValidator(_directory)] = Field(None, description="a directory")
    variant: Text | None = Field(None, description="a variant's name")
    disable: list[Text] = Field(default_factory=list, description="a list of plugin names")
    system: Annotated[Text, AfterValidator(_not_blank)] | None = Field(
        None, description="text appended to the system prompt"
    )

    @model_validator(mode="after")
    def _one_directory(self) -> TaskLine:
        if self.workspace is not None and self.cwd is not None:
            raise PydanticCustomError(
                "both",
                '"workspace" and "cwd" do not go together: a workspace is copied for every '
                "sample, a cwd is used in place; give one",
            )
        return self


def _read(path: Path) -> tuple[list[TaskLine], dict[str, str | None]]:
    """The tasks of FILE, every line checked (the first bad one is a CommandError naming
    it), and the commit each git workspace's HEAD names now, which all its samples copy."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read the tasks in {path}: {exc}") from None
    tasks: list[TaskLine] = []
    commits: dict[str, str | None] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            where = f"{path} line {number}"
            tasks.append(task := _task(line, where))
            if task.workspace is not None and task.workspace not in commits:
                commits[task.workspace] = _template(task.workspace, where)
    if not tasks:
        raise CommandError(f"{path} holds no tasks: one JSON object per line, with a prompt")
    return tasks, commits


def _template(workspace: str, where: str) -> str | None:
    """A workspace's commit (None: a plain directory), once it is sure to be copyable."""
    copies = _workspace.root()
    if copies.is_relative_to(workspace):  # its copies would land inside what is copied
        raise CommandError(
            f'{where}: "workspace": {workspace} holds {copies}, where its copies are made: '
            "queue the batch with TMPDIR outside it"
        )
    try:
        return _workspace.commit_of(workspace)
    except ValueError as exc:
        raise CommandError(f'{where}: "workspace": {exc}') from None


def _task(line: str, where: str) -> TaskLine:
    try:
        return TaskLine.model_validate_json(line)
    except ValidationError as exc:
        raise CommandError(f"{where}: {_problem(exc.errors()[0])}") from None


def _problem(error: ErrorDetails) -> str:
    """One pydantic error as a line: which key, what is wrong, and what it should be."""
    loc, kind = error["loc"], error["type"]
    key = str(loc[0]) if loc else ""
    if kind == "extra_forbidden":
        return f"unknown key {key!r} (known: {', '.join(TaskLine.model_fields)})"
    if kind == "json_invalid":
        return f"not JSON ({error['msg'].removeprefix('Invalid JSON: ')})"
    if kind == "workspace":
        return str(error.get("ctx", {}).get("problem"))
    if kind == "model_type":
        return "a task is a JSON object"
    if kind == "missing":
        return f'a task needs a "{key}"'
    field = TaskLine.model_fields.get(key)
    wanted = f" ({field.description})" if field is not None and field.description else ""
    if not loc:  # a rule of the whole line: its message says which keys
        return str(error["msg"])
    item = "".join(f"[{part}]" for part in loc[1:])
    return f'"{key}"{item}: {error["msg"]}{wanted}'


def _job(
    runtime: Runtime,
    batch: str,
    index: int,
    task: TaskLine,
    model: str | None,
    *,
    commit: str | None,
    keep: bool,
) -> dict[str, Any]:
    # No cwd and no workspace: the session names none, and its turn runs where the worker
    # runs. A workspace: the session's directory is the sample's copy, made by its worker.
    cwd = task.cwd if task.workspace is None else _workspace.copy_path(batch, index)
    log = runtime.store.create(system_prompt=_system_prompt(runtime, task.system), cwd=cwd)
    log.close()
    job: dict[str, Any] = {
        "session": log.session_id,
        "prompt": task.prompt,
        "model": task.model or model,
        "disable": list(task.disable),
        "check": task.check,
        "cwd": cwd,
        "variant": task.variant,
        "batch": batch,
        "position": index,
    }
    if task.workspace is not None:
        job.update(workspace=task.workspace, commit=commit, keep=keep)
    return job


def _system_prompt(runtime: Runtime, system: str | None) -> str | None:
    """The configured system prompt, with the line's `system` after it."""
    base = runtime.system_prompt()
    if system is None:
        return base
    return f"{base}\n\n{system}" if base else system


# -- progress --------------------------------------------------------------------------------


def _progress(conn: Any, batch: str, out: TextIO) -> int:
    """Until every task ended: a bar on a terminal, a line per change elsewhere."""
    terminal = out.isatty()
    started, shown = time.monotonic(), ""
    while True:
        counts = _counts(_tables.tasks(conn, batch))
        line = _line(counts, time.monotonic() - started, terminal)
        if line != shown:
            print(
                ("\r\x1b[2K" + line) if terminal else line,
                end="" if terminal else "\n",
                file=out,
                flush=True,
            )
            shown = line
        if counts["queued"] + counts["running"] == 0:
            break
        time.sleep(POLL_SECONDS)
    if terminal:
        print(file=out)
    failed = counts["failed"]
    print(
        f"batch {batch}: {counts['done']} done, {failed} failed, "
        f"{counts['passed']} passed their check",
        file=out,
    )
    return 0 if failed == 0 else 1


def _line(counts: dict[str, int], elapsed: float, bar: bool) -> str:
    total = sum(counts[k] for k in ("queued", "running", "done", "failed"))
    ended = counts["done"] + counts["failed"]
    text = (
        f"queued {counts['queued']} · running {counts['running']} · done {counts['done']} · "
        f"failed {counts['failed']}"
    )
    if not bar:
        return f"{ended}/{total} {text}"
    width = 24
    filled = width * ended // total if total else width
    eta = ""
    if 0 < ended < total:
        eta = f" · ETA {_clock(elapsed / ended * (total - ended))}"
    return f"[{'#' * filled}{'.' * (width - filled)}] {ended}/{total} {text}{eta}"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes}:{secs:02d}"


# -- status ----------------------------------------------------------------------------------


def status(
    runtime: Runtime, batch: str, *, as_json: bool, out: TextIO, html: str | None = None
) -> int:
    url = _engine.database_url(runtime.store)
    with _engine.translated(url, "cannot read the batch"), _tables.connect(url) as conn:
        # A read makes nothing: where the tables were never made there is no batch. Tables
        # made before repeats gain their columns here, so their batches read as before.
        tasks = []
        if _tables.made(conn):
            _tables.ensure(conn)
            tasks = _tables.tasks(conn, batch)
    if not tasks:
        raise CommandError(f"no batch {batch} in {runtime.store.url}")
    report = _report(batch, tasks)
    if html is not None:
        from . import _html

        _html.write(report, Path(html))
    if as_json:
        json.dump(report, out)
        print(file=out)
    else:
        _text(report, out)
        _kept(tasks, out)
    return 0


def _kept(tasks: list[_tables.Task], out: TextIO) -> None:
    """Where each ended sample's workspace copy still is (a batch queued with --keep)."""
    kept = [t for t in tasks if t.workspace_copy and t.state not in ("queued", "running")]
    if not kept:
        return
    print(f"{len(kept)} workspace copies kept, each where its session ran:", file=out)
    for task in kept:
        print(f"  {task.session}  {one_line(task.workspace_copy or '', 400)}", file=out)


# -- retry -----------------------------------------------------------------------------------


def retry(runtime: Runtime, batch: str, *, wait: bool, out: TextIO) -> int:
    """Queue again, each as a new session on its row, the samples whose turn did not
    complete; how many is the first line."""
    url = _engine.database_url(runtime.store)
    made: list[str] = []
    with _engine.translated(url, "cannot queue the batch again"), _tables.connect(url) as conn:
        if not _tables.made(conn):
            raise CommandError(f"no batch {batch} in {runtime.store.url}")
        schema = _engine.queue_schema(conn, url)
        try:
            with conn.transaction():  # every sample queued again, or none
                rows = _tables.tasks(conn, batch, lock=True)
                if not rows:
                    raise CommandError(f"no batch {batch} in {runtime.store.url}")
                again = [row for row in rows if _unfinished(conn, schema, row)]
                old = [row for row in again if row.job is None]
                for row in again:
                    if row.job is not None:
                        job = _again(runtime, row, row.job)
                        made.append(job["session"])
                        _tables.replace_sample(conn, batch, row.position, _workflow_id(job), job)
                        _engine.enqueue(conn, schema, job, workflow_id=_workflow_id(job))
        except BaseException:
            for session in made:  # no session is left without its turn
                runtime.store.delete(session)
            raise
        _retried(batch, [r for r in again if r.job is not None], made, len(old), out)
        return _progress(conn, batch, out) if wait else 0


def _unfinished(conn: Any, schema: str, row: _tables.Task) -> bool:
    """Whether the sample's turn did not complete and no worker will run it any more."""
    if row.state in RETRIED:
        return True
    if row.state not in ("queued", "running"):
        return False  # completed, or a result such as max_steps
    if row.workflow is None:
        return False
    state, _, _ = _engine.outcome(conn, schema, row.workflow)
    return state not in LIVE  # its workflow ended, or is gone, without its row's end


def _again(runtime: Runtime, row: _tables.Task, queued: dict[str, Any]) -> dict[str, Any]:
    """A new session for the sample: its old one's system prompt, its directory (or a new
    copy of its workspace), and its job."""
    from harness_core.log import SessionNotFound

    try:
        start = runtime.store.latest(row.session, ("session/start",))
    except SessionNotFound:
        start = None
    if start is None:
        raise CommandError(
            f"the session {row.session} of task {one_line(row.task or '?', 80)} is gone: its "
            "system prompt cannot be given again, so the batch is not queued again"
        )
    job = dict(queued)
    if job.get("workspace"):
        job["cwd"] = _workspace.copy_path(str(job["batch"]), int(job["position"]))
    log = runtime.store.create(system_prompt=start.data.get("system_prompt"), cwd=job.get("cwd"))
    log.close()
    job["session"] = log.session_id
    return job


def _retried(batch: str, again: list[_tables.Task], made: list[str], old: int, out: TextIO) -> None:
    if not again:
        print(
            f"batch {batch}: queued 0 samples again: every turn completed, or is queued or running",
            file=out,
            flush=True,
        )
    else:
        print(
            f"batch {batch}: queued {len(again)} samples again, each a new session in place "
            "of one whose turn did not complete",
            file=out,
            flush=True,
        )
    for row, session in zip(again, made, strict=True):
        variant = one_line(row.variant or DEFAULT_VARIANT, 40)
        task = one_line(row.task or "?", 80)
        print(
            f"  {task} · {variant} · repeat {row.repeat}: {row.session} ({row.state}) -> {session}",
            file=out,
        )
    if old:
        print(
            f"{old} samples did not complete but were queued before retries existed: queue "
            "their lines again with harness batch",
            file=out,
        )


def _counts(tasks: list[_tables.Task]) -> dict[str, int]:
    counts = dict.fromkeys(("queued", "running", "done", "failed", "passed"), 0)
    for task in tasks:
        counts[_bucket(task.state)] += 1
        counts["passed"] += task.check == "passed"
    return counts


def _bucket(state: str) -> str:
    if state in ("queued", "running"):
        return state
    return "failed" if state in FAILED else "done"


def _report(batch: str, tasks: list[_tables.Task]) -> dict[str, Any]:
    rows = [
        {
            "session": task.session,
            "task": task.task,
            "repeat": task.repeat,
            "variant": task.variant,
            "status": task.state,
            "check": task.check,
            "steps": task.steps,
            "tokens": None
            if task.tokens is None
            else dict(zip(("input", "output", "cached"), task.tokens, strict=True)),
            "seconds": task.seconds,
            "plan_used": task.plan_used,
        }
        for task in tasks
    ]
    samples = {name: _samples(group) for name, group in _groups(tasks).items()}
    names = list(samples)
    return {
        "batch": batch,
        "counts": _counts(tasks),
        "tasks": rows,
        "variants": _variants(tasks),
        "comparisons": [
            _stats.compare(a, b, samples[a], samples[b])
            for i, a in enumerate(names)
            for b in names[i + 1 :]
        ],
    }


def _groups(tasks: list[_tables.Task]) -> dict[str, list[_tables.Task]]:
    groups: dict[str, list[_tables.Task]] = {}
    for task in tasks:
        groups.setdefault(task.variant or DEFAULT_VARIANT, []).append(task)
    return groups


def _samples(tasks: list[_tables.Task]) -> list[_stats.Sample]:
    """The checked samples of a variant; a row from before tasks had ids pairs with none."""
    return [
        _stats.Sample(
            task=t.task if t.task is not None else f"\0{t.position}",
            repeat=t.repeat,
            passed=t.check == "passed",
            tokens=sum((t.tokens or (0, 0, 0))[:2]),
        )
        for t in tasks
        if t.check in JUDGED
    ]


def _variants(tasks: list[_tables.Task]) -> dict[str, dict[str, Any]]:
    return {name: _variant(group) for name, group in _groups(tasks).items()}


def _variant(tasks: list[_tables.Task]) -> dict[str, Any]:
    ended = [t for t in tasks if t.steps is not None and t.state not in ("queued", "running")]
    checked = [t for t in tasks if t.check in JUDGED]  # a skipped check judged nothing

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    passed = sum(t.check == "passed" for t in checked)
    pass_at_k, pass_hat_k = _stats.pass_at_k(_samples(tasks))
    return {
        "tasks": len(tasks),
        "ended": len(ended),
        "checked": len(checked),
        "passed": passed,
        "pass_rate": mean([t.check == "passed" for t in checked]),
        "pass_rate_ci": _stats.wilson(passed, len(checked)),
        "pass_at_k": pass_at_k,
        "pass_hat_k": pass_hat_k,
        "mean_steps": mean([t.steps or 0 for t in ended]),
        "mean_tokens": {
            kind: mean([(t.tokens or (0, 0, 0))[i] for t in ended])
            for i, kind in enumerate(("input", "output", "cached"))
        },
        "mean_seconds": mean([t.seconds or 0.0 for t in ended]),
        "plan_used": mean([bool(t.plan_used) for t in ended]),
    }


def _text(report: dict[str, Any], out: TextIO) -> None:
    counts = report["counts"]
    print(
        f"batch {report['batch']}: queued {counts['queued']} · running {counts['running']} · "
        f"done {counts['done']} · failed {counts['failed']} · passed {counts['passed']}",
        file=out,
    )
    variants = report["variants"]
    # A variant's name is the batch file's: its terminal escapes are never printed raw.
    names = list(variants)
    shown = [one_line(name, 40) for name in names]
    width = max(len(label) for label, _ in VARIANT_ROWS)
    columns = [max(len(name), 12) for name in shown]
    print(
        f"{'':{width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(shown, columns, strict=True)),
        file=out,
    )
    for label, cell in VARIANT_ROWS:
        cells = "  ".join(f"{cell(variants[n]):>{w}}" for n, w in zip(names, columns, strict=True))
        print(f"{label:{width}}  {cells}", file=out)
    for comparison in report["comparisons"]:
        print(file=out)
        _comparison(comparison, out)
    skipped = sum(task["check"] == "skipped" for task in report["tasks"])
    if skipped:
        print(
            f"{skipped} checks skipped: their workers run no checks (start them with "
            "--checks, and not under --approval deny)",
            file=out,
        )


def _comparison(comparison: dict[str, Any], out: TextIO) -> None:
    """The verdict first, then what it rests on."""
    a, b = one_line(comparison["a"], 40), one_line(comparison["b"], 40)
    print(f"{a} vs {b}: {one_line(comparison['verdict'], 400)}", file=out)
    print(
        f"  pairs {comparison['pairs']} · {a} only {comparison['a_only']} · "
        f"{b} only {comparison['b_only']} · p = {comparison['p_value']:.3g}",
        file=out,
    )
    if comparison["tokens_diff"] is not None:
        print(
            f"  tokens {b} - {a}: {comparison['tokens_diff']:+.1f}"
            f"{interval(comparison['tokens_diff_ci'], 1)} per sample",
            file=out,
        )


def interval(ci: list[float] | None, scale: float = 100) -> str:
    return "" if ci is None else f" [{ci[0] * scale:.1f}, {ci[1] * scale:.1f}]"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


# A variant's figures as `status` shows them, one row each, in the text and the HTML report.
VARIANT_ROWS: Final[list[tuple[str, Callable[[dict[str, Any]], str]]]] = [
    ("tasks", lambda v: str(v["tasks"])),
    ("passed", lambda v: f"{v['passed']}/{v['checked']}" if v["checked"] else "-"),
    ("pass rate", lambda v: percent(v["pass_rate"])),
    ("95% interval", lambda v: interval(v["pass_rate_ci"]).strip() or "-"),
    ("pass@k", lambda v: percent(v["pass_at_k"])),
    ("pass^k", lambda v: percent(v["pass_hat_k"])),
    ("mean steps", lambda v: number(v["mean_steps"])),
    ("mean input tokens", lambda v: number(v["mean_tokens"]["input"])),
    ("mean output tokens", lambda v: number(v["mean_tokens"]["output"])),
    ("mean cached tokens", lambda v: number(v["mean_tokens"]["cached"])),
    ("mean seconds", lambda v: number(v["mean_seconds"])),
    ("plan used", lambda v: percent(v["plan_used"])),
]
