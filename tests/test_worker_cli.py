"""harness-worker as a team runs it: real worker processes on a real PostgreSQL, real
`harness submit` and `harness batch` processes, workers killed with SIGKILL mid-call.

Every worker runs with HARNESS_DEV=1, so each append it makes is checked against the log's
invariants (gapless seq, every event inside a turn, every result answering a call)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest
from harness_store_postgres.testing import fresh_schema, initialised, server_url
from test_cli_support import (
    HARNESS,
    Terminal,
    bash_call,
    child_env,
    own_stderr,
    run_cli,
    todo_call,
    write_script,
)


@pytest.fixture
def url() -> Iterator[str]:
    """A fresh, initialised store; DBOS's schema beside it goes with it."""
    with fresh_schema(server_url()) as fresh:
        yield initialised(fresh)
        schema = fresh.rsplit("search_path%3D", 1)[-1]
        with psycopg.connect(server_url(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "dbos_{schema}" CASCADE')


class Worker:
    """`harness worker` in its own process (the workspace's `harness` unless another is
    given, as a wheel's venv gives its own); its output in a file."""

    def __init__(
        self,
        url: str,
        name: str,
        tmp: Path,
        *args: str,
        harness: str = HARNESS,
        env: Mapping[str, str | None] | None = None,
    ) -> None:
        self.name = name
        self.output = tmp / f"worker-{name}.out"
        self._sink = self.output.open("w")
        self.process = subprocess.Popen(
            [harness, "worker", "--store", url, "--sandbox", "off", "--id", name, *args],
            env=child_env({"HARNESS_DEV": "1", **(env or {})}),
            stdout=self._sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.expect("taking turns")

    def text(self) -> str:
        return self.output.read_text()

    def expect(self, wanted: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while wanted not in self.text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker {self.name}: no {wanted!r} in:\n{self.text()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._sink.close()


@pytest.fixture
def workers(url: str, tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def events(url: str, session: str) -> list[dict[str, Any]]:
    shown = run_cli("events", session, "--store", url)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def executor_of(url: str, session: str) -> str | None:
    """The worker running `session`'s turn, from DBOS's own table."""
    schema = url.rsplit("search_path%3D", 1)[-1]
    with psycopg.connect(server_url()) as conn:
        row = conn.execute(
            f'SELECT executor_id FROM "dbos_{schema}".workflow_status '
            "WHERE queue_partition_key = %s AND status = 'PENDING'",
            (session,),
        ).fetchone()
    return str(row[0]) if row else None


def test_a_turn_waits_in_the_queue_until_a_worker_runs_it(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """submit with no worker prints the session and leaves the turn queued; a worker started
    later runs it; --wait on a second turn follows it and exits 0."""
    model = write_script(
        tmp_path / "s.json", [{"tool_calls": [bash_call("echo hi")]}, {"text": "Done."}]
    )
    queued = run_cli("submit", "--store", url, "--model", model, "first")
    assert queued.returncode == 0, queued.stderr
    session = queued.stdout.splitlines()[0]
    assert [e["type"] for e in events(url, session)] == ["session/start"]
    workers.append(Worker(url, "w1", tmp_path))
    second = run_cli(
        "submit", "--store", url, "--session", session, "--model", model, "--wait", "second"
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[0] == session
    assert "→ bash" in second.stdout and "Done." in second.stdout
    assert "turn 2 completed" in second.stdout
    log = events(url, session)
    prompts = [e["data"]["text"] for e in log if e["type"] == "message/user"]
    ends = [e["data"]["status"] for e in log if e["type"] == "turn/end"]
    assert prompts == ["first", "second"] and ends == ["completed", "completed"]


def test_a_worker_killed_mid_call_is_recovered_by_another_without_running_the_call_twice(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    slow = bash_call(f"echo run >> {runs}; sleep 20; echo finished")
    model = write_script(tmp_path / "slow.json", [{"tool_calls": [slow]}, {"text": "Recovered."}])
    workers.extend([Worker(url, "a", tmp_path), Worker(url, "b", tmp_path)])
    waiting = subprocess.Popen(
        [HARNESS, "submit", "--store", url, "--model", model, "--wait", "slow work"],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not runs.exists():
        assert time.monotonic() < deadline, "the slow call never started"
        time.sleep(0.1)
    session = waiting.stdout.readline().strip() if waiting.stdout else ""
    running = executor_of(url, session)
    victim = next(w for w in workers if w.name == running)
    survivor = next(w for w in workers if w is not victim)
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait()
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert "Recovered." in out
    survivor.expect(f"worker {victim.name} is gone: 1 of its turns go back to the queue")
    assert runs.read_text() == "run\n"  # the cut-off call did not run a second time
    log = events(url, session)
    [result] = [e for e in log if e["type"] == "tool/result"]
    assert result["data"]["is_error"] and "interrupted" in result["data"]["text"]
    assert [(e["type"], e["turn"]) for e in log if e["type"].startswith("turn/")] == [
        ("turn/start", 1),
        ("turn/end", 1),
    ]
    assert log[-1]["data"]["status"] == "completed"
    assert [e["seq"] for e in log] == list(range(len(log)))


def test_a_sessions_turns_run_in_submission_order_across_workers(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    workers.extend(
        [
            Worker(url, "x", tmp_path, "--concurrency", "2"),
            Worker(url, "y", tmp_path, "--concurrency", "2"),
        ]
    )
    first = run_cli("submit", "--store", url, "--model", model, "turn 0")
    session = first.stdout.splitlines()[0]
    submits = [
        subprocess.Popen(
            [
                HARNESS,
                "submit",
                "--store",
                url,
                "--session",
                session,
                "--model",
                model,
                f"turn {n}",
            ],
            env=child_env(),
            stdout=subprocess.DEVNULL,
        )
        for n in range(1, 4)
    ]
    for submit in submits:
        submit.wait(timeout=60)
        time.sleep(0)  # each submit is a separate process; their order is the queue's
    waited = run_cli(
        "submit", "--store", url, "--session", session, "--model", model, "--wait", "last"
    )
    assert waited.returncode == 0, waited.stderr
    log = events(url, session)
    prompts = [e["data"]["text"] for e in log if e["type"] == "message/user"]
    assert prompts[0] == "turn 0" and prompts[-1] == "last"
    assert sorted(prompts[1:4]) == ["turn 1", "turn 2", "turn 3"]
    boundaries = [(e["type"], e["turn"]) for e in log if e["type"].startswith("turn/")]
    assert boundaries == [(kind, n) for n in range(1, 6) for kind in ("turn/start", "turn/end")]


def test_a_batch_with_checks_and_variants_compares_them(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """The same tasks with and without the todo plugin: every task ends, each passed check
    is counted, and status puts the two variants side by side."""
    plan = write_script(
        tmp_path / "plan.json",
        [{"tool_calls": [todo_call(("Write it", "in_progress"))]}, {"text": "Written."}],
    )
    lines = []
    for variant, disable in (("todo", []), ("no-todo", ["todo"])):
        for n, check in enumerate(("true", "false", "test -d .")):
            task = {"prompt": f"task {n}", "model": plan, "check": check, "variant": variant}
            lines.append(json.dumps({**task, "disable": disable, "cwd": str(tmp_path)}))
    lines.append(json.dumps({"prompt": "no check", "model": plan}))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    workers.extend([Worker(url, "p", tmp_path, "--concurrency", "2"), Worker(url, "q", tmp_path)])
    ran = run_cli("batch", str(tasks), "--store", url, "--wait", timeout=180)
    assert ran.returncode == 0, ran.stderr
    batch = ran.stdout.splitlines()[0].removeprefix("batch ")
    assert ran.stdout.splitlines()[0] == f"batch {batch}"
    assert "7/7 queued 0 · running 0 · done 7 · failed 0" in ran.stdout
    status = run_cli("batch", "status", batch, "--json", "--store", url)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["counts"] == {"queued": 0, "running": 0, "done": 7, "failed": 0, "passed": 4}
    todo, no_todo = report["variants"]["todo"], report["variants"]["no-todo"]
    assert (todo["tasks"], todo["passed"], todo["plan_used"]) == (3, 2, 1.0)
    assert (no_todo["tasks"], no_todo["passed"], no_todo["plan_used"]) == (3, 2, 0.0)
    assert todo["mean_steps"] == 2 and report["variants"]["default"]["tasks"] == 1
    unchecked = [t for t in report["tasks"] if t["variant"] is None]
    assert [t["check"] for t in unchecked] == [None]
    # Without the plugin the model's todo_write call is answered as a tool it does not have.
    without = next(t for t in report["tasks"] if t["variant"] == "no-todo")
    result = next(e for e in events(url, without["session"]) if e["type"] == "tool/result")
    assert result["data"]["is_error"]
    page = tmp_path / "report.html"
    text = run_cli("batch", "status", batch, "--store", url, "--html", str(page))
    header = text.stdout.splitlines()[1].split()
    assert header == ["todo", "no-todo", "default"]
    assert "plan used" in text.stdout and "100%" in text.stdout and "0%" in text.stdout
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and f"<h1>batch {batch}</h1>" in html
    assert "<th>todo</th><th>no-todo</th><th>default</th>" in html
    assert html.count('class="bar pass"') == 3 and without["session"] in html


def test_batch_wait_on_a_terminal_redraws_one_progress_bar(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """On a real terminal --wait draws the bar on one line and redraws it in place: all
    queued while no worker runs, every task done once one has, then the summary below."""
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"prompt": f"task {n}"}) + "\n" for n in range(3)))
    terminal = Terminal("batch", str(tasks), "--store", url, "--model", model, "--wait")
    terminal.expect("0/3 queued 3 · running 0 · done 0 · failed 0", timeout=60)
    first, bar = terminal.lines[:2]
    assert first.startswith("batch ") and bar == (
        f"[{'.' * 24}] 0/3 queued 3 · running 0 · done 0 · failed 0"
    )
    workers.append(Worker(url, "bar", tmp_path))
    assert terminal.wait(timeout=120) == 0
    batch = first.removeprefix("batch ")
    assert [line for line in terminal.lines if line] == [
        first,
        f"[{'#' * 24}] 3/3 queued 0 · running 0 · done 3 · failed 0",
        f"batch {batch}: 3 done, 0 failed, 0 passed their check",
    ]
    assert terminal.raw.count(b"\r\x1b[2K[") >= 2  # redrawn in place, never a new line


def test_html_goes_with_status_only(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"prompt": "p"}\n')
    refused = run_cli("batch", str(tasks), "--html", "r.html", "--store", f"file://{tmp_path}")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "harness: error: --html goes with status: harness batch status ID --html FILE"
    )


def test_a_bad_task_line_queues_nothing(url: str, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"prompt": "fine"}\n{"prompt": "bad", "disable": "todo"}\n')
    ran = run_cli("batch", str(tasks), "--store", url)
    assert ran.returncode == 1
    assert ran.stderr.strip() == (
        f'harness: error: {tasks} line 2: "disable" must be a list of plugin names'
    )
    listed = run_cli("sessions", "--json", "--store", url)
    assert json.loads(listed.stdout) == []


def test_sigterm_stops_a_worker_cleanly(url: str, workers: list[Worker], tmp_path: Path) -> None:
    worker = Worker(url, "t", tmp_path)
    workers.append(worker)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=60) == 0
    assert "stopping: no new turns" in worker.text()


def test_a_worker_refuses_what_it_cannot_do(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """ask approval, a store that is not PostgreSQL, and an identity already running."""
    ask = run_cli("worker", "--store", url, env={"HARNESS_APPROVAL": "ask"})
    assert ask.returncode == 1 and "pass --approval auto or --approval deny" in ask.stderr
    assert len(ask.stderr.strip().splitlines()) == 1
    files = run_cli("worker", "--store", f"file://{tmp_path}")
    assert files.returncode == 1 and "workers share a PostgreSQL store" in files.stderr
    workers.append(Worker(url, "same", tmp_path))
    twice = run_cli("worker", "--store", url, "--sandbox", "off", "--id", "same")
    assert twice.returncode == 1 and "worker same is already running (host " in twice.stderr


def test_serve_queue_sends_the_pages_turns_to_the_workers(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """A turn posted through the web API of `serve --queue` is queued (the server runs no
    turn), shows in the snapshot while no worker runs, runs on a worker started later, and
    reaches the page's event stream as the worker commits it."""
    from web_support import serve, sse_events

    model = write_script(
        tmp_path / "plan.json",
        [{"tool_calls": [todo_call(("Queue it", "in_progress"))]}, {"text": "Queued and done."}],
    )
    env = {"HARNESS_STORE": url}
    with serve(tmp_path / "home", "--queue", "--model", model, env=env) as served:
        with served.client(timeout=60) as client:
            session = client.post("/api/sessions", json={}).json()["id"]
            first = client.post(f"/api/sessions/{session}/turns", json={"prompt": "one"})
            assert (first.status_code, first.json()) == (202, {"turn": 1})
            second = client.post(f"/api/sessions/{session}/turns", json={"prompt": "two"})
            assert second.json() == {"queued": 2}
            snapshot = client.get(f"/api/sessions/{session}/history").json()["snapshot"]
            assert (snapshot["running"], snapshot["queued"]) == (False, ["one", "two"])
            with client.stream("GET", f"/api/sessions/{session}/events") as stream:
                workers.append(Worker(url, "web", tmp_path))
                received = sse_events(stream, until=11)
        page = served.wait_idle(session, timeout=60)
    types = [e["data"]["type"] for e in received if e["event"] == "message"]
    assert types.count("turn/start") == 2 and "todo/write" in types
    texts = [e["data"]["text"] for e in page["events"] if e["type"] == "message/user"]
    assert texts == ["one", "two"]
    assert page["snapshot"]["todos"][0]["content"] == "Queue it"


def test_serve_queue_without_a_queue_for_the_store_is_one_line(tmp_path: Path) -> None:
    served = run_cli("serve", "--queue", "--store", f"file://{tmp_path}")
    assert served.returncode == 1
    assert own_stderr(served.stderr).strip() == (
        f"harness: error: --queue needs a plugin that queues turns for the store "
        f"file://{tmp_path}: install harness-worker and name a PostgreSQL store "
        "(--store postgresql://...)"
    )


def test_serve_queue_removes_a_waiting_turn_and_cancels_a_running_one(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """The page's remove and stop buttons under --queue: a waiting prompt leaves the queue
    (it never runs), and a turn running on a worker ends `cancelled` there."""
    from web_support import serve

    runs = tmp_path / "runs"
    slow = bash_call(f"echo run >> {runs}; sleep 30")
    model = write_script(tmp_path / "slow.json", [{"tool_calls": [slow]}, {"text": "never"}])
    with (
        serve(tmp_path / "home", "--queue", "--model", model, env={"HARNESS_STORE": url}) as served,
        served.client(timeout=60) as client,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        for prompt in ("keep", "drop"):
            client.post(f"/api/sessions/{session}/turns", json={"prompt": prompt})
        removed = client.request(
            "DELETE", f"/api/sessions/{session}/queue", json={"position": 2, "prompt": "drop"}
        )
        assert removed.status_code == 200, removed.text
        snapshot = client.get(f"/api/sessions/{session}/history").json()["snapshot"]
        assert snapshot["queued"] == ["keep"]
        workers.append(Worker(url, "c", tmp_path))
        deadline = time.monotonic() + 60
        while not runs.exists():
            assert time.monotonic() < deadline, "the turn never started"
            time.sleep(0.1)
        cancelled = client.post(f"/api/sessions/{session}/cancel")
        assert cancelled.json() == {"cancelled": True}
        page = served.wait_idle(session, timeout=60)
    ends = [e["data"] for e in page["events"] if e["type"] == "turn/end"]
    assert [end["status"] for end in ends] == ["cancelled"]
    texts = [e["data"]["text"] for e in page["events"] if e["type"] == "message/user"]
    assert texts == ["keep"]
    assert "Traceback" not in workers[0].text() and runs.read_text() == "run\n"


def test_a_frozen_worker_is_taken_for_dead_when_its_heartbeat_lapses(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """A worker that stops answering (SIGSTOP: its process and its connections stay, like a
    machine cut off) holds its session's writer lock. Once its heartbeat lapses a peer ends
    its connections, the lock goes with them, and the turn goes on on the peer; the frozen
    worker, woken, finds its connection gone and leaves with one line."""
    runs = tmp_path / "runs"
    slow = bash_call(f"echo run >> {runs}; sleep 20")
    model = write_script(tmp_path / "slow.json", [{"tool_calls": [slow]}, {"text": "Went on."}])
    frozen = Worker(url, "frozen", tmp_path)
    workers.append(frozen)
    session = run_cli("submit", "--store", url, "--model", model, "work").stdout.split()[0]
    deadline = time.monotonic() + 60
    while not runs.exists():
        assert time.monotonic() < deadline, "the slow call never started"
        time.sleep(0.1)
    frozen.process.send_signal(signal.SIGSTOP)
    peer = Worker(url, "peer", tmp_path, env={"HARNESS_WORKER_LAPSE": "5"})
    workers.append(peer)
    peer.expect("worker frozen is gone: 1 of its turns go back to the queue", timeout=60)
    deadline = time.monotonic() + 60
    while events(url, session)[-1]["type"] != "turn/end":
        assert time.monotonic() < deadline, "the turn never went on"
        time.sleep(0.2)
    log = events(url, session)
    assert log[-1]["data"]["status"] == "completed"
    [result] = [e for e in log if e["type"] == "tool/result"]
    assert "interrupted" in result["data"]["text"]
    frozen.process.send_signal(signal.SIGCONT)
    assert frozen.process.wait(timeout=30) == 1
    assert "worker frozen lost its database connection" in frozen.text()
    assert runs.read_text() == "run\n"


def test_submit_never_imports_dbos(url: str, tmp_path: Path) -> None:
    """A submitter queues through DBOS's SQL function: the third of a second DBOS's import
    costs is a worker's alone (the tables exist once a worker or a submit made them)."""
    import sys

    model = write_script(tmp_path / "s.json", [{"text": "ok"}])
    assert run_cli("submit", "--store", url, "--model", model, "first").returncode == 0
    command = ["submit", "--store", url, "--model", model, "second"]
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness_core.cli", *command],
        env=child_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert traced.returncode == 0, traced.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines()]
    assert "harness_worker._engine" in imported
    assert not [name for name in imported if name.split(".")[0] in ("dbos", "sqlalchemy")]


@pytest.mark.parametrize("command", [["submit", "hi"], ["worker"], ["batch", "status", "b"]])
def test_a_database_that_does_not_answer_is_one_line_without_the_password(
    command: list[str],
) -> None:
    from web_support import free_port

    port = free_port()
    url = f"postgresql://harness:n0t-the-password@127.0.0.1:{port}/nowhere"
    failed = run_cli(*command, "--store", url)
    assert failed.returncode == 1
    assert own_stderr(failed.stderr).strip().splitlines() == [
        f"harness: error: PostgreSQL store 127.0.0.1:{port}/nowhere: cannot connect: "
        "Connection refused"
    ]
    assert "n0t-the-password" not in failed.stdout + failed.stderr
