"""`harness chat`: a prompt loop on one session; Ctrl-C cancels a turn, Ctrl-D leaves."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness_core.testing.pytest_plugin import FakeDistribution
from test_cli_support import (
    Terminal,
    bash_call,
    one_error_line,
    read_events,
    run_cli,
    session_ids,
    todo_call,
    write_script,
)


def wait_for(terminal: Terminal, condition: Callable[[], bool], timeout: float = 30) -> None:
    """Poll `condition`, which the program makes true without printing (no output to expect)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            terminal.kill()
            raise AssertionError(f"the condition never held; the screen:\n{terminal.text}")
        time.sleep(0.01)


def test_piped_chat_runs_one_turn_a_line_on_one_session(tmp_path: Path, harness_home: Path) -> None:
    """Each input line is a turn of the same session; `exit` leaves before later lines."""
    steps = [
        {"tool_calls": [todo_call(("Answer", "in_progress"))]},
        {"text": "First answer."},
        {"text": "Second answer."},
    ]
    result = run_cli(
        "chat",
        "--model",
        write_script(tmp_path / "s.json", steps),
        input="one\n\ntwo\nexit\nthree\n",
    )
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    assert result.stdout.splitlines() == [
        "› one",
        "Plan · 0/1 done",
        "  ▶ Answer",
        "✓ todo_write  Plan 0/1 done · now: Answer",
        "First answer.",
        "› two",
        "Second answer.",
        f"session {session} · continue it: harness chat --session {session}",
    ]
    starts = [e["turn"] for e in read_events(harness_home, session) if e["type"] == "turn/start"]
    assert starts == [1, 2]


def test_chat_session_resumes_with_the_standing_plan(tmp_path: Path, harness_home: Path) -> None:
    """chat --session continues a session, showing the plan it stands on first."""
    first = [{"tool_calls": [todo_call(("Keep going", "in_progress"))]}, {"text": "ok"}]
    assert (
        run_cli("run", "--model", write_script(tmp_path / "1.json", first), "start").returncode == 0
    )
    (session,) = session_ids(harness_home)
    model = write_script(tmp_path / "2.json", [{"text": "resumed"}])
    result = run_cli("chat", "--session", session, "--model", model, input="go on\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:4] == [
        "Plan · 0/1 done (standing, from the last turn)",
        "  ▶ Keep going",
        "› go on",
        "resumed",
    ]


def test_a_failed_turn_is_reported_and_the_chat_exits_non_zero(tmp_path: Path) -> None:
    """A turn ending in error is shown in the transcript; the exit status says so."""
    model = write_script(tmp_path / "s.json", [{"text": "only one"}])
    result = run_cli("chat", "--model", model, input="a\nb\n")
    assert "1 of 2 turns ended with an error" in one_error_line(result)
    assert "turn ended: error: " in result.stdout


def test_ctrl_c_cancels_the_running_turn_and_the_chat_goes_on(
    tmp_path: Path, harness_home: Path
) -> None:
    """On a terminal: Ctrl-C stops a long tool call; the next prompt runs; Ctrl-D leaves."""
    steps = [
        {"tool_calls": [bash_call("touch started; sleep 60")]},
        {"text": "After the cancel."},
    ]
    model = write_script(tmp_path / "s.json", steps)
    terminal = Terminal("chat", "--model", model, cwd=tmp_path)
    terminal.expect("Ctrl-D or exit leaves")
    terminal.send(b"slow one\r")
    terminal.expect("⋯ $ touch started; sleep 60")
    # The row shows when the model asks for the call; the file, once bash runs, so the Ctrl-C
    # lands on a running command (as a person's would), not on its fork. It is in the
    # session's workspace, which the sandbox shows.
    wait_for(terminal, lambda: (tmp_path / "started").exists())
    terminal.send(b"\x03")
    terminal.expect(lambda t: t.lines[t.row_of("turn cancelled") + 1] == "›", timeout=10)
    terminal.send(b"next\r")
    terminal.expect(lambda t: t.lines[t.row_of("After the cancel.") + 1] == "›")
    terminal.send(b"\x04")  # only once the prompt is back: a terminal drops an early Ctrl-D
    assert terminal.wait(timeout=20) == 0, terminal.text
    assert terminal.row_of("✗ $ touch started; sleep 60") < terminal.row_of("turn cancelled")
    (session,) = session_ids(harness_home)
    ends = [
        e["data"]["status"] for e in read_events(harness_home, session) if e["type"] == "turn/end"
    ]
    assert ends == ["cancelled", "completed"]
    history = (harness_home / "chat_history").read_text().splitlines()
    assert history[-2:] == ["slow one", "next"]  # readline history, kept for the next chat


@pytest.mark.parametrize("sigint", ["default", "ignored", "blocked"])
def test_ctrl_c_at_the_prompt_clears_the_line_and_keeps_the_chat(
    sigint: str, tmp_path: Path
) -> None:
    """Ctrl-C with no turn running abandons the typed line; `exit` then leaves cleanly. Also
    in a harness started with SIGINT ignored or blocked, which a process inherits."""
    model = write_script(tmp_path / "s.json", [{"text": "Only this."}])
    with inherited_sigint(sigint):
        terminal = Terminal("chat", "--model", model)
    terminal.expect("Ctrl-D or exit leaves")
    # Type only once the prompt is drawn: input() is reading then, as a person would see.
    terminal.expect(lambda t: t.lines[t.row_of("Ctrl-D or exit leaves") + 1].startswith("›"))
    terminal.send(b"never sent")
    terminal.expect("never sent")
    terminal.wait_reading()  # the Ctrl-C of a person, who does not press it mid-echo
    terminal.send(b"\x03")
    terminal.expect(lambda t: t.lines[t.row_of("never sent") + 1] == "›")  # a fresh prompt
    terminal.send(b"real\r")
    terminal.expect(lambda t: t.lines[t.row_of("Only this.") + 1] == "›")
    terminal.send(b"exit\r")
    assert terminal.wait(timeout=20) == 0, terminal.text
    assert "› real" in terminal.text


@contextlib.contextmanager
def inherited_sigint(how: str) -> Iterator[None]:
    """SIGINT ignored or blocked in this process while a child starts: the child inherits it."""
    if how == "ignored":
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
    elif how == "blocked":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    else:
        yield


WITNESS = """
import json, os
from harness_core.plugins import hookimpl

name = "witness"

@hookimpl
def harness_event_appended(session, event):
    with open(os.environ["WITNESS_FILE"], "a") as out:
        out.write(json.dumps([session.session_id, event.seq]) + "\\n")
"""


@pytest.mark.parametrize("command", ["run", "chat"])
def test_plugin_observers_see_every_event_whichever_host_writes(
    command: str, tmp_path: Path, harness_home: Path, fake_distribution: FakeDistribution
) -> None:
    """harness_event_appended gets each event of each session once, session/start included."""
    info = fake_distribution(
        "witness-plugin", {"witness": "witness_plugin"}, {"witness_plugin.py": WITNESS}
    )
    witness = tmp_path / "seen.jsonl"
    steps = [
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "Say done."}}]},
        {"text": "done"},
        {"text": "The subagent is done."},
    ]
    model = write_script(tmp_path / "s.json", steps)
    env = {"PYTHONPATH": str(info.parent), "WITNESS_FILE": str(witness)}
    args = ["--model", model, *(["go"] if command == "run" else [])]
    result = run_cli(command, *args, env=env, input="go\n")
    assert result.returncode == 0, result.stderr
    seen = [tuple(json.loads(line)) for line in witness.read_text().splitlines()]
    appended = [
        (session, event["seq"])
        for session in session_ids(harness_home)
        for event in read_events(harness_home, session)
    ]
    assert len(appended) > 10 and sorted(seen) == sorted(appended)
