"""`harness batch FILE.jsonl [--wait]` and `harness batch status ID [--json]`.

Every line of FILE is checked before anything is queued: a bad line is one error naming it,
and no session is made. Each task then becomes a session with one queued turn and a row in
`harness_tasks` (made before its turn is queued, so a fast worker always finds it).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from harness_core.hosts import CommandError

from . import _engine, _tables

if TYPE_CHECKING:
    from harness_core.runtime import Runtime

__all__ = ["status", "submit"]

_KEYS: Final = {"prompt", "model", "check", "cwd", "variant", "disable"}
FAILED: Final = ("error", "max_steps", "cancelled")
JUDGED: Final = ("passed", "failed")
DEFAULT_VARIANT: Final = "default"
POLL_SECONDS: Final = 0.5


def submit(runtime: Runtime, path: str, model: str | None, *, wait: bool, out: TextIO) -> int:
    tasks = _read(Path(path))
    url = _engine.database_url(runtime.store)
    for spec in {task.get("model") or model for task in tasks} - {None}:
        runtime.model(spec)  # a spec no plugin provides fails here, before anything is queued
    with _engine.translated(url, "cannot queue the batch"), _tables.connect(url) as conn:
        schema = _engine.queue_schema(conn, url)
        batch = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        jobs = [_job(runtime, batch, index, task, model) for index, task in enumerate(tasks)]
        rows = [
            (
                job["position"],
                job["session"],
                _workflow_id(job),
                job["variant"],
                bool(job["check"]),
            )
            for job in jobs
        ]
        _tables.insert_tasks(conn, batch, rows)
        for job in jobs:
            _engine.enqueue(conn, schema, job, workflow_id=_workflow_id(job))
        print(f"batch {batch}", file=out, flush=True)
        if not wait:
            return 0
        return _progress(conn, batch, out)


def _workflow_id(job: dict[str, Any]) -> str:
    return f"{job['session']}/{job['batch']}-{job['position']}"


def _read(path: Path) -> list[dict[str, Any]]:
    """The tasks of FILE, each checked; the first bad line is a CommandError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read the tasks in {path}: {exc}") from None
    tasks = []
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            tasks.append(_task(line, f"{path} line {number}"))
    if not tasks:
        raise CommandError(f"{path} holds no tasks: one JSON object per line, with a prompt")
    return tasks


def _task(line: str, where: str) -> dict[str, Any]:
    try:
        task = json.loads(line)
    except ValueError as exc:
        raise CommandError(f"{where}: not JSON ({exc})") from None
    if not isinstance(task, dict):
        raise CommandError(f"{where}: a task is a JSON object")
    unknown = sorted(set(task) - _KEYS)
    if unknown:
        raise CommandError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})"
        )
    if not isinstance(task.get("prompt"), str) or not task["prompt"].strip():
        raise CommandError(f'{where}: a task needs a non-empty "prompt"')
    for key in ("model", "check", "cwd", "variant"):
        if key in task and not isinstance(task[key], str):
            raise CommandError(f'{where}: "{key}" must be a string')
    disable = task.get("disable", [])
    if not isinstance(disable, list) or not all(isinstance(d, str) for d in disable):
        raise CommandError(f'{where}: "disable" must be a list of plugin names')
    if "cwd" in task:
        cwd = Path(task["cwd"]).expanduser().resolve()
        if not cwd.is_dir():
            raise CommandError(f"{where}: cwd {task['cwd']!r} is not a directory")
        task["cwd"] = str(cwd)
    return task


def _job(
    runtime: Runtime, batch: str, index: int, task: dict[str, Any], model: str | None
) -> dict[str, Any]:
    # No cwd: the session names none, and its turn runs where the worker runs.
    log = runtime.store.create(system_prompt=runtime.system_prompt(), cwd=task.get("cwd"))
    log.close()
    return {
        "session": log.session_id,
        "prompt": task["prompt"],
        "model": task.get("model") or model,
        "disable": task.get("disable", []),
        "check": task.get("check"),
        "cwd": task.get("cwd"),
        "variant": task.get("variant"),
        "batch": batch,
        "position": index,
    }


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
    return 0


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
    return {"batch": batch, "counts": _counts(tasks), "tasks": rows, "variants": _variants(tasks)}


def _variants(tasks: list[_tables.Task]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[_tables.Task]] = {}
    for task in tasks:
        groups.setdefault(task.variant or DEFAULT_VARIANT, []).append(task)
    return {name: _variant(group) for name, group in groups.items()}


def _variant(tasks: list[_tables.Task]) -> dict[str, Any]:
    ended = [t for t in tasks if t.steps is not None and t.state not in ("queued", "running")]
    checked = [t for t in tasks if t.check in JUDGED]  # a skipped check judged nothing

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    return {
        "tasks": len(tasks),
        "ended": len(ended),
        "checked": len(checked),
        "passed": sum(t.check == "passed" for t in tasks),
        "pass_rate": mean([t.check == "passed" for t in checked]),
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
    names = list(variants)
    width = max(len(label) for label, _ in VARIANT_ROWS)
    columns = [max(len(name), 10) for name in names]
    print(
        f"{'':{width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, columns, strict=True)),
        file=out,
    )
    for label, cell in VARIANT_ROWS:
        cells = "  ".join(f"{cell(variants[n]):>{w}}" for n, w in zip(names, columns, strict=True))
        print(f"{label:{width}}  {cells}", file=out)
    skipped = sum(task["check"] == "skipped" for task in report["tasks"])
    if skipped:
        print(
            f"{skipped} checks skipped: their workers run no checks (start them with "
            "--checks, and not under --approval deny)",
            file=out,
        )


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


# A variant's figures as `status` shows them, one row each, in the text and the HTML report.
VARIANT_ROWS: Final[list[tuple[str, Callable[[dict[str, Any]], str]]]] = [
    ("tasks", lambda v: str(v["tasks"])),
    ("passed", lambda v: f"{v['passed']}/{v['checked']}" if v["checked"] else "-"),
    ("pass rate", lambda v: percent(v["pass_rate"])),
    ("mean steps", lambda v: number(v["mean_steps"])),
    ("mean input tokens", lambda v: number(v["mean_tokens"]["input"])),
    ("mean output tokens", lambda v: number(v["mean_tokens"]["output"])),
    ("mean cached tokens", lambda v: number(v["mean_tokens"]["cached"])),
    ("mean seconds", lambda v: number(v["mean_seconds"])),
    ("plan used", lambda v: percent(v["plan_used"])),
]
