"""harness-worker as a team runs it: real worker processes on a real PostgreSQL, real
`harness submit` and `harness batch` processes, workers killed with SIGKILL mid-call.

Every worker runs with HARNESS_DEV=1, so each append it makes is checked against the log's
invariants (gapless seq, every event inside a turn, every result answering a call)."""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

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
from test_cli_workspace import CANARIES, PRIVATE_TMP, needs_bwrap, needs_root

pytestmark = pytest.mark.slow  # real processes for seconds each: run first


@contextmanager
def a_store() -> Iterator[str]:
    """A fresh, initialised store; DBOS's schema beside it goes with it."""
    with fresh_schema(server_url()) as fresh:
        yield initialised(fresh)
        with psycopg.connect(server_url(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "dbos_{schema_of(fresh)}" CASCADE')


@pytest.fixture
def url() -> Iterator[str]:
    with a_store() as store:
        yield store


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


def wait_started(runs: Path, what: str) -> None:
    """Wait until a slow call has written its first line to `runs` (60 s at most)."""
    deadline = time.monotonic() + 60
    while not runs.exists():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def events(url: str, session: str) -> list[dict[str, Any]]:
    shown = run_cli("events", session, "--store", url)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def executor_of(url: str, session: str) -> str | None:
    """The worker running `session`'s turn, from DBOS's own table."""
    schema = schema_of(url)
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
    wait_started(runs, "the slow call never started")
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
    checks = ("--sandbox", "workspace", "--checks")
    workers.extend(
        [
            Worker(url, "p", tmp_path, "--concurrency", "2", *checks),
            Worker(url, "q", tmp_path, *checks),
        ]
    )
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


def test_a_repeated_batch_compares_two_variants_on_paired_samples(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """Ten tasks, variants `a` and `b`, --repeat 2, on two workers that run checks. `b`'s
    model writes a file, `a`'s does not; each (task, variant) has its own directory. Tasks
    0-5 check the file is there (only b passes), 6-7 pass, 8 checks it is absent (only a
    passes), 9 fails: 20 pairs, a_only 2, b_only 12, and the exact McNemar p of 2 among 14
    fair coins, 2 * (1 + 14 + 91) / 2**14."""
    quiet = write_script(tmp_path / "a.json", [{"text": "Done."}])
    maker = write_script(
        tmp_path / "b.json", [{"tool_calls": [bash_call("touch made")]}, {"text": "Made."}]
    )
    checks = ["test -f made"] * 6 + ["true", "true", "test ! -f made", "false"]
    lines = []
    for variant, model in (("a", quiet), ("b", maker)):
        for n, check in enumerate(checks):
            home = tmp_path / f"t{n}-{variant}"
            home.mkdir()
            line = {"prompt": f"task {n}", "task": f"t{n}", "model": model, "check": check}
            lines.append(json.dumps({**line, "variant": variant, "cwd": str(home)}))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    flags = ("--sandbox", "workspace", "--checks", "--concurrency", "2")
    workers.extend([Worker(url, "r", tmp_path, *flags), Worker(url, "s", tmp_path, *flags)])
    ran = run_cli("batch", str(tasks), "--store", url, "--repeat", "2", "--wait", timeout=400)
    assert ran.returncode == 0, ran.stderr
    batch = ran.stdout.splitlines()[0].removeprefix("batch ")
    report = json.loads(run_cli("batch", "status", batch, "--json", "--store", url).stdout)
    assert report["counts"]["done"] == 40 and report["counts"]["passed"] == 22
    assert sorted((t["task"], t["variant"], t["repeat"]) for t in report["tasks"]) == sorted(
        (f"t{n}", v, r) for n in range(10) for v in "ab" for r in (0, 1)
    )
    assert len({t["session"] for t in report["tasks"]}) == 40  # a session per sample
    a, b = report["variants"]["a"], report["variants"]["b"]
    assert (a["checked"], a["passed"], b["checked"], b["passed"]) == (20, 6, 20, 16)
    assert (a["pass_at_k"], a["pass_hat_k"], b["pass_at_k"], b["pass_hat_k"]) == (
        0.3,
        0.3,
        0.8,
        0.8,
    )
    [comparison] = report["comparisons"]
    assert {k: comparison[k] for k in ("a", "b", "pairs", "a_only", "b_only")} == {
        "a": "a",
        "b": "b",
        "pairs": 20,
        "a_only": 2,
        "b_only": 12,
    }
    assert comparison["diff"] == pytest.approx(0.5)
    assert comparison["p_value"] == pytest.approx(2 * (1 + 14 + 91) / 2**14)
    low, high = comparison["diff_ci"]
    assert 0 < low < 0.5 < high <= 1
    assert comparison["verdict"] == (
        f"b passes 50.0 points more [{low * 100:.1f}, {high * 100:.1f}], p = 0.013, "
        "14 discordant of 20: significant difference"
    )
    # The scripted model reports no usage: every pair differs by 0 tokens, and the bootstrap
    # of data that never varies is that point, not a crash.
    assert (comparison["tokens_diff"], comparison["tokens_diff_ci"]) == (0.0, [0.0, 0.0])
    page = tmp_path / "report.html"
    text = run_cli("batch", "status", batch, "--store", url, "--html", str(page)).stdout
    assert f"a vs b: {comparison['verdict']}" in text
    html = page.read_text()
    assert html.index(comparison["verdict"]) < html.index('<table class="grid">')
    assert "<th>a #1</th><th>a #2</th><th>b #1</th><th>b #2</th>" in html
    assert html.count('<td class="passed">passed</td>') == 22


def test_batch_status_reads_a_table_from_before_repeats(url: str, tmp_path: Path) -> None:
    """A batch queued before tasks had ids and repeats still reads: its rows show no task and
    repeat 0, and pair with nothing."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE harness_tasks (batch text NOT NULL, position integer NOT NULL, "
            "session_id text NOT NULL, workflow_id text, variant text, has_check boolean NOT "
            "NULL, state text NOT NULL DEFAULT 'queued', check_result text, steps integer, "
            "tokens_input bigint, tokens_output bigint, tokens_cached bigint, seconds double "
            "precision, plan_used boolean, PRIMARY KEY (batch, position))"
        )
        conn.execute(
            "INSERT INTO harness_tasks VALUES ('old', 0, 's0', NULL, 'x', true, 'completed', "
            "'passed', 1, 10, 5, 0, 1.0, false), ('old', 1, 's1', NULL, 'y', true, "
            "'completed', 'failed', 1, 10, 5, 0, 1.0, false)"
        )
    status = run_cli("batch", "status", "old", "--json", "--store", url)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert [(t["task"], t["repeat"], t["check"]) for t in report["tasks"]] == [
        (None, 0, "passed"),
        (None, 0, "failed"),
    ]
    assert report["variants"]["x"]["pass_rate"] == 1.0
    [comparison] = report["comparisons"]
    assert comparison["pairs"] == 0


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


SECRETS: Final = {"PGPASSWORD": "pg-secret-for-checks", "OPENAI_API_KEY": "sk-check-key-123"}
PROBE: Final = 'id > marker; echo "pg=$PGPASSWORD key=$OPENAI_API_KEY store=$HARNESS_STORE" > leak'


def run_check(
    url: str, workers: list[Worker], tmp_path: Path, check: str, *flags: str
) -> tuple[dict[str, Any], Path, str]:
    """One batch task with `check`, in a workspace of its own, run on a worker started with
    `flags` and the secrets above in its environment: its status row, the workspace, and
    `harness batch status`'s text."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    line = {"prompt": "p", "model": model, "check": check, "cwd": str(workspace)}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(line) + "\n")
    env = {**SECRETS, "HARNESS_STORE": url}
    workers.append(Worker(url, "checker", tmp_path, *flags, env=env))
    ran = run_cli("batch", str(tasks), "--store", url, "--wait", timeout=120)
    assert ran.returncode == 0, ran.stderr
    batch = ran.stdout.splitlines()[0].removeprefix("batch ")
    status = run_cli("batch", "status", batch, "--json", "--store", url)
    [task] = json.loads(status.stdout)["tasks"]
    text = run_cli("batch", "status", batch, "--store", url).stdout
    return task, workspace, text


@pytest.mark.parametrize(
    "flags", [(), ("--sandbox", "workspace", "--approval", "deny", "--checks")], ids=str
)
def test_a_check_runs_nothing_without_checks_or_under_deny(
    url: str, workers: list[Worker], tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """Whoever can write the queue chooses a check: a worker started without --checks, or
    under --approval deny, runs none and records it skipped."""
    task, workspace, text = run_check(url, workers, tmp_path, PROBE, *flags)
    assert (task["status"], task["check"]) == ("completed", "skipped")
    assert list(workspace.iterdir()) == []  # neither marker nor leak: nothing ran
    assert "1 checks skipped: their workers run no checks" in text
    assert "passed" in text.splitlines()[3] and text.splitlines()[3].split()[-1] == "-"


def test_a_check_runs_in_the_sandbox_with_the_tools_environment(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """On a worker started with --checks the check runs in the task's directory, inside the
    sandbox (it cannot write beside the workspace), and sees none of the worker's secrets."""
    outside = tmp_path / "outside"
    outside.mkdir()
    check = f"{PROBE}; ! echo escaped > {outside}/escape"
    task, workspace, _ = run_check(
        url, workers, tmp_path, check, "--sandbox", "workspace", "--checks"
    )
    assert (task["status"], task["check"]) == ("completed", "passed")
    assert (workspace / "marker").read_text().startswith("uid=")
    assert (workspace / "leak").read_text() == "pg= key= store=\n"
    assert list(outside.iterdir()) == []


@needs_bwrap
def test_a_check_cut_off_by_a_stop_runs_again_on_the_worker_that_goes_on(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """SIGTERM during a batch check that outlives the grace: the check is killed (its END is
    never written) and recorded nowhere, the worker exits 0 saying the task goes on, and a
    peer started with --checks runs the check again and records it passed."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    check = "if [ -e once ]; then exit 0; fi; touch once; sleep 40; echo END > marker"
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    tasks = tmp_path / "tasks.jsonl"
    line = {"prompt": "p", "model": model, "check": check, "cwd": str(workspace)}
    tasks.write_text(json.dumps(line) + "\n")
    checks = ("--sandbox", "workspace", "--checks")
    stopping = Worker(url, "stopping", tmp_path, *checks)
    workers.append(stopping)
    queued = run_cli("batch", str(tasks), "--store", url)
    batch = queued.stdout.splitlines()[0].removeprefix("batch ")
    deadline = time.monotonic() + 60
    while not (workspace / "once").exists():
        assert time.monotonic() < deadline, "the check never started"
        time.sleep(0.1)
    started = time.monotonic()
    stopping.process.send_signal(signal.SIGTERM)
    workers.append(Worker(url, "peer", tmp_path, *checks))
    assert stopping.process.wait(timeout=90) == 0
    assert "stopped with 1 turn(s) still running after 30s" in stopping.text()
    deadline = time.monotonic() + 60
    while True:
        status = run_cli("batch", "status", batch, "--json", "--store", url)
        [task] = json.loads(status.stdout)["tasks"]
        if task["check"] is not None:
            break
        assert time.monotonic() < deadline, f"the check never ended: {task}"
        time.sleep(0.5)
    assert (task["status"], task["check"]) == ("completed", "passed")
    time.sleep(max(0.0, started + 43 - time.monotonic()))  # past the END the check would write
    assert not (workspace / "marker").exists()


def test_checks_need_the_sandbox(url: str, tmp_path: Path) -> None:
    refused = run_cli("worker", "--store", url, "--sandbox", "off", "--checks")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "harness: error: --checks runs each batch check in the sandbox, and the sandbox is "
        "off: start the worker with --sandbox workspace (bubblewrap), or without --checks"
    )


def test_html_goes_with_status_only(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"prompt": "p"}\n')
    refused = run_cli("batch", str(tasks), "--html", "r.html", "--store", f"file://{tmp_path}")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "harness: error: --html goes with status: harness batch status ID --html FILE"
    )


def schema_of(url: str) -> str:
    return url.rsplit("search_path%3D", 1)[-1]


def tables_in(url: str) -> list[str]:
    """Every table of the store's schema and of DBOS's beside it."""
    schema = schema_of(url)
    with psycopg.connect(server_url()) as conn:
        rows = conn.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_schema IN (%s, %s) ORDER BY 1",
            (schema, f"dbos_{schema}"),
        ).fetchall()
    return [str(row[0]) for row in rows]


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ({"prompt": "bad", "disable": "todo"}, '"disable": Input should be a valid array'),
        ({"prompt": "bad", "variant": "a\x00b"}, '"variant": holds a NUL character'),
        ({"prompt": "bad", "cwd": "/nowhere/at/all"}, "\"cwd\": '/nowhere/at/all' is not a"),
        ({"prompt": " "}, '"prompt": must not be empty'),
        ({"prompt": "bad", "turns": 3}, "unknown key 'turns' (known: prompt, task, model, check"),
        ([1], "a task is a JSON object"),
    ],
    ids=["disable", "nul", "cwd", "blank", "unknown", "array"],
)
def test_a_bad_fourth_line_creates_nothing(url: str, tmp_path: Path, bad: Any, error: str) -> None:
    """Every line is checked before anything is written: the first bad one is one line
    naming it, and no session, task row or queued turn is left behind."""
    tasks = tmp_path / "tasks.jsonl"
    good = [json.dumps({"prompt": f"fine {n}", "variant": "v"}) for n in range(3)]
    tasks.write_text("\n".join([*good, json.dumps(bad)]) + "\n")
    before = tables_in(url)
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    ran = run_cli("batch", str(tasks), "--store", url, "--model", model)
    assert ran.returncode == 1
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith(f"harness: error: {tasks} line 4: {error}"), line
    listed = run_cli("sessions", "--json", "--store", url)
    assert json.loads(listed.stdout) == []
    assert tables_in(url) == before


def test_batch_status_shows_a_variant_name_without_its_terminal_escapes(
    url: str, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    evil = "\x1b]0;owned\x07red\x1b[31m\x1b[2J"
    tasks.write_text(json.dumps({"prompt": "p", "variant": evil}) + "\n")
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    ran = run_cli("batch", str(tasks), "--store", url, "--model", model)
    assert ran.returncode == 0, ran.stderr
    batch = ran.stdout.split()[1]
    status = run_cli("batch", "status", batch, "--store", url)
    assert status.returncode == 0, status.stderr
    assert "\x1b" not in status.stdout and "\x07" not in status.stdout
    assert status.stdout.splitlines()[1].split() == ["red"]
    raw = json.loads(run_cli("batch", "status", batch, "--json", "--store", url).stdout)
    assert raw["tasks"][0]["variant"] == evil  # --json stays verbatim


def test_batch_refuses_a_repeat_below_one_and_a_blank_task(url: str, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"prompt": "p"}) + "\n")
    zero = run_cli("batch", str(tasks), "--store", url, "--repeat", "0")
    assert (zero.returncode, zero.stdout) == (1, "")
    assert "--repeat takes a count of 1 or more, not 0" in zero.stderr
    tasks.write_text(json.dumps({"prompt": "p", "task": " "}) + "\n")
    blank = run_cli("batch", str(tasks), "--store", url)
    assert blank.returncode == 1 and f'{tasks} line 1: "task": must not be empty' in blank.stderr
    listed = run_cli("sessions", "--store", url, "--json")
    assert json.loads(listed.stdout) == []


def test_batch_status_of_a_store_without_batches_makes_no_table(url: str) -> None:
    before = tables_in(url)
    status = run_cli("batch", "status", "20260101-000000-abcdef", "--store", url)
    assert status.returncode == 1
    assert "no batch 20260101-000000-abcdef in" in status.stderr
    assert tables_in(url) == before


@pytest.mark.parametrize("command", [["submit", "hi"], ["batch", "TASKS"], ["worker"]])
def test_a_command_against_an_empty_database_creates_nothing(
    command: list[str], tmp_path: Path
) -> None:
    """A database where `harness store init` never ran: one line naming it, and neither
    DBOS's tables nor harness's are made (nor a session)."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"prompt": "p"}\n')
    args = [str(tasks) if arg == "TASKS" else arg for arg in command]
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    with fresh_schema(server_url()) as empty:
        extra = [] if command == ["worker"] else ["--model", model]
        failed = run_cli(*args, "--store", empty, *extra, timeout=60)
        assert failed.returncode == 1
        [line] = failed.stderr.strip().splitlines()
        assert "was never initialised: run `harness store init --store URL`" in line
        assert tables_in(empty) == []


def enqueue_raw(url: str, name: str, args: str, workflow_id: str) -> None:
    """A row as anyone who can write the queue can write it: DBOS's own SQL function."""
    schema = f"dbos_{schema_of(url)}"
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(
            f'SELECT "{schema}".enqueue_workflow(workflow_name => %s, queue_name => '
            "'harness_turns', positional_args => ARRAY[%s::json], workflow_id => %s, "
            "app_version => 'harness-worker-1', queue_partition_key => %s)",
            (name, args, workflow_id, workflow_id.split("/")[0]),
        )


def workflow_status(url: str, workflow_id: str) -> tuple[str, str | None]:
    schema = f"dbos_{schema_of(url)}"
    with psycopg.connect(server_url()) as conn:
        row = conn.execute(
            f'SELECT s.status, o.output FROM "{schema}".workflow_status s LEFT JOIN '
            f'"{schema}".workflow_output o USING (workflow_uuid) WHERE s.workflow_uuid = %s',
            (workflow_id,),
        ).fetchone()
    assert row is not None
    return str(row[0]), row[1]


def test_a_poisoned_queue_row_is_one_line_and_ends(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """Rows harness never wrote (no session, wrong types, not an object, another workflow's
    name) each make one line on the worker and end; none is a traceback or stays PENDING,
    and the session a bad row named still takes its next turn."""
    worker = Worker(url, "poisoned", tmp_path)
    workers.append(worker)
    model = write_script(tmp_path / "t.json", [{"text": "still fine"}])
    session = run_cli("submit", "--store", url, "--model", model, "first").stdout.split()[0]
    bad = {
        "s1/no-session": '{"prompt": "p"}',
        "s2/types": '{"session": 5, "prompt": ["p"]}',
        "s3/string": '"just a string"',
    }
    for workflow_id, args in bad.items():
        enqueue_raw(url, "harness_turn", args, workflow_id)
    enqueue_raw(url, "evil_workflow", '{"session": "x", "prompt": "p"}', f"{session}/evil")
    worker.expect(f"queued workflow {session}/evil (evil_workflow) never started", timeout=90)
    for workflow_id in bad:
        status, output = workflow_status(url, workflow_id)
        assert status == "SUCCESS" and json.loads(output or "{}")["status"] == "error"
        assert f"queued turn {workflow_id} is not a job" in worker.text()
    assert workflow_status(url, f"{session}/evil")[0] == "CANCELLED"
    lines = worker.text().splitlines()
    assert not [line for line in lines if "Traceback" in line or line.startswith(" ")]
    after = run_cli(
        "submit", "--store", url, "--session", session, "--model", model, "--wait", "again"
    )
    assert after.returncode == 0 and "still fine" in after.stdout


def socket_ports(pid: int) -> set[int]:
    """The local TCP ports of the process's sockets (from /proc: no library needed)."""
    import os

    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_every_connection_of_a_worker_carries_its_name(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """DBOS's, the store's and harness-worker's own: a peer that takes the worker for dead
    ends them all by that name, and with them the locks they hold."""
    runs = tmp_path / "runs"
    model = write_script(
        tmp_path / "slow.json", [{"tool_calls": [bash_call(f"touch {runs}; sleep 10")]}]
    )
    worker = Worker(url, "named", tmp_path, env={"PGAPPNAME": None})
    workers.append(worker)
    run_cli("submit", "--store", url, "--model", model, "slow")
    wait_started(runs, "the turn never started")  # mid-turn: the session's writer is open too
    ports = socket_ports(worker.process.pid)
    with psycopg.connect(server_url()) as conn:
        names = conn.execute(
            "SELECT client_port, application_name FROM pg_stat_activity "
            "WHERE client_port = ANY(%s)",
            (list(ports),),
        ).fetchall()
    assert len(names) >= 3  # the heartbeat's, DBOS's pool and listener, the turn's writer
    assert {name for _, name in names} == {f"harness-worker {schema_of(url)}/named"[:63]}


def test_sigterm_stops_a_worker_cleanly(url: str, workers: list[Worker], tmp_path: Path) -> None:
    """After a turn, SIGTERM: exit 0, the worker's row says it ended (a peer need not wait
    for its lock or heartbeat), and it left no connection behind."""
    worker = Worker(url, "t", tmp_path)
    workers.append(worker)
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    assert run_cli("submit", "--store", url, "--model", model, "--wait", "p").returncode == 0
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=60) == 0
    assert "stopping: no new turns" in worker.text()
    schema = schema_of(url)
    with psycopg.connect(server_url()) as conn:
        ended = conn.execute(
            f'SELECT ended IS NOT NULL FROM "{schema}".harness_workers WHERE id = %s', ("t",)
        ).fetchone()
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (f"harness-worker {schema}/t"[:63],),
        ).fetchone()
    assert ended == (True,) and left == (0,)


def test_a_worker_stopped_mid_call_hands_the_turn_on_after_its_grace(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """SIGTERM during `sleep 40; echo END > marker`, past the 30 s grace: the worker keeps
    beating through the grace (a peer with a 5 s lapse does not take it for dead), then
    abandons the turn, its command killed, and exits 0 saying so; the peer goes on with the
    same turn, the call answered as stopped, and the marker is never written."""
    runs, marker = tmp_path / "runs", tmp_path / "marker"
    slow = bash_call(f"echo run >> {runs}; sleep 40; echo END > {marker}")
    model = write_script(tmp_path / "slow.json", [{"tool_calls": [slow]}, {"text": "Went on."}])
    stopping = Worker(url, "stopping", tmp_path)
    workers.append(stopping)
    session = run_cli("submit", "--store", url, "--model", model, "work").stdout.split()[0]
    wait_started(runs, "the slow call never started")
    started = time.monotonic()
    stopping.process.send_signal(signal.SIGTERM)
    peer = Worker(url, "peer", tmp_path, env={"HARNESS_WORKER_LAPSE": "5"})
    workers.append(peer)
    assert stopping.process.wait(timeout=90) == 0
    assert (
        "stopped with 1 turn(s) still running after 30s: they go to the live workers"
        in stopping.text()
    )
    peer.expect("worker stopping is gone: 1 of its turns go back to the queue", timeout=30)
    deadline = time.monotonic() + 60
    while events(url, session)[-1]["type"] != "turn/end":
        assert time.monotonic() < deadline, "the turn never went on"
        time.sleep(0.2)
    log = events(url, session)
    assert log[-1]["data"]["status"] == "completed"
    [result] = [e for e in log if e["type"] == "tool/result"]
    assert "the call may have run in part or in full" in result["data"]["text"]
    assert [(e["type"], e["turn"]) for e in log if e["type"].startswith("turn/")] == [
        ("turn/start", 1),
        ("turn/end", 1),
    ]
    time.sleep(max(0.0, started + 43 - time.monotonic()))  # past the END the call would write
    assert not marker.exists() and runs.read_text() == "run\n"
    assert "Traceback" not in stopping.text()


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


def test_a_worker_refuses_a_name_an_older_worker_holds(url: str) -> None:
    """An older harness-worker holds its name by the key without the schema: a newer worker
    of that name is refused as one of this version would be."""
    name = f"older-{secrets.token_hex(4)}"  # the old key is the database's: no other test's
    older = psycopg.connect(server_url(), autocommit=True)
    try:
        older.execute("SELECT pg_advisory_lock(hashtext('harness-worker ' || %s))", (name,))
        twice = run_cli("worker", "--store", url, "--sandbox", "off", "--id", name)
    finally:
        older.close()
    assert twice.returncode == 1, twice.stderr
    assert f"worker {name} is already running (another process)" in twice.stderr


def test_a_worker_does_not_take_an_older_live_peer_for_dead(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """A peer of an older harness-worker holds the lock by the key without the schema: while
    it holds it (and beats) a newer worker leaves it be; once its process is gone, the newer
    worker marks it ended."""
    schema = schema_of(url)
    workers.append(Worker(url, "new", tmp_path, env={"HARNESS_WORKER_LAPSE": "5"}))
    name = f"older-{secrets.token_hex(4)}"  # the old key is the database's: no other test's
    older = psycopg.connect(server_url(), autocommit=True)
    older.execute("SELECT pg_advisory_lock(hashtext('harness-worker ' || %s))", (name,))

    def ended() -> bool:
        with psycopg.connect(server_url(), autocommit=True) as conn:
            conn.execute(
                f'INSERT INTO "{schema}".harness_workers (id, host, pid) VALUES (%s, %s, 1) '
                "ON CONFLICT (id) DO UPDATE SET beat = now() WHERE harness_workers.ended IS NULL",
                (name, "elsewhere"),
            )  # the older peer's heartbeat, kept fresh
            row = conn.execute(
                f'SELECT ended IS NOT NULL FROM "{schema}".harness_workers WHERE id = %s',
                (name,),
            ).fetchone()
        return bool(row and row[0])

    deadline = time.monotonic() + 6  # three of the newer worker's looks at its peers
    while time.monotonic() < deadline:
        assert not ended(), "a live older peer was taken for dead"
        time.sleep(0.5)
    older.close()  # its process is gone: the server lets its lock go
    deadline = time.monotonic() + 30
    while not ended():
        assert time.monotonic() < deadline, "a gone older peer was never marked ended"
        time.sleep(0.5)


def test_workers_of_two_stores_in_one_database_may_share_a_name(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """A worker's name is its store's: another store in the same database (its own schema)
    has a worker of the same name, both take turns, each from its own queue."""
    with a_store() as other_url:
        try:
            for number, store in enumerate((url, other_url)):
                (tmp_path / str(number)).mkdir()
                workers.append(Worker(store, "same", tmp_path / str(number)))
            model = write_script(tmp_path / "s.json", [{"text": "Done."}])
            for store in (url, other_url):
                done = run_cli("submit", "--store", store, "--model", model, "--wait", "go")
                assert done.returncode == 0, done.stderr
        finally:
            for worker in workers:
                worker.stop()  # before their store goes


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
        wait_started(runs, "the turn never started")
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
    worker, woken, finds its connection gone and leaves with one line, killing the command
    it still ran (its sandbox is off here), which never writes its marker."""
    runs, marker = tmp_path / "runs", tmp_path / "marker"
    slow = bash_call(f"echo run >> {runs}; sleep 30; echo END > {marker}")
    model = write_script(tmp_path / "slow.json", [{"tool_calls": [slow]}, {"text": "Went on."}])
    frozen = Worker(url, "frozen", tmp_path)
    workers.append(frozen)
    session = run_cli("submit", "--store", url, "--model", model, "work").stdout.split()[0]
    wait_started(runs, "the slow call never started")
    frozen.process.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
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
    assert time.monotonic() < stopped + 28, "too slow to tell whether the command was killed"
    time.sleep(max(0.0, stopped + 32 - time.monotonic()))  # past the END the call would write
    assert not marker.exists() and runs.read_text() == "run\n"


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


# -- the workspace is never a system place; a stopped worker's sandbox ends -------------------


def test_batch_refuses_a_task_cwd_in_a_system_place(url: str, tmp_path: Path) -> None:
    """A task whose cwd is /tmp is refused at validation, in one line: nothing is queued."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"prompt": "clean up", "cwd": "/tmp"}\n')
    ran = run_cli("batch", str(tasks), "--store", url)
    assert ran.returncode == 1
    assert ran.stderr.strip() == (
        f"harness: error: {tasks} line 1: the working directory /tmp cannot be the sandbox's "
        "workspace: it is /tmp, where other programs keep their files; start harness in a "
        "directory of the project (mktemp -d makes a scratch one)"
    )
    listed = run_cli("sessions", "--json", "--store", url)
    assert json.loads(listed.stdout) == []


def private_tmp_harness(tmp_path: Path) -> str:
    """A `harness` that runs in a mount namespace of its own whose /tmp and /dev/shm are
    fresh tmpfs holding canaries (read from outside through /proc/PID/root)."""
    wrapper = tmp_path / "harness-in-private-tmp"
    setup = PRIVATE_TMP.replace("$KEEP", str(tmp_path))
    body = f'{setup}\nexec {HARNESS} "$@"\n'
    wrapper.write_text(
        f"#!/bin/sh\nexec unshare --mount --propagation private sh -c '{body}' sh \"$@\"\n"
    )
    wrapper.chmod(0o755)
    return str(wrapper)


def canaries_of(worker: Worker) -> list[str]:
    root = Path(f"/proc/{worker.process.pid}/root")
    return [c for c in CANARIES if (root / c.lstrip("/")).exists()]


@needs_root
@needs_bwrap
def test_a_turn_submitted_from_tmp_runs_nothing_on_a_sandboxed_worker(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """`harness submit` from /tmp once emptied /tmp on the worker: its turn now ends as an
    error with the one line, and the worker's /tmp keeps every file."""
    model = write_script(
        tmp_path / "s.json", [{"tool_calls": [bash_call("echo ran")]}, {"text": "Done."}]
    )
    harness = private_tmp_harness(tmp_path)
    worker = Worker(url, "w", tmp_path, "--sandbox", "workspace", harness=harness)
    workers.append(worker)
    assert canaries_of(worker) == CANARIES
    ran = run_cli("submit", "--store", url, "--model", model, "--wait", "go", cwd=Path("/tmp"))
    assert ran.returncode == 1
    assert "the working directory /tmp cannot be the sandbox's workspace" in ran.stdout + ran.stderr
    assert canaries_of(worker) == CANARIES
    assert "ran" not in ran.stdout


@needs_bwrap
def test_a_stopped_workers_command_ends_before_a_peer_takes_its_turn(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """SIGSTOP a worker during `sleep 12; echo END > marker`: its sandbox ends itself within
    half the lapse, a peer takes the turn after it, and the marker is never written; the
    model reads that the call may have run in part or in full."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = workspace / "marker"
    slow = bash_call(f"touch started; sleep 12; echo END > {marker}")
    model = write_script(tmp_path / "slow.json", [{"tool_calls": [slow]}, {"text": "Went on."}])
    lapse = {"HARNESS_WORKER_LAPSE": "5"}
    frozen = Worker(url, "frozen", tmp_path, "--sandbox", "workspace", env=lapse)
    workers.append(frozen)
    queued = run_cli("submit", "--store", url, "--model", model, "work", cwd=workspace)
    session = queued.stdout.split()[0]
    deadline = time.monotonic() + 60
    while not (workspace / "started").exists():
        assert time.monotonic() < deadline, "the slow call never started"
        time.sleep(0.1)
    frozen.process.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    peer = Worker(url, "peer", tmp_path, "--sandbox", "workspace", env=lapse)
    workers.append(peer)
    peer.expect("worker frozen is gone: 1 of its turns go back to the queue", timeout=60)
    deadline = time.monotonic() + 60
    while events(url, session)[-1]["type"] != "turn/end":
        assert time.monotonic() < deadline, "the turn never went on"
        time.sleep(0.2)
    time.sleep(max(0.0, stopped + 15 - time.monotonic()))  # past the END the call would write
    assert not marker.exists()
    [result] = [e for e in events(url, session) if e["type"] == "tool/result"]
    assert "the call may have run in part or in full" in result["data"]["text"]
    frozen.process.send_signal(signal.SIGCONT)
