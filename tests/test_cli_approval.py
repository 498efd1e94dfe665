"""Approval on the command line: the terminal asks inline, --approval / HARNESS_APPROVAL /
config choose the policy, and every decision is on the log before the call runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness_core.hosts import visible
from hypothesis import given
from hypothesis import strategies as st
from test_cli_support import (
    Terminal,
    bash_call,
    one_error_line,
    read_events,
    run_cli,
    session_ids,
    write_script,
)

DENIED_BY_USER = "Error: bash was denied: the user refused it"


def touch_script(tmp_path: Path, marker: Path, name: str = "s.json") -> str:
    """A script that touches `marker` (in tmp_path, the working directory the tests run
    harness in: the workspace sandbox lets bash write there)."""
    steps = [{"tool_calls": [bash_call(f"touch {marker.name}")]}, {"text": "ok"}]
    return write_script(tmp_path / name, steps)


def terminal(tmp_path: Path, *args: str, env: dict[str, str | None] | None = None) -> Terminal:
    """`harness ARGS` on a terminal wide enough that no question line wraps."""
    return Terminal(*args, env=env, cwd=tmp_path, columns=200)


def approvals(home: Path, session: str) -> list[dict[str, Any]]:
    return [e["data"] for e in read_events(home, session) if e["type"] == "tool/approval"]


def results(home: Path, session: str) -> list[str]:
    return [e["data"]["text"] for e in read_events(home, session) if e["type"] == "tool/result"]


def test_a_terminal_asks_by_default_and_no_refuses_the_call(
    tmp_path: Path, harness_home: Path
) -> None:
    """No flag, no setting, on a terminal: the call's command is shown and `n` refuses it;
    the model reads the refusal and the turn completes."""
    marker = tmp_path / "ran"
    term = terminal(
        tmp_path,
        "run",
        "--model",
        touch_script(tmp_path, marker),
        "go",
        env={"HARNESS_APPROVAL": None},
    )
    term.expect("Allow? [y] yes, once")
    assert "harness: bash wants to run: $ touch ran" in term.text
    term.send(b"n\r")
    assert term.wait() == 0, term.text
    assert not marker.exists()
    [session] = session_ids(harness_home)
    assert results(harness_home, session) == [DENIED_BY_USER]
    assert approvals(harness_home, session) == [
        {"call_id": "call_1_1", "decision": "deny", "by": "user", "scope": "once"}
    ]


def test_allow_for_the_session_is_remembered_by_the_next_run(
    tmp_path: Path, harness_home: Path
) -> None:
    """`a` runs the call and every later bash call of the session, also in a new process."""
    first, second = tmp_path / "one", tmp_path / "two"
    term = terminal(
        tmp_path, "run", "--approval", "ask", "--model", touch_script(tmp_path, first), "go"
    )
    term.expect("Allow? [y] yes, once")
    term.send(b"a\r")
    assert term.wait() == 0, term.text
    [session] = session_ids(harness_home)
    again = terminal(tmp_path, "run", "--approval", "ask", "--session", session,
        "--model", touch_script(tmp_path, second, "t.json"), "again",
    )  # fmt: skip
    assert again.wait() == 0, again.text
    assert "Allow?" not in again.text
    assert first.exists() and second.exists()
    assert [(a["by"], a["scope"]) for a in approvals(harness_home, session)] == [
        ("user", "session"),
        ("user", "session"),
    ]


def asked_about(tmp_path: Path, command: str) -> Terminal:
    """`harness run --approval ask` with a model that runs `command`, at its question."""
    steps = [{"tool_calls": [bash_call(command)]}, {"text": "ok"}]
    model = write_script(tmp_path / "s.json", steps)
    term = terminal(tmp_path, "run", "--approval", "ask", "--model", model, "go")
    term.expect("Allow? [y] yes, once")
    return term


def test_a_multi_line_command_is_shown_whole_before_it_is_allowed(
    tmp_path: Path, harness_home: Path
) -> None:
    """The one-line label shows the first line; the question shows every line, and `y` runs
    it once."""
    marker = tmp_path / "ran"
    command = "echo first\ntouch ran"
    term = asked_about(tmp_path, command)
    assert "  touch ran" in term.lines
    term.send(b"y\r")
    assert term.wait() == 0, term.text
    assert marker.exists()
    [session] = session_ids(harness_home)
    assert approvals(harness_home, session)[0]["scope"] == "once"


def test_a_bidi_override_in_the_command_is_shown_escaped_in_the_question(
    tmp_path: Path, harness_home: Path
) -> None:
    """U+202E would draw `; touch ran` reversed, inside what looks like a comment: the
    question shows it as `\\u202e`, never the character itself, and says what the escape is."""
    marker = tmp_path / "ran"
    command = "echo safe #\u202e; touch ran\necho \u2066done\u2069"
    term = asked_about(tmp_path, command)
    assert "harness: bash wants to run: $ echo safe #\\u202e; touch ran" in term.lines
    assert "  echo \\u2066done\\u2069" in term.lines
    assert "shown as \\uXXXX; \\\\ is one backslash)" in term.text
    shown = term.raw.decode()
    assert not any(char in shown for char in "\u202e\u2066\u2069")
    term.send(b"n\r")
    assert term.wait() == 0, term.text
    assert not marker.exists()


ESCAPE = re.compile(r"\\(\\|u[0-9a-f]{4}|U[0-9a-f]{8})")


def read_back(shown: str) -> str:
    """The text `visible` showed: each escape (and doubled backslash) as its character."""
    return ESCAPE.sub(lambda m: "\\" if m[1] == "\\" else chr(int(m[1][1:], 16)), shown)


# Pieces that make the property bite: hidden characters, and escapes spelled out in plain text.
PIECES = st.sampled_from(["\\", "\\u202e", "\u202e", "\u2066", "\u200b", "\U000e0041", "\u3164"])


@given(st.lists(PIECES | st.text(), max_size=8).map("".join))
def test_visible_shows_nothing_hidden_and_reads_back_as_the_text(text: str) -> None:
    """Whatever the text, what `visible` shows has only printable characters (and newlines,
    tabs), and reads back as exactly that text: a spelled-out `\\u202e` never passes for
    U+202E. A text with nothing hidden is shown as it is."""
    shown = visible(text)
    assert all(char.isprintable() or char in "\n\t" for char in shown)
    assert "\u3164" not in shown
    assert shown == text or read_back(shown) == text


def test_ctrl_c_at_the_question_cancels_the_turn(tmp_path: Path, harness_home: Path) -> None:
    """Ctrl-C while asked: nothing runs, the call is answered interrupted, the turn ends
    cancelled and harness exits 130."""
    marker = tmp_path / "ran"
    term = terminal(
        tmp_path, "run", "--approval", "ask", "--model", touch_script(tmp_path, marker), "go"
    )
    term.expect("Allow? [y] yes, once")
    term.send(b"\x03")
    assert term.wait() == 130, term.text
    assert not marker.exists()
    [session] = session_ids(harness_home)
    events = read_events(harness_home, session)
    assert approvals(harness_home, session) == []
    assert results(harness_home, session)[0].startswith("Error: the tool call was interrupted")
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["status"] == "cancelled"


def test_ask_without_a_terminal_says_so_once_and_refuses(
    tmp_path: Path, harness_home: Path
) -> None:
    """--approval ask with stdin a pipe: one warning line, and each call is refused with a
    reason that tells the model (and the user) how to allow it."""
    marker = tmp_path / "ran"
    steps = [
        {"tool_calls": [bash_call("touch ran"), bash_call("touch ran")]},
        {"text": "ok"},
    ]
    result = run_cli(
        "run", "--approval", "ask", "--model", write_script(tmp_path / "s.json", steps), "go",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "nobody can be asked" in line]
    assert len(warnings) == 1 and warnings[0].startswith("harness: warning: ")
    assert not marker.exists()
    [session] = session_ids(harness_home)
    assert all("--approval auto" in text for text in results(harness_home, session))
    assert [a["by"] for a in approvals(harness_home, session)] == ["policy", "policy"]


def test_the_flag_wins_over_the_environment_which_wins_over_the_config(
    tmp_path: Path, harness_home: Path
) -> None:
    """config deny < HARNESS_APPROVAL auto < --approval deny, each visible on the log."""
    harness_home.mkdir()
    (harness_home / "config.toml").write_text('approval = "deny"\n')
    marker = tmp_path / "ran"
    model = touch_script(tmp_path, marker)
    assert run_cli("run", "--model", model, "config", cwd=tmp_path).returncode == 0
    auto = {"HARNESS_APPROVAL": "auto"}
    assert run_cli("run", "--model", model, "env", env=auto, cwd=tmp_path).returncode == 0
    assert marker.exists()
    marker.unlink()
    flag = run_cli("run", "--approval", "deny", "--model", model, "flag", env=auto, cwd=tmp_path)
    assert flag.returncode == 0
    assert not marker.exists()
    decided = [approvals(harness_home, s)[0]["decision"] for s in session_ids(harness_home)]
    assert decided == ["deny", "allow", "deny"]


def test_a_bad_approval_setting_is_one_clear_error(tmp_path: Path, harness_home: Path) -> None:
    """A misspelt policy names the setting and the values it takes; no session is made."""
    marker = tmp_path / "ran"
    bad = run_cli(
        "run",
        "--model",
        touch_script(tmp_path, marker),
        "go",
        env={"HARNESS_APPROVAL": "sometimes"},
    )
    assert "approval (or HARNESS_APPROVAL) must be ask, auto or deny" in one_error_line(bad)
    assert session_ids(harness_home) == []


def test_show_says_who_allowed_each_call(tmp_path: Path, harness_home: Path) -> None:
    """The transcript names a person's approval on the call's line, and a refusal by its
    error text."""
    marker = tmp_path / "ran"
    term = terminal(
        tmp_path, "run", "--approval", "ask", "--model", touch_script(tmp_path, marker), "go"
    )
    term.expect("Allow? [y] yes, once")
    term.send(b"a\r")
    assert term.wait() == 0, term.text
    assert "✓ $ touch ran  exit 0  (allowed by the user for this session)" in term.text
    model = touch_script(tmp_path, marker, "t.json")
    assert (
        run_cli("run", "--approval", "deny", "--model", model, "go", cwd=tmp_path).returncode == 0
    )
    allowed, denied = session_ids(harness_home)
    assert "(allowed by the user for this session)" in run_cli("show", allowed).stdout
    refused = run_cli("show", denied).stdout
    assert "✗ $ touch" in refused and "bash was denied: the approval policy is deny" in refused


def test_chat_asks_inline_and_the_answer_stays_out_of_the_prompt_history(
    tmp_path: Path, harness_home: Path
) -> None:
    """In chat the question comes between prompts; `y` runs the call, the next prompt works,
    and the answer is not a line of the chat history."""
    marker = tmp_path / "ran"
    model = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [bash_call("touch ran")]}, {"text": "Touched."}, {"text": "Second."}],
    )
    term = terminal(tmp_path, "chat", "--approval", "ask", "--model", model)
    term.expect("Ctrl-D or exit leaves")
    term.send(b"touch it\r")
    term.expect("Allow? [y] yes, once")
    term.send(b"y\r")
    term.expect(lambda t: t.lines[t.row_of("Touched.") + 1] == "›")
    term.send(b"again\r")
    term.expect(lambda t: t.lines[t.row_of("Second.") + 1] == "›")
    term.send(b"exit\r")
    assert term.wait(timeout=20) == 0, term.text
    assert marker.exists()
    history = (harness_home / "chat_history").read_text().splitlines()
    assert history[-3:] == ["touch it", "again", "exit"]
