"""`harness compact ID` and `/compact` in `harness chat`: one line, the summary on the log."""

from __future__ import annotations

import json
from pathlib import Path

from harness_core.testing.openai_server import OpenAIServer, reply, tool_call
from test_cli_support import (
    bash_call,
    one_error_line,
    read_events,
    run_cli,
    session_ids,
    todo_call,
    write_script,
)

SUMMARY_HEADER = "[The earlier part of this session was compacted into this summary.]"


def _session(tmp_path: Path, home: Path) -> str:
    """A finished session with an unfinished plan and a bash call: something to compact."""
    steps = [
        {"tool_calls": [todo_call(("Look around", "completed"), ("Report", "in_progress"))]},
        {"tool_calls": [bash_call("echo hello")]},
        {"tool_calls": [bash_call("echo world")]},
        {"tool_calls": [bash_call("ls")]},
        {"text": "Looked around."},
    ]
    result = run_cli("run", "--model", write_script(tmp_path / "run.json", steps), "Look.")
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(home)
    return session


def test_compact_prints_one_line_and_the_summary_leads_the_next_request(
    tmp_path: Path, harness_home: Path
) -> None:
    """The scripted model's next text step is the summary; `show --json` sends it, plan after."""
    session = _session(tmp_path, harness_home)
    script = write_script(tmp_path / "sum.json", [{"text": "We looked around."}])
    result = run_cli("compact", session, "--model", script)
    assert result.returncode == 0, result.stderr
    (compaction,) = [
        e for e in read_events(harness_home, session) if e["type"] == "context/compact"
    ]
    summarized = compaction["data"]["last_seq"] - compaction["data"]["first_seq"] + 1
    assert result.stdout == f"context compacted: {summarized} events summarized\n"
    assert compaction["data"]["summary"] == "We looked around."
    shown = json.loads(run_cli("show", session, "--json").stdout)
    assert shown[1]["role"] == "user"
    assert shown[1]["content"].startswith(f"{SUMMARY_HEADER}\n\nWe looked around.\n\n")
    assert shown[1]["content"].endswith("- [completed] Look around\n- [in_progress] Report")
    transcript = run_cli("show", session).stdout
    assert f"context compacted: {summarized} events summarized" in transcript


def test_a_failed_compaction_is_one_line_and_leaves_the_log_as_it_was(
    tmp_path: Path, harness_home: Path
) -> None:
    """A summary answered with a tool call is refused; not a byte is appended."""
    session = _session(tmp_path, harness_home)
    path = harness_home / "sessions" / f"{session}.jsonl"
    before = path.read_bytes()
    script = write_script(tmp_path / "bad.json", [{"tool_calls": [bash_call("ls")]}])
    result = run_cli("compact", session, "--model", script)
    assert result.returncode == 1
    assert "nothing was compacted" in one_error_line(result)
    assert "a summary must be text" in one_error_line(result)
    assert path.read_bytes() == before


def test_a_session_with_nothing_to_compact_is_refused(tmp_path: Path, harness_home: Path) -> None:
    """A session without a turn (a chat left at once): refused before any model call."""
    script = write_script(tmp_path / "none.json", [])
    assert run_cli("chat", "--model", script, input="").returncode == 0
    (session,) = session_ids(harness_home)
    result = run_cli("compact", session, "--model", script)
    assert result.returncode == 1
    assert "nothing to compact" in one_error_line(result)


def test_slash_compact_in_chat_compacts_and_the_chat_goes_on(
    tmp_path: Path, harness_home: Path
) -> None:
    """`/compact` prints the one line; the next turn's request starts from the summary."""
    session = _session(tmp_path, harness_home)
    steps = [{"text": "Summary of it all."}, {"text": "Reported."}]
    script = write_script(tmp_path / "chat.json", steps)
    result = run_cli("chat", "--session", session, "--model", script, input="/compact\ngo on\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    compacted = [line for line in lines if line.startswith("context compacted: ")]
    assert len(compacted) == 1 and compacted[0].endswith(" events summarized")
    assert lines.index(compacted[0]) < lines.index("› go on") < lines.index("Reported.")
    shown = json.loads(run_cli("show", session, "--json").stdout)
    assert shown[1]["content"].startswith(f"{SUMMARY_HEADER}\n\nSummary of it all.")


def test_run_compacts_by_itself_past_the_configured_share_of_the_window(
    tmp_path: Path, harness_home: Path, openai_server: OpenAIServer
) -> None:
    """`context_window` and `compact_at` from the environment; the provider's usage decides."""
    calls = [reply(tool_calls=[tool_call("bash", {"command": f"echo {n}"})]) for n in range(3)]
    openai_server.expect(
        *calls,
        reply(tool_calls=[tool_call("bash", {"command": "echo 3"})], usage=(600, 1)),
        reply("The echoes so far."),
        reply("Done."),
    )
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": openai_server.base_url,
        "HARNESS_CONTEXT_WINDOW": "1000",
        "HARNESS_COMPACT_AT": "0.6",
    }
    result = run_cli("run", "--model", "openai:test-model", "Echo.", env=env)
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    (compaction,) = [
        e for e in read_events(harness_home, session) if e["type"] == "context/compact"
    ]
    summarized = compaction["data"]["last_seq"] - compaction["data"]["first_seq"] + 1
    lines = result.stdout.splitlines()
    assert lines[lines.index("Done.") - 1] == f"context compacted: {summarized} events summarized"
    assert openai_server.requests[5].messages[1]["content"].endswith("The echoes so far.")
