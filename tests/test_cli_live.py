"""The live display, read back from a real terminal: `harness` runs on a pseudo-terminal and
its output goes through the pyte terminal emulator; the tests assert on the final screen."""

from __future__ import annotations

from pathlib import Path

from harness_core.testing.openai_server import OpenAIServer, reply
from test_cli_support import Terminal, bash_call, session_ids, todo_call, write_script

# pyte names SGR 33 (yellow) "brown", after the colour most old terminals drew.
YELLOW = "brown"

HALF_WAY = [
    {
        "text": "Planning.",
        "tool_calls": [
            todo_call(("Read", "in_progress"), ("Patch", "pending"), ("Test", "pending"))
        ],
    },
    {"tool_calls": [bash_call("sleep 1")]},
    {
        "tool_calls": [
            todo_call(("Read", "completed"), ("Patch", "in_progress"), ("Test", "pending"))
        ]
    },
    {"text": "Halfway there."},
]


def strip_rows(terminal: Terminal, header: str) -> list[str]:
    """The strip's task rows: the lines under its header, up to the first non-row."""
    start = terminal.row_of(header)
    rows = []
    for line in terminal.lines[start + 1 :]:
        if not line.startswith("  ") or not line.strip():
            break
        rows.append(line.strip())
    return rows


def test_the_final_screen_shows_the_plan_strip_with_each_state(tmp_path: Path) -> None:
    """After a turn the strip sits under the output: done checked, active highlighted."""
    model = write_script(tmp_path / "s.json", HALF_WAY)
    terminal = Terminal("run", "--model", model, "fix it")
    assert terminal.wait() == 0, terminal.text
    assert terminal.row_of("Plan · 1/3 done") > terminal.row_of("Halfway there.")
    assert strip_rows(terminal, "Plan · 1/3 done") == ["☑ Read", "▶ Patch", "☐ Test"]
    done = terminal.row_of("☑ Read")
    assert terminal.style_at(done, "☑").fg == "green"
    active = terminal.row_of("▶ Patch")
    cell = terminal.style_at(active, "Patch")
    assert cell.bold and cell.fg == YELLOW
    pending = terminal.style_at(terminal.row_of("☐ Test"), "Test")
    assert not pending.bold and pending.fg == "default"
    # Each call got its line, and the earlier strip states did not pile up on screen.
    assert terminal.row_of("✓ $ sleep 1  exit 0") < terminal.row_of("Halfway there.")
    assert sum("Plan ·" in line for line in terminal.lines) == 1


def test_the_strip_is_pinned_under_a_running_call(tmp_path: Path) -> None:
    """While a tool runs, its pending line and the plan strip under it are on screen."""
    model = write_script(tmp_path / "s.json", HALF_WAY)
    terminal = Terminal("run", "--model", model, "fix it")
    terminal.expect("⋯ $ sleep 1")
    running = terminal.row_of("⋯ $ sleep 1")
    assert terminal.row_of("Plan · 0/3 done") > running
    assert strip_rows(terminal, "Plan · 0/3 done") == ["▶ Read", "☐ Patch", "☐ Test"]
    assert terminal.wait() == 0


def test_a_new_turn_clears_the_strip_and_the_next_write_brings_it_back(
    tmp_path: Path, harness_home: Path
) -> None:
    """Resume shows the standing plan first; the new turn has no strip until it writes one."""
    assert Terminal("run", "--model", write_script(tmp_path / "1.json", HALF_WAY), "a").wait() == 0
    (session,) = session_ids(harness_home)
    model = write_script(tmp_path / "2.json", [{"text": "No plan needed."}])
    second = Terminal("run", "--session", session, "--model", model, "quick question")
    assert second.wait() == 0, second.text
    assert second.row_of("Plan · 1/3 done  standing, from the last turn") < second.row_of(
        "› quick question"
    )
    answer = second.row_of("No plan needed.")
    assert not any("Plan ·" in line or "▶" in line for line in second.lines[answer:])
    steps = [{"tool_calls": [todo_call(("Verify", "in_progress"))]}, {"text": "Verifying."}]
    third = Terminal(
        "run", "--session", session, "--model", write_script(tmp_path / "3.json", steps), "check"
    )
    assert third.wait() == 0, third.text
    assert not any("standing" in line for line in third.lines)  # turn 2 cleared it
    assert third.row_of("Plan · 0/1 done") > third.row_of("Verifying.")
    assert strip_rows(third, "Plan · 0/1 done") == ["▶ Verify"]


def test_a_long_plan_collapses_around_the_active_task(tmp_path: Path) -> None:
    """Twelve tasks: seven rows around the active one, with what is hidden counted."""
    items = [(f"Task {n:02}", "completed" if n < 8 else "pending") for n in range(12)]
    items[8] = ("Task 08", "in_progress")
    model = write_script(tmp_path / "s.json", [{"tool_calls": [todo_call(*items)]}, {"text": "ok"}])
    terminal = Terminal("run", "--model", model, "go")
    assert terminal.wait() == 0, terminal.text
    assert strip_rows(terminal, "Plan · 8/12 done") == [
        "⋯ 5 more above",
        "☑ Task 05",
        "☑ Task 06",
        "☑ Task 07",
        "▶ Task 08",
        "☐ Task 09",
        "☐ Task 10",
        "☐ Task 11",
    ]


def test_model_text_is_shown_as_written_never_as_markup(tmp_path: Path) -> None:
    """Rich markup and escape sequences in model text reach the screen inert."""
    text = "Use [bold]x[/bold] and [red]y[/] here.\x1b[2J"
    model = write_script(tmp_path / "s.json", [{"text": text}])
    terminal = Terminal("run", "--model", model, "go")
    assert terminal.wait() == 0
    row = terminal.row_of("Use [bold]x[/bold] and [red]y[/] here.")
    assert not terminal.style_at(row, "x[/bold]").bold
    assert terminal.row_of("› go") < row  # the clear-screen code did not wipe the prompt


def test_a_failed_call_is_marked_with_a_red_cross(tmp_path: Path) -> None:
    """An error result gets ✗ in red and the error's first line."""
    steps = [{"tool_calls": [{"name": "nope", "arguments": "{}"}]}, {"text": "ok"}]
    terminal = Terminal("run", "--model", write_script(tmp_path / "s.json", steps), "go")
    assert terminal.wait() == 0
    row = terminal.row_of('✗ nope (unknown tool)  Error: unknown tool "nope"')
    assert terminal.style_at(row, "✗").fg == "red"


def test_a_streamed_answer_with_reasoning_from_a_real_http_model(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """deepseek: over real HTTP (loopback): thoughts dimmed in italics, then the answer."""
    openai_server.expect(reply("The answer is 42.", reasoning="Thinking it over first.", pieces=4))
    terminal = Terminal(
        "run",
        "--model",
        "deepseek:test-model",
        "question",
        env={"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": openai_server.base_url},
    )
    assert terminal.wait() == 0, terminal.text
    thought = terminal.row_of("Thinking it over first.")
    cell = terminal.style_at(thought, "Thinking")
    assert cell.italics
    assert terminal.row_of("The answer is 42.") == thought + 1
    assert not terminal.style_at(thought + 1, "The answer").italics


def test_a_command_that_exits_non_zero_is_marked_with_a_red_cross(tmp_path: Path) -> None:
    """`false` is a failure at a glance (✗ in red and its exit code), `true` stays ✓ in green;
    the model still reads the command's answer, not an error."""
    steps = [{"tool_calls": [bash_call("false")]}, {"tool_calls": [bash_call("true")]}]
    steps.append({"text": "ok"})
    terminal = Terminal("run", "--model", write_script(tmp_path / "s.json", steps), "go")
    assert terminal.wait() == 0
    failed = terminal.row_of("✗ $ false  exit 1")
    assert terminal.style_at(failed, "✗").fg == "red"
    passed = terminal.row_of("✓ $ true  exit 0")
    assert terminal.style_at(passed, "✓").fg == "green"
