"""harness-worker's queue against running a turn where it is asked for, in one run.

    HARNESS_TEST_POSTGRES=postgresql://... uv run python scripts/bench/workers.py [--tasks 200]

Everything runs on a fresh schema of the database HARNESS_TEST_POSTGRES names, with real
`harness worker` processes (sandbox off, so the figures are the queue's, not bubblewrap's),
from compiled bytecode as an installed harness runs: PYTHONDONTWRITEBYTECODE is dropped and
the bytecode goes to a temporary PYTHONPYCACHEPREFIX, written by one untimed run of each
command first (without it every process compiles DBOS, SQLAlchemy and psycopg again).

1. Per turn, a 20-step scripted todo_write turn:
   - the commands (goal, issue 24: within 1.5x): `harness submit --wait` against `harness
     run` on the same store, fresh processes, median of 5, interleaved. A submitter queues
     through DBOS's SQL function and reads the end from its tables: it never imports DBOS;
   - steady state, reported: in one process, turn after turn on one session, queued and
     waited for, against the same turns run in that process by the session runtime, which
     holds the session open between turns. Where the queue's time goes is printed too
     (DBOS's own times of each workflow).
2. Throughput of a batch of N short scripted tasks (3 steps) with 1 worker and with 2.
3. Recovery: a worker is killed with SIGKILL in the middle of a slow call; from the kill to
   the turn going on in the other worker (the interrupted result's `ts`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Final

TURN_STEPS: Final = 20
TURNS: Final = 10
CLI_RUNS: Final = 5
GOAL: Final = 1.5


def todo_steps(count: int) -> list[dict[str, Any]]:
    """`count` scripted responses: todo_write calls, then a text answer."""
    calls = [
        {
            "tool_calls": [
                {
                    "name": "todo_write",
                    "arguments": {"todos": [{"content": f"step {n}", "status": "in_progress"}]},
                }
            ]
        }
        for n in range(count - 1)
    ]
    return [*calls, {"text": "done"}]


def script(directory: Path, name: str, steps: list[dict[str, Any]]) -> str:
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path}"


class Worker:
    def __init__(self, url: str, name: str, home: Path, env: dict[str, str]) -> None:
        self.output = home / f"worker-{name}.out"
        self.sink = self.output.open("w")
        command = [sys.executable, "-m", "harness_core.cli", "worker", "--sandbox", "off"]
        self.process = subprocess.Popen(
            [*command, "--id", name, "--store", url],
            env=env,
            stdout=self.sink,
            stderr=subprocess.STDOUT,
        )
        self.name = name
        deadline = time.monotonic() + 60
        while "taking turns" not in self.output.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"worker {name} did not start:\n{self.output.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.sink.close()


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "harness_core.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"harness {args[0]} failed: {done.stderr.strip()}")
    return done


# -- 1. per turn -------------------------------------------------------------------------------


def steady(url: str, model: str) -> tuple[float, float]:
    """Median seconds per turn: queued and waited for, then run in this process."""
    import anyio
    from harness_core.loop import Approval
    from harness_core.runtime import Runtime
    from harness_worker import _engine, _tables

    runtime = Runtime()
    conn = _tables.connect(url)
    schema = _engine.queue_schema(conn, url)
    log = runtime.create()
    log.close()
    queued, parts = [], []
    for n in range(TURNS):
        started = time.perf_counter()
        job = {"session": log.session_id, "prompt": f"q{n}", "model": model}
        workflow = _engine.enqueue(conn, schema, job)
        while (ended := _engine.outcome(conn, schema, workflow))[0] in ("ENQUEUED", "PENDING"):
            time.sleep(0.01)
        queued.append(time.perf_counter() - started)
        if ended[1] is None or ended[1]["status"] != "completed":
            raise SystemExit(f"a queued turn ended {ended}")
        parts.append(stages(url, schema, workflow, time.time()))
    conn.close()

    async def local() -> list[float]:
        session = runtime.open(None, runtime.model, approval=Approval("auto"))
        session.default_spec = model
        times = []
        for n in range(TURNS):
            started = time.perf_counter()
            outcome = await session.run(f"r{n}")
            times.append(time.perf_counter() - started)
            assert outcome.status == "completed", outcome
            # A script plays from its start again for the next turn, as on a worker.
            session._models.clear()
        await session.aclose()
        return times

    ran = anyio.run(local)
    pickup, work, seen = (statistics.median(p[i] for p in parts) for i in range(3))
    print(
        f"  queued turn, median: {pickup:.0f} ms until a worker took it, {work:.0f} ms on the "
        f"worker, {seen:.0f} ms until the submitter saw it end"
    )
    return statistics.median(queued), statistics.median(ran)


def stages(url: str, schema: str, workflow: str, now: float) -> tuple[float, float, float]:
    """DBOS's own times of a finished workflow: queued to taken, taken to done, to `now`."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            f'SELECT created_at, started_at_epoch_ms, completed_at FROM "{schema}".workflow_status '
            "WHERE workflow_uuid = %s",
            (workflow,),
        ).fetchone()
    assert row is not None
    created, started, completed = row
    return started - created, completed - started, now * 1000 - completed


def commands(env: dict[str, str], model: str) -> tuple[float, float]:
    """Median seconds of `harness submit --wait` and of `harness run`, interleaved (after
    one untimed run of each, which writes their bytecode)."""
    cli(env, "submit", "--wait", "--model", model, "warm")
    cli(env, "run", "--sandbox", "off", "--approval", "auto", "--model", model, "warm")
    submits, runs = [], []
    for _ in range(CLI_RUNS):
        started = time.perf_counter()
        cli(env, "submit", "--wait", "--model", model, "go")
        submits.append(time.perf_counter() - started)
        started = time.perf_counter()
        cli(env, "run", "--sandbox", "off", "--approval", "auto", "--model", model, "go")
        runs.append(time.perf_counter() - started)
    return statistics.median(submits), statistics.median(runs)


# -- 2. throughput -----------------------------------------------------------------------------


def throughput(url: str, env: dict[str, str], home: Path, tasks: int, count: int) -> float:
    """Tasks per second of a batch of `tasks` short tasks on `count` workers."""
    model = script(home, "short", todo_steps(3))
    lines = "\n".join(json.dumps({"prompt": f"task {n}", "model": model}) for n in range(tasks))
    path = home / f"batch-{count}.jsonl"
    path.write_text(lines + "\n")
    workers = [Worker(url, f"t{count}-{n}", home, env) for n in range(count)]
    try:
        started = time.perf_counter()
        cli(env, "batch", str(path), "--wait")
        return tasks / (time.perf_counter() - started)
    finally:
        for worker in workers:
            worker.stop()


# -- 3. recovery -------------------------------------------------------------------------------


def recovery(url: str, env: dict[str, str], home: Path) -> float:
    """Seconds from SIGKILL of the worker running a slow call to the turn going on."""
    marker = home / "started"
    slow = {"name": "bash", "arguments": {"command": f"touch {marker}; sleep 60"}}
    model = script(home, "slow", [{"tool_calls": [slow]}, {"text": "went on"}])
    workers = [Worker(url, f"r{n}", home, env) for n in range(2)]
    try:
        session = cli(env, "submit", "--model", model, "slow").stdout.split()[0]
        deadline = time.monotonic() + 60
        while not marker.exists():
            if time.monotonic() > deadline:
                raise SystemExit("the slow call never started: see the workers' output")
            time.sleep(0.02)
        running = running_on(url, session)
        victim = next(w for w in workers if w.name == running)
        victim.process.send_signal(signal.SIGKILL)
        killed = time.time()
        victim.process.wait()
        while time.monotonic() < deadline + 120:
            events = [json.loads(line) for line in cli(env, "events", session).stdout.splitlines()]
            result = next((e for e in events if e["type"] == "tool/result"), None)
            if result is not None:
                return datetime.fromisoformat(result["ts"]).timestamp() - killed
            time.sleep(0.05)
        raise SystemExit("the killed worker's turn never went on")
    finally:
        for worker in workers:
            worker.stop()


def running_on(url: str, session: str) -> str:
    import psycopg

    schema = url.rsplit("search_path%3D", 1)[-1]
    with psycopg.connect(url) as conn:
        while True:
            row = conn.execute(
                f'SELECT executor_id FROM "dbos_{schema}".workflow_status '
                "WHERE queue_partition_key = %s AND status = 'PENDING'",
                (session,),
            ).fetchone()
            if row:
                return str(row[0])
            time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks of the batch (200)")
    args = parser.parse_args()
    server = os.environ.get("HARNESS_TEST_POSTGRES")
    if not server:
        raise SystemExit("set HARNESS_TEST_POSTGRES=postgresql://USER:PASSWORD@HOST/DATABASE")
    from harness_store_postgres.testing import fresh_schema, initialised

    with tempfile.TemporaryDirectory() as tmp, fresh_schema(server) as fresh:
        url, home = initialised(fresh), Path(tmp)
        env = {**os.environ, "HARNESS_HOME": str(home), "HARNESS_STORE": url}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
        os.environ.update(HARNESS_HOME=str(home), HARNESS_STORE=url)
        env["HARNESS_MAX_STEPS"] = str(TURN_STEPS + 10)
        os.environ["HARNESS_MAX_STEPS"] = env["HARNESS_MAX_STEPS"]
        model = script(home, "turn", todo_steps(TURN_STEPS))
        try:
            report(url, env, home, model, args.tasks)
        finally:
            import psycopg

            with psycopg.connect(server, autocommit=True) as conn:
                schema = url.rsplit("search_path%3D", 1)[-1]
                conn.execute(f'DROP SCHEMA IF EXISTS "dbos_{schema}" CASCADE')


def report(url: str, env: dict[str, str], home: Path, model: str, tasks: int) -> None:
    print(f"per turn, {TURN_STEPS}-step scripted turn:")
    worker = Worker(url, "bench", home, env)
    try:
        queued, ran = steady(url, model)
        submit, run = commands(env, model)
    finally:
        worker.stop()
    ratio = submit / run
    verdict = "ok" if ratio <= GOAL else "MISSED"
    print(
        f"  commands, median of {CLI_RUNS}: submit --wait {submit * 1e3:.0f} ms, run "
        f"{run * 1e3:.0f} ms: {ratio:.2f}x (goal within {GOAL}x: {verdict})"
    )
    print(
        f"  steady state, median of {TURNS}: queued {queued * 1e3:.0f} ms, in a process that "
        f"holds the session {ran * 1e3:.0f} ms: {queued / ran:.2f}x (reported)"
    )
    one = throughput(url, env, home, tasks, 1)
    two = throughput(url, env, home, tasks, 2)
    print(f"batch of {tasks} 3-step tasks: 1 worker {one:.1f}/s, 2 workers {two:.1f}/s", end="")
    print(f" ({two / one:.2f}x)")
    resumed = recovery(url, env, home)
    print(f"recovery: SIGKILL of a worker mid-call to the turn going on: {resumed:.2f} s")


if __name__ == "__main__":
    main()
