"""Batch samples in workspaces of their own, a line's `system`, and `harness batch retry`:
real workers (bubblewrap sandbox, --checks) on a real PostgreSQL, real git, real files."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from harness_core.loop import DEFAULT_SYSTEM_PROMPT
from test_cli_support import bash_call, run_cli, write_script
from test_worker_cli import (
    Worker,
    enqueue_raw,
    events,
    tables_in,
    url,
    workers,
    workflow_status,
)

pytestmark = pytest.mark.slow  # real processes for seconds each: run first

__all__ = ["url", "workers"]  # the fixtures, used by name

# Each sample leaves a file of its own, named at random, and lists what it sees.
MARK = 'touch "mine-$(cat /proc/sys/kernel/random/uuid)"; ls -A > seen'
ALONE = 'test "$(ls -A | grep -c "^mine-")" = 1 && test -f base.txt'


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def template_repo(path: Path) -> Path:
    """A git repository: base.txt committed, draft.txt not."""
    path.mkdir()
    git(path, "init", "--quiet")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    (path / "base.txt").write_text("committed\n")
    git(path, "add", "base.txt")
    git(path, "commit", "--quiet", "-m", "base")
    (path / "draft.txt").write_text("not committed\n")
    return path


def queue(url: str, tmp_path: Path, lines: list[dict[str, Any]], *flags: str) -> str:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ran = run_cli("batch", str(tasks), "--store", url, *flags, env=tmp_env(tmp_path))
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()[0].removeprefix("batch ")


def tmp_env(tmp_path: Path) -> dict[str, str]:
    """The batch's copies go under the test's own directory (TMPDIR as it is queued)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return {"TMPDIR": str(scratch)}


def copies_root(tmp_path: Path) -> Path:
    return tmp_path / "scratch" / f"harness-workspaces-{os.getuid()}"


def report(url: str, batch: str) -> dict[str, Any]:
    status = run_cli("batch", "status", batch, "--json", "--store", url)
    assert status.returncode == 0, status.stderr
    result: dict[str, Any] = json.loads(status.stdout)
    return result


def wait_until_ended(url: str, batch: str, count: int, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        shown = report(url, batch)
        ended = [t for t in shown["tasks"] if t["status"] not in ("queued", "running")]
        if len(ended) >= count:
            return shown
        assert time.monotonic() < deadline, shown
        time.sleep(0.5)


def checking_workers(url: str, tmp_path: Path, workers: list[Worker]) -> None:
    flags = ("--sandbox", "workspace", "--checks", "--concurrency", "2")
    workers.extend([Worker(url, "w1", tmp_path, *flags), Worker(url, "w2", tmp_path, *flags)])


def test_two_samples_of_one_task_never_see_each_others_files(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """A directory template and a git one, --repeat 2 on two workers, --keep: each sample
    runs and is checked in a copy of its own (its check sees its own file, never the other
    sample's), the git copy is the commit HEAD named when the batch was queued, with no
    remote back to the template, and status says where each kept copy is."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "base.txt").write_text("tree\n")
    (tree / "link").symlink_to("base.txt")
    repo = template_repo(tmp_path / "repo")
    model = write_script(tmp_path / "m.json", [{"tool_calls": [bash_call(MARK)]}, {"text": "ok"}])
    git_check = f'{ALONE} && ! test -e draft.txt && ! test -e later.txt && test -z "$(git remote)"'
    lines = [
        {"prompt": "mark", "task": "t", "variant": "tree", "workspace": str(tree), "check": ALONE},
        {
            "prompt": "mark",
            "task": "t",
            "variant": "git",
            "workspace": str(repo),
            "check": git_check,
        },
    ]
    batch = queue(
        url, tmp_path, [{**line, "model": model} for line in lines], "--repeat", "2", "--keep"
    )
    # HEAD moves after the batch was queued: the samples still copy the commit it named.
    (repo / "later.txt").write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "--quiet", "-m", "later")
    checking_workers(url, tmp_path, workers)
    shown = wait_until_ended(url, batch, 4)
    assert [(t["variant"], t["status"], t["check"]) for t in shown["tasks"]] == [
        ("tree", "completed", "passed"),
        ("tree", "completed", "passed"),
        ("git", "completed", "passed"),
        ("git", "completed", "passed"),
    ]
    assert set(shown["tasks"][0]) == {
        "session", "task", "repeat", "variant", "status", "check", "steps", "tokens",
        "seconds", "plan_used",
    }  # fmt: skip
    copies = []
    for task in shown["tasks"]:
        [start] = [e for e in events(url, task["session"]) if e["type"] == "session/start"]
        copy = Path(start["data"]["cwd"])
        assert copy.parent == copies_root(tmp_path) / batch
        mine = sorted(p.name for p in copy.iterdir() if p.name.startswith("mine-"))
        assert len(mine) == 1
        assert (copy / "seen").read_text().count("mine-") == 1  # the turn saw only its own
        copies.append(copy)
    assert len(set(copies)) == 4
    assert (copies[0] / "link").is_symlink() and (copies[0] / "link").read_text() == "tree\n"
    assert git(copies[2], "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD~1")
    # The templates are as they were: no sample wrote into them.
    assert sorted(p.name for p in tree.iterdir()) == ["base.txt", "link"]
    assert sorted(p.name for p in repo.iterdir()) == [".git", "base.txt", "draft.txt", "later.txt"]
    assert git(repo, "worktree", "list").count("\n") == 0
    text = run_cli("batch", "status", batch, "--store", url).stdout
    assert "4 workspace copies kept, each where its session ran:" in text
    for task, copy in zip(shown["tasks"], copies, strict=True):
        assert f"  {task['session']}  {copy}" in text


def test_copies_go_after_the_check_and_system_reaches_the_prompt(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """Without --keep each copy is removed once its check ran (and the batch's directory
    with the last); a line's `system` is appended to the session's system prompt, which the
    model is sent and the log records."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "base.txt").write_text("tree\n")
    # The sample takes away its own write bits: the copy still goes, and nothing else does.
    lock = "mkdir -p locked/deep && touch locked/deep/f && chmod 0500 locked/deep locked sub"
    model = write_script(tmp_path / "m.json", [{"tool_calls": [bash_call(lock)]}, {"text": "ok"}])
    line = {"prompt": "go", "model": model, "workspace": str(tree), "check": "test -d locked"}
    batch = queue(url, tmp_path, [{**line, "system": "Plan in your text first."}, line])
    checking_workers(url, tmp_path, workers)
    shown = wait_until_ended(url, batch, 2)
    assert [(t["status"], t["check"]) for t in shown["tasks"]] == [("completed", "passed")] * 2
    assert not (copies_root(tmp_path) / batch).exists()
    assert copies_root(tmp_path).is_dir()
    assert sorted(p.name for p in tree.iterdir()) == ["base.txt", "sub"]
    prompts = []
    for task in shown["tasks"]:
        [start] = [e for e in events(url, task["session"]) if e["type"] == "session/start"]
        prompts.append(start["data"]["system_prompt"])
    assert prompts == [
        f"{DEFAULT_SYSTEM_PROMPT}\n\nPlan in your text first.",
        DEFAULT_SYSTEM_PROMPT,
    ]
    text = run_cli("batch", "status", batch, "--store", url).stdout
    assert "kept" not in text


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (
            {"workspace": "TREE", "cwd": "TREE"},
            '"workspace" and "cwd" do not go together: a workspace is copied for every '
            "sample, a cwd is used in place; give one",
        ),
        ({"workspace": "/nowhere/at/all"}, "\"workspace\": '/nowhere/at/all' is not a directory"),
        ({"workspace": "/etc"}, "the working directory /etc cannot be the sandbox's workspace"),
        ({"workspace": "EMPTY"}, '"workspace": EMPTY is a git repository without a commit'),
        ({"system": " "}, '"system": must not be empty'),
    ],
    ids=["both", "missing", "system-place", "no-commit", "blank-system"],
)
def test_a_bad_workspace_or_system_queues_nothing(
    url: str, tmp_path: Path, line: dict[str, Any], error: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "--quiet")
    fill = {"TREE": str(tree), "EMPTY": str(empty)}
    line = {k: fill.get(v, v) for k, v in line.items()}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"prompt": "fine"}) + "\n" + json.dumps({"prompt": "p", **line}))
    before = tables_in(url)
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    ran = run_cli("batch", str(tasks), "--store", url, "--model", model, env=tmp_env(tmp_path))
    assert ran.returncode == 1
    [shown] = ran.stderr.strip().splitlines()
    expected = error.replace("EMPTY", str(empty))
    assert shown.startswith(f"harness: error: {tasks} line 2: {expected}"), shown
    assert json.loads(run_cli("sessions", "--json", "--store", url).stdout) == []
    assert tables_in(url) == before


def cancel_queued(url: str, batch: str, position: int) -> None:
    """Cancel a sample's workflow before any worker took it, through DBOS's own client."""
    from harness_worker import _engine

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT workflow_id FROM harness_tasks WHERE batch = %s AND position = %s",
            (batch, position),
        ).fetchone()
    assert row is not None
    client = _engine.client(url)
    try:
        client.cancel_workflow(row[0])
    finally:
        client.destroy()


def test_retry_reruns_only_what_did_not_complete(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """Four samples: one passes its check, one fails it, one's turn errs (its model's script
    is gone when the worker runs it), one's workflow is cancelled before any worker takes it
    (lost for good). retry queues the last two again, as new sessions in their rows, and
    leaves the failed check alone; once it ran, a second retry finds nothing to do."""
    good = write_script(tmp_path / "good.json", [{"text": "ok"}])
    flaky = tmp_path / "flaky.json"
    lines = [
        {"prompt": "pass", "task": "pass", "model": good, "check": "true"},
        {"prompt": "fail", "task": "fail", "model": good, "check": "false"},
        {"prompt": "err", "task": "err", "model": f"scripted:{flaky}", "check": "true"},
        {"prompt": "lost", "task": "lost", "model": good, "check": "true"},
    ]
    write_script(flaky, [{"text": "ok"}])
    batch = queue(url, tmp_path, lines)
    flaky.unlink()
    cancel_queued(url, batch, 3)
    checking_workers(url, tmp_path, workers)
    first = wait_until_ended(url, batch, 3)
    assert [(t["task"], t["status"], t["check"]) for t in first["tasks"]] == [
        ("pass", "completed", "passed"),
        ("fail", "completed", "failed"),
        ("err", "error", None),
        ("lost", "queued", None),
    ]
    write_script(flaky, [{"text": "ok"}])
    again = run_cli("batch", "retry", batch, "--wait", "--store", url, timeout=180)
    assert again.returncode == 0, again.stderr
    out = again.stdout.splitlines()
    assert out[0] == (
        f"batch {batch}: queued 2 samples again, each a new session in place of one whose "
        "turn did not complete"
    )
    old = [t["session"] for t in first["tasks"]]
    after = report(url, batch)
    new = [t["session"] for t in after["tasks"]]
    assert out[1] == f"  err · default · repeat 0: {old[2]} (error) -> {new[2]}"
    assert out[2] == f"  lost · default · repeat 0: {old[3]} (queued) -> {new[3]}"
    assert new[:2] == old[:2] and len(set(new + old)) == 6
    assert [(t["task"], t["status"], t["check"]) for t in after["tasks"]] == [
        ("pass", "completed", "passed"),
        ("fail", "completed", "failed"),
        ("err", "completed", "passed"),
        ("lost", "completed", "passed"),
    ]
    assert after["counts"] == {"queued": 0, "running": 0, "done": 4, "failed": 0, "passed": 3}
    # The old session of the sample that erred stays in the store, its error in its log.
    [end] = [e for e in events(url, old[2]) if e["type"] == "turn/end"] or [None]
    assert end is None or end["data"]["status"] == "error"
    nothing = run_cli("batch", "retry", batch, "--store", url)
    assert (nothing.returncode, nothing.stdout) == (
        0,
        f"batch {batch}: queued 0 samples again: every turn completed, or is queued or running\n",
    )
    unknown = run_cli("batch", "retry", "20260101-000000-abcdef", "--store", url)
    assert unknown.returncode == 1 and unknown.stdout == ""
    [line] = unknown.stderr.strip().splitlines()
    assert line.startswith("harness: error: no batch 20260101-000000-abcdef in ")


def test_a_queued_workspace_job_never_removes_what_the_worker_did_not_make(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    """Whoever writes the queue chooses a job's paths. A job whose copy is a user's
    directory, or sits under a `harness-workspaces-UID` that others can write or that is a
    link to a user's directory, ends as an error naming why, and every file there stays."""
    worker = Worker(url, "careful", tmp_path)
    workers.append(worker)
    model = write_script(tmp_path / "t.json", [{"text": "ok"}])
    template = tmp_path / "template"
    template.mkdir()
    victim = tmp_path / "victim"
    (victim / "b" / "3-abcdef").mkdir(parents=True)
    canaries = [victim / "keep.txt", victim / "b" / "3-abcdef" / "keep.txt"]
    shared = tmp_path / "shared" / f"harness-workspaces-{os.getuid()}"
    (shared / "b" / "3-abcdef").mkdir(parents=True)
    canaries.append(shared / "b" / "3-abcdef" / "keep.txt")
    for canary in canaries:
        canary.write_text("mine\n")
    shared.chmod(0o777)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / f"harness-workspaces-{os.getuid()}").symlink_to(victim)
    cases = {  # the copy the job names, and why the worker refuses it
        "user": (victim, "is not a place for a batch's workspace copy"),
        "shared": (shared / "b" / "3-abcdef", "is not a directory of this user's that only"),
        "link": (
            linked / f"harness-workspaces-{os.getuid()}" / "b" / "3-abcdef",
            "the session's directory is not its copy",  # its session runs where the link leads
        ),
    }
    for name, (copy, _) in cases.items():
        # A session whose directory is the copy, as `harness batch` would have made it.
        made = run_cli("submit", "--store", url, "--model", model, "--wait", "hi", cwd=copy)
        assert made.returncode == 0, made.stderr
        session = made.stdout.split()[0]
        job = {"session": session, "prompt": "p", "batch": "b", "position": 3}
        job |= {"workspace": str(template), "cwd": str(copy)}
        enqueue_raw(url, "harness_turn", json.dumps(job), f"{session}/{name}")
        deadline = time.monotonic() + 120
        while (state := workflow_status(url, f"{session}/{name}"))[0] != "SUCCESS":
            assert time.monotonic() < deadline, state
            time.sleep(0.5)
        result = json.loads(state[1] or "{}")
        assert result["status"] == "error" and cases[name][1] in result["error"], result
    for canary in canaries:
        assert canary.read_text() == "mine\n"
    assert "Traceback" not in worker.text()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["retry"], "name the batch: harness batch retry ID [--wait]"),
        (["retry", "B", "--keep"], "--keep goes with a file: harness batch FILE.jsonl --keep"),
        (["status", "B", "--keep"], "--keep goes with a file: harness batch FILE.jsonl --keep"),
        (["retry", "B", "--json"], "--json goes with status: harness batch status ID --json"),
        (
            ["retry", "B", "--html", "r.html"],
            "--html goes with status: harness batch status ID --html FILE",
        ),
    ],
    ids=["no-id", "retry-keep", "status-keep", "retry-json", "retry-html"],
)
def test_retry_and_keep_go_where_they_mean_something(
    tmp_path: Path, args: list[str], error: str
) -> None:
    refused = run_cli("batch", *args, "--store", f"file://{tmp_path}")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.strip() == f"harness: error: {error}"
