"""Fuzzing harness-worker's two inputs from outside: batch files and rows of the queue.

A batch file is a user's; a queue row is anyone's who can call DBOS's `enqueue_workflow` in
the store's database. Batch files are built from a valid task by damaging one line among
good ones (a key of the wrong type, a NUL, a lone surrogate, bytes that are not UTF-8, an
unknown key, deep nesting, garbage), then `harness batch` runs on them in this process
against a real PostgreSQL store. Queue rows are arbitrary JSON values and damaged jobs, first
checked as a worker checks them (`_job.parse`), then enqueued through DBOS's SQL function for
a real worker process. The properties, for every case:

- `harness batch` exits 0, or non-zero with exactly one `harness: error:` line, never a
  traceback, within `HANG_SECONDS`; a rejected file creates nothing (no session, no task row,
  no table), an accepted one creates one session and one row per line;
- a row is a `Job` or one line saying why not, never an exception;
- on the worker every row ends (a result, an error or cancelled), the worker prints no
  traceback and keeps taking turns.

CI runs a bounded number of cases (`HARNESS_FUZZ_WORKER_EXAMPLES`, default below), well
under a minute together.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Final

import psycopg
import pytest
from harness_store_postgres.testing import server_url
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_support import write_script
from test_fuzz import HANG_SECONDS, assert_well_behaved, harness
from test_worker_cli import Worker, enqueue_raw, schema_of, tables_in, url, workers

pytestmark = pytest.mark.slow  # real processes for seconds each: run first

__all__ = ["url", "workers"]  # the fixtures, shared with the worker's own tests

EXAMPLES: Final = int(os.environ.get("HARNESS_FUZZ_WORKER_EXAMPLES", "30"))
ROW_BATCHES: Final = max(1, EXAMPLES // 30)  # each waits out the stranded-row bound
SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# -- values ------------------------------------------------------------------------------------

SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(["", " ", "\x00", "a\x00b", "\x1b[2J", "\u202e", "🙂", "x" * 5000]),
)
JSON: Final = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
KEYS: Final = ("prompt", "model", "check", "workspace", "cwd", "variant", "disable", "system")


@st.composite
def task_lines(draw: st.DrawFn) -> str:
    """One line of a batch file: often a task with one key damaged, else anything at all."""
    kind = draw(st.sampled_from(["key", "json", "raw", "nested"]))
    if kind == "key":
        task: dict[str, Any] = {"prompt": "fine", "variant": "v"}
        task[draw(st.sampled_from([*KEYS, "turns", "\x00"]))] = draw(JSON)
        return json.dumps(task)
    if kind == "json":
        return json.dumps(draw(JSON))
    if kind == "nested":
        return "[" * draw(st.integers(1, 100_000))
    text = draw(st.text(max_size=60))
    return text.replace("\n", " ")


@st.composite
def batch_files(draw: st.DrawFn) -> bytes:
    """Good lines around one drawn line, sometimes with a lone surrogate or broken UTF-8."""
    good = [json.dumps({"prompt": f"good {n}"}) for n in range(draw(st.integers(0, 3)))]
    where = draw(st.integers(0, len(good)))
    lines = [*good[:where], draw(task_lines()), *good[where:]]
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none", "surrogate", "bytes"]))
    if damage == "surrogate":
        data += b'\n{"prompt": "\\ud800"}'
    elif damage == "bytes":
        data += b'\n{"prompt": "\xff\xfe"}'
    return data


# -- batch files -------------------------------------------------------------------------------


def counts(url: str) -> tuple[int, int, list[str]]:
    """Sessions, task rows and tables in the store's schema (and DBOS's)."""
    schema = schema_of(url)
    with psycopg.connect(server_url()) as conn:
        sessions = conn.execute(f'SELECT count(*) FROM "{schema}".harness_sessions').fetchone()
        made = conn.execute(f"SELECT to_regclass('\"{schema}\".harness_tasks')").fetchone()
        tasks = (
            conn.execute(f'SELECT count(*) FROM "{schema}".harness_tasks').fetchone()
            if made and made[0]
            else (0,)
        )
    return int(sessions[0] if sessions else 0), int(tasks[0] if tasks else 0), tables_in(url)


def test_fuzzed_batch_files_are_one_line_or_queued_whole(url: str, tmp_path: Path) -> None:
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    home = tmp_path / "home"
    home.mkdir()

    @SETTINGS
    @given(data=batch_files())
    def case(data: bytes) -> None:
        tasks = tmp_path / "tasks.jsonl"
        tasks.write_bytes(data)
        before = counts(url)
        outcome = harness(home, "batch", str(tasks), "--store", url, "--model", model)
        assert_well_behaved(outcome)
        after = counts(url)
        if outcome.status != 0:
            assert after == before, outcome.stderr  # a rejected file made nothing
            return
        lines = sum(1 for line in data.decode().split("\n") if line.strip())
        assert after[0] - before[0] == lines and after[1] - before[1] == lines

    case()


# -- queue rows --------------------------------------------------------------------------------


@st.composite
def rows(draw: st.DrawFn) -> Any:
    """A queue row's one argument: a job with one key damaged or missing, or anything."""
    if draw(st.booleans()):
        return draw(JSON)
    job: dict[str, Any] = {"session": "s", "prompt": "p", "model": None}
    keys = ("disable", "batch", "position", "check", "cwd", "workspace", "commit", "keep", "x")
    key = draw(st.sampled_from([*job, *keys]))
    if draw(st.booleans()):
        job.pop(key, None)
    else:
        job[key] = draw(JSON)
    return job


@SETTINGS
@given(row=rows())
def test_a_fuzzed_row_is_a_job_or_one_line(row: Any) -> None:
    from harness_worker._job import Job, parse

    parsed = parse((row,), {})
    assert isinstance(parsed, Job) or (isinstance(parsed, str) and "\n" not in parsed)


def test_every_job_harness_queues_is_a_job() -> None:
    """What submit, serve --queue and batch write (as JSON, as the queue carries it)."""
    from harness_worker._job import Job, parse

    batch = {"session": "s", "prompt": "p", "model": None, "disable": ["todo"], "check": "true"}
    batch |= {"cwd": "/w", "variant": "v", "batch": "b", "position": 3}
    copy = {**batch, "workspace": "/t", "commit": "0" * 40, "keep": True}
    for job in ({"session": "s", "prompt": "p", "model": "scripted:x"}, batch, copy):
        assert parse((json.loads(json.dumps(job)),), {}) == Job.model_validate(job)


@pytest.fixture
def worker(url: str, workers: list[Worker], tmp_path: Path) -> Worker:
    started = Worker(url, "fuzzed", tmp_path)
    workers.append(started)  # stopped by `workers`
    return started


def ended(url: str, ids: list[str]) -> dict[str, str]:
    schema = f"dbos_{schema_of(url)}"
    with psycopg.connect(server_url()) as conn:
        found = conn.execute(
            f'SELECT workflow_uuid, status FROM "{schema}".workflow_status '
            "WHERE workflow_uuid = ANY(%s)",
            (ids,),
        ).fetchall()
    return {str(row[0]): str(row[1]) for row in found}


def test_fuzzed_queue_rows_end_on_a_real_worker(url: str, worker: Worker, tmp_path: Path) -> None:
    """Each row ends within the stranded-row bound and the worker stays quiet and alive."""
    # Always one row of a workflow no worker runs: it ends only when the worker cancels it.
    batches = st.lists(
        st.tuples(st.sampled_from(["harness_turn", "harness_turn", "other"]), rows()),
        min_size=5,
        max_size=5,
    ).map(lambda drawn: [*drawn, ("other", {"session": "s", "prompt": "p"})])

    @settings(SETTINGS, max_examples=ROW_BATCHES)
    @given(batch=batches)
    def case(batch: list[tuple[str, Any]]) -> None:
        ids: list[str] = []
        for name, row in batch:
            workflow_id = f"fuzz{uuid.uuid4().hex[:8]}/{len(ids)}"
            try:
                enqueue_raw(url, name, json.dumps(row), workflow_id)
            except psycopg.Error:  # DBOS's function refused it (a NUL): nothing was queued
                continue
            ids.append(workflow_id)
        deadline = time.monotonic() + 4 * HANG_SECONDS
        while True:
            states = ended(url, ids)
            if all(s in ("SUCCESS", "ERROR", "CANCELLED") for s in states.values()):
                break
            assert time.monotonic() < deadline, f"rows never ended: {states}"
            time.sleep(0.5)
        assert worker.process.poll() is None, worker.text()
        lines = worker.text().splitlines()
        assert not [line for line in lines if "Traceback" in line or line.startswith(" ")]

    case()
