"""`harness run` through a subprocess with scripted models: output, JSON Lines, exit status."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from harness_core.testing.openai_server import OpenAIServer, Reply, reply
from test_cli_support import (
    HARNESS,
    bash_call,
    child_env,
    one_error_line,
    own_stderr,
    read_events,
    run_cli,
    session_ids,
    todo_call,
    write_script,
)

PLAN_AND_RUN = [
    {"text": "Planning.", "tool_calls": [todo_call(("Look", "in_progress"), ("Fix", "pending"))]},
    {"tool_calls": [bash_call("echo hello")]},
    {"text": "All done."},
]


def test_run_prints_text_tool_lines_and_the_plan(tmp_path: Path, harness_home: Path) -> None:
    """Off a terminal: the prompt, the text, a ✓ line per call and the plan as a block."""
    model = write_script(tmp_path / "s.json", PLAN_AND_RUN)
    result = run_cli("run", "--model", model, "fix the bug")
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    assert result.stdout.splitlines() == [
        "› fix the bug",
        "Planning.",
        "Plan · 0/2 done",
        "  ▶ Look",
        "  ☐ Fix",
        "✓ todo_write  Plan 0/2 done · now: Look",
        "✓ $ echo hello  exit 0",
        "All done.",
        f"session {session} · continue it: harness run --session {session} PROMPT",
    ]
    assert own_stderr(result.stderr) == ""
    assert "\x1b" not in result.stdout  # no control codes off a terminal


def test_a_failed_call_gets_a_cross_and_the_error(tmp_path: Path) -> None:
    """Malformed arguments are an error result: ✗, then the first line the model reads."""
    model = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "bash", "arguments": "{not json"}]}, {"text": "Sorry."}],
    )
    result = run_cli("run", "--model", model, "go")
    assert result.returncode == 0
    assert "✗ bash (invalid arguments)  Error: the arguments for bash are not valid JSON" in (
        result.stdout
    )


def test_run_session_continues_and_shows_the_standing_plan(
    tmp_path: Path, harness_home: Path
) -> None:
    """--session appends a turn to the same log and first shows the plan it stands on."""
    first = write_script(tmp_path / "1.json", PLAN_AND_RUN)
    assert run_cli("run", "--model", first, "start").returncode == 0
    (session,) = session_ids(harness_home)
    second = write_script(tmp_path / "2.json", [{"text": "Still here."}])
    result = run_cli("run", "--session", session, "--model", second, "and now?")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:4] == [
        "Plan · 0/2 done (standing, from the last turn)",
        "  ▶ Look",
        "  ☐ Fix",
        "› and now?",
    ]
    assert session_ids(harness_home) == [session]
    turns = [e["turn"] for e in read_events(harness_home, session) if e["type"] == "turn/start"]
    assert turns == [1, 2]


def test_json_streams_the_on_disk_envelopes(tmp_path: Path, harness_home: Path) -> None:
    """--json prints exactly the session file's lines, session/start included, on stdout only."""
    model = write_script(tmp_path / "s.json", PLAN_AND_RUN)
    result = run_cli("run", "--json", "--model", model, "go")
    assert result.returncode == 0
    (session,) = session_ids(harness_home)
    on_disk = (harness_home / "sessions" / f"{session}.jsonl").read_text().splitlines()
    assert result.stdout.splitlines() == on_disk
    assert [json.loads(line)["type"] for line in on_disk][:3] == [
        "session/start",
        "turn/start",
        "message/user",
    ]
    assert own_stderr(result.stderr) == ""


def test_json_lines_arrive_while_the_turn_runs(tmp_path: Path) -> None:
    """The first events reach stdout while a tool call is still running: the call waits for a
    file this test creates only after it has read them."""
    release = tmp_path / "release"  # in the session's workspace, which the sandbox shows
    wait = f"while [ ! -e {release} ]; do sleep 0.05; done"
    model = write_script(tmp_path / "s.json", [{"tool_calls": [bash_call(wait)]}, {"text": "ok"}])
    with subprocess.Popen(
        [HARNESS, "run", "--json", "--model", model, "go"],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=tmp_path,
    ) as process:
        assert process.stdout is not None
        seen = [json.loads(process.stdout.readline())["type"] for _ in range(4)]
        assert seen == ["session/start", "turn/start", "message/user", "message/assistant"]
        assert process.poll() is None  # the call is still waiting: this was streamed
        release.touch()
        rest = [json.loads(line) for line in process.stdout]
    assert process.returncode == 0
    assert [e["type"] for e in rest] == [
        "tool/approval",
        "tool/result",
        "message/assistant",
        "turn/end",
    ]
    assert rest[1]["data"]["is_error"] is False  # it saw the file, not its timeout


def test_json_of_a_continued_session_streams_only_new_events(
    tmp_path: Path, harness_home: Path
) -> None:
    """Continuing a session streams the events this run appended, starting at turn/start."""
    assert (
        run_cli("run", "--model", write_script(tmp_path / "1.json", PLAN_AND_RUN), "a").returncode
        == 0
    )
    (session,) = session_ids(harness_home)
    model = write_script(tmp_path / "2.json", [{"text": "b"}])
    result = run_cli("run", "--json", "--session", session, "--model", model, "b")
    seqs = [json.loads(line)["seq"] for line in result.stdout.splitlines()]
    before = len(read_events(harness_home, session)) - len(seqs)
    assert seqs == list(range(before, before + 4))


def test_prompt_dash_reads_stdin(tmp_path: Path) -> None:
    """PROMPT `-` takes the prompt from stdin (scripts, long prompts)."""
    model = write_script(tmp_path / "s.json", [{"text": "read it"}])
    result = run_cli("run", "--model", model, "-", input="a long\nprompt\n")
    assert result.returncode == 0
    assert result.stdout.splitlines()[:2] == ["› a long", "  prompt"]


def test_the_model_comes_from_env_then_config(tmp_path: Path, harness_home: Path) -> None:
    """Without --model: HARNESS_MODEL, else `model` in $HARNESS_HOME/config.toml."""
    by_env = write_script(tmp_path / "env.json", [{"text": "from env"}])
    result = run_cli("run", "hi", env={"HARNESS_MODEL": by_env})
    assert "from env" in result.stdout
    by_config = write_script(tmp_path / "config.json", [{"text": "from config"}])
    harness_home.mkdir(parents=True, exist_ok=True)
    (harness_home / "config.toml").write_text(f'model = "{by_config}"\n')
    assert "from config" in run_cli("run", "hi").stdout
    assert "from env" in run_cli("run", "hi", env={"HARNESS_MODEL": by_env}).stdout


def test_config_system_prompt_and_cwd_go_into_session_start(
    tmp_path: Path, harness_home: Path
) -> None:
    """A new session records the configured system prompt and the working directory."""
    harness_home.mkdir(parents=True)
    (harness_home / "config.toml").write_text('system_prompt = "Be brief."\n')
    model = write_script(tmp_path / "s.json", [{"text": "ok"}])
    assert run_cli("run", "--model", model, "hi", cwd=tmp_path).returncode == 0
    (session,) = session_ids(harness_home)
    start = read_events(harness_home, session)[0]["data"]
    assert (start["system_prompt"], start["cwd"]) == ("Be brief.", str(tmp_path))


def test_default_system_prompt_is_the_loops(tmp_path: Path, harness_home: Path) -> None:
    """Without config, a new session gets the loop's default system prompt."""
    from harness_core.loop import DEFAULT_SYSTEM_PROMPT

    model = write_script(tmp_path / "s.json", [{"text": "ok"}])
    assert run_cli("run", "--model", model, "hi").returncode == 0
    (session,) = session_ids(harness_home)
    assert read_events(harness_home, session)[0]["data"]["system_prompt"] == DEFAULT_SYSTEM_PROMPT


# -- failures: one line on stderr, non-zero status ------------------------------------------


def test_no_model_says_how_to_choose_one() -> None:
    """No --model, env or config: a one-line error naming all three ways."""
    line = one_error_line(run_cli("run", "hi"))
    assert "--model" in line and "HARNESS_MODEL" in line and "config.toml" in line


def test_a_real_model_without_a_key_names_the_env_var(harness_home: Path) -> None:
    """openai:/deepseek: without a key: one line naming the variable; no session is made."""
    assert "set OPENAI_API_KEY" in one_error_line(run_cli("run", "--model", "openai:gpt-x", "hi"))
    line = one_error_line(run_cli("run", "--model", "deepseek:MODEL", "hi"))
    assert "set DEEPSEEK_API_KEY" in line
    assert session_ids(harness_home) == []


def test_an_unknown_provider_lists_the_built_in_ones() -> None:
    """A spec no plugin answers is an error that lists the built-in providers."""
    line = one_error_line(run_cli("run", "--model", "ollama:llama3", "hi"))
    assert "'ollama:llama3'" in line and "scripted:, openai:, deepseek:" in line


def test_a_bad_script_is_a_one_line_error(tmp_path: Path) -> None:
    """A script that is missing or not JSON fails before any turn runs."""
    assert "cannot read script" in one_error_line(
        run_cli("run", "--model", f"scripted:{tmp_path / 'missing.json'}", "hi")
    )
    (tmp_path / "bad.json").write_text("{nope")
    assert "not valid JSON" in one_error_line(
        run_cli("run", "--model", f"scripted:{tmp_path / 'bad.json'}", "hi")
    )


def test_unused_script_steps_are_an_error(tmp_path: Path) -> None:
    """A turn that completes with scripted steps left over exits non-zero."""
    model = write_script(tmp_path / "s.json", [{"text": "one"}, {"text": "two"}])
    result = run_cli("run", "--model", model, "hi")
    assert "1 scripted step(s) were never used" in one_error_line(result)
    assert "one" in result.stdout


def test_a_turn_that_ends_in_error_exits_non_zero(tmp_path: Path, harness_home: Path) -> None:
    """The script runs out mid-turn: the turn ends `error`, logged, and the exit says why."""
    model = write_script(tmp_path / "s.json", [{"tool_calls": [bash_call("true")]}])
    line = one_error_line(run_cli("run", "--model", model, "hi"))
    assert "the turn ended with error" in line
    (session,) = session_ids(harness_home)
    end = read_events(harness_home, session)[-1]
    assert (end["type"], end["data"]["status"]) == ("turn/end", "error")


def test_an_unknown_session_is_a_one_line_error(tmp_path: Path) -> None:
    """--session with an id that does not exist points at `harness sessions`."""
    model = write_script(tmp_path / "s.json", [{"text": "x"}])
    line = one_error_line(
        run_cli("run", "--session", "20200101-000000-abcdef", "--model", model, "x")
    )
    assert "no session '20200101-000000-abcdef'" in line and "harness sessions" in line


def test_a_locked_session_names_the_holder(tmp_path: Path, harness_home: Path) -> None:
    """A session another process writes is refused at once, naming that process."""
    first = write_script(tmp_path / "1.json", [{"text": "x"}])
    assert run_cli("run", "--model", first, "x").returncode == 0
    (session,) = session_ids(harness_home)
    fd = os.open(harness_home / "sessions" / f"{session}.jsonl", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        second = write_script(tmp_path / "2.json", [{"text": "y"}])
        line = one_error_line(run_cli("run", "--session", session, "--model", second, "y"))
        assert f"already open for writing by process {os.getpid()}" in line
    finally:
        os.close(fd)


def test_a_config_error_is_one_line(harness_home: Path) -> None:
    """A malformed config.toml is named with its path, before anything runs."""
    harness_home.mkdir(parents=True)
    (harness_home / "config.toml").write_text("model = [\n")
    assert str(harness_home / "config.toml") in one_error_line(run_cli("run", "hi"))


def test_an_invalid_max_steps_is_one_line_before_any_session(
    tmp_path: Path, harness_home: Path
) -> None:
    """HARNESS_MAX_STEPS must be a positive integer; a bad one leaves no session behind."""
    model = write_script(tmp_path / "s.json", [{"text": "x"}])
    for value in ("0", "abc"):
        result = run_cli("run", "--model", model, "x", env={"HARNESS_MAX_STEPS": value})
        assert "max_steps (or HARNESS_MAX_STEPS)" in one_error_line(result)
    assert session_ids(harness_home) == []


def _run_bytes(
    args: list[bytes], stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`harness ARGS` with raw bytes for the arguments and stdin, as a shell passes them."""
    return subprocess.run(
        [HARNESS.encode(), *args],
        env=child_env(),
        input=stdin,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_a_prompt_that_is_not_utf8_is_refused_before_any_session(
    tmp_path: Path, harness_home: Path
) -> None:
    """Invalid UTF-8 as the argument or on stdin: one line naming the byte, no session made."""
    model = write_script(tmp_path / "s.json", [{"text": "x"}]).encode()
    by_arg = _run_bytes([b"run", b"--model", model, b"caf\xe9"])
    by_stdin = _run_bytes([b"run", b"--model", model, b"-"], stdin=b"ab\xff\xfecd")
    assert by_arg.stderr.decode() == (
        "harness: error: the prompt is not valid UTF-8 (byte 0xe9 at character 3); "
        "convert it first, e.g. iconv -f latin1 -t utf-8\n"
    )
    assert b"(byte 0xff at character 2)" in by_stdin.stderr
    assert by_arg.returncode == by_stdin.returncode == 1
    assert by_stdin.stderr.count(b"\n") == 1
    assert session_ids(harness_home) == []


def test_a_working_directory_that_is_not_utf8_is_refused_before_any_session(
    tmp_path: Path, harness_home: Path
) -> None:
    """A cwd whose name is not UTF-8: one clear line, and no (0-byte) session file."""
    model = write_script(tmp_path / "s.json", [{"text": "x"}]).encode()
    odd = tmp_path / os.fsdecode(b"dir-\xff")
    odd.mkdir()
    result = _run_bytes([b"run", b"--model", model, b"hi"], cwd=odd)
    assert result.returncode == 1
    stderr = own_stderr(result.stderr.decode())
    assert stderr.startswith(
        "harness: error: the working directory's name is not valid UTF-8 (byte 0xff at "
    )
    assert stderr.count("\n") == 1
    assert session_ids(harness_home) == []


def test_an_invalid_builtin_setting_is_said_once(tmp_path: Path, harness_home: Path) -> None:
    """HARNESS_BUILTINS_BASH_TIMEOUT=0 is named, not followed by "no installed plugin provides"."""
    model = write_script(tmp_path / "s.json", [{"text": "x"}])
    result = run_cli("run", "--model", model, "x", env={"HARNESS_BUILTINS_BASH_TIMEOUT": "0"})
    assert one_error_line(result) == (
        "harness: error: plugins.builtins.bash_timeout (or HARNESS_BUILTINS_BASH_TIMEOUT): "
        "Input should be greater than 0, got '0' from the environment"
    )
    assert session_ids(harness_home) == []


def test_a_script_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    """A script of 100 000 nested lists is "not valid JSON (nested too deeply)", no traceback."""
    path = tmp_path / "deep.json"
    path.write_text('{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run_cli("run", "--model", f"scripted:{path}", "x")
    assert one_error_line(result).endswith("is not valid JSON (nested too deeply)")


def test_a_tool_error_result_is_not_a_host_error(tmp_path: Path) -> None:
    """A NUL byte in a bash command is the call's error result; stderr stays empty."""
    steps = [{"tool_calls": [bash_call("echo a\u0000b")]}, {"text": "ok"}]
    result = run_cli("run", "--model", write_script(tmp_path / "s.json", steps), "go")
    assert result.returncode == 0 and own_stderr(result.stderr) == ""
    assert "✗ $ echo a" in result.stdout and "contains a NUL character" in result.stdout


def test_an_empty_prompt_is_refused(tmp_path: Path) -> None:
    """A blank prompt is an error, not an empty turn on the log."""
    model = write_script(tmp_path / "s.json", [{"text": "x"}])
    assert "the prompt is empty" in one_error_line(run_cli("run", "--model", model, "  "))


def test_a_subagents_calls_are_nested_and_its_plan_stays_its_own(
    tmp_path: Path, harness_home: Path
) -> None:
    """A subagent's tool lines are indented under the call; its todo list is not the strip."""
    steps = [
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "look around"}}]},
        {"tool_calls": [todo_call(("Child task", "in_progress")), bash_call("echo child")]},
        {"text": "child answer"},
        {"text": "parent answer"},
    ]
    result = run_cli("run", "--model", write_script(tmp_path / "s.json", steps), "delegate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:5] == [
        "› delegate",
        "  │ ✓ todo_write  Plan 0/1 done · now: Child task",
        "  │ ✓ $ echo child  exit 0",
        "✓ subagent: look around",
        "parent answer",
    ]
    starts = {s: read_events(harness_home, s)[0]["data"] for s in session_ids(harness_home)}
    (child,) = [s for s, start in starts.items() if start["parent_session"]]
    parent = starts[child]["parent_session"]
    assert [e["type"] for e in read_events(harness_home, child)].count("todo/write") == 1
    assert "todo/write" not in [e["type"] for e in read_events(harness_home, parent)]


def test_sigterm_closes_the_turn_kills_the_command_and_exits_143(
    tmp_path: Path, harness_home: Path
) -> None:
    """`kill <pid>` mid-tool: turn/end cancelled on the log, no process left behind, status 143."""
    pid_file = tmp_path / "child.pid"
    model = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [bash_call(f"sleep 60 & echo $! > {pid_file}; wait")]}, {"text": "no"}],
    )
    # Sandbox off: the pid file is outside the working directory, and a sandbox's PID
    # namespace would renumber the pid (test_sandbox.py covers what the sandbox kills).
    with subprocess.Popen(
        [HARNESS, "run", "--json", "--sandbox", "off", "--model", model, "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        seen = [json.loads(process.stdout.readline())["type"] for _ in range(4)]
        assert seen[-1] == "message/assistant"
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        process.terminate()
        rest = [json.loads(line)["type"] for line in process.stdout]
        error = process.stderr.read()
    assert process.returncode == 143
    assert rest == ["tool/approval", "tool/result", "turn/end"]
    assert "stopped by SIGTERM" in error
    events = read_events(harness_home, session_ids(harness_home)[0])
    assert events[-1]["data"] == {"status": "cancelled", "error": "cancelled"}
    child = int(pid_file.read_text())
    # SIGKILL is asynchronous, and an orphan's zombie may wait for a slow reaper: "gone" is
    # no /proc entry or a zombie, within a few seconds.
    deadline = time.monotonic() + 5
    while alive(child):
        assert time.monotonic() < deadline, f"the command's child {child} outlived harness"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether `pid` is a live process; a zombie (killed, not yet reaped) is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _limit_file_size(limit: int) -> Callable[[], None]:
    """A preexec_fn: files may not grow past `limit` bytes, as on a full disk (EFBIG)."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_mid_turn_says_the_answer_was_not_saved_and_the_next_run_repairs(
    tmp_path: Path, harness_home: Path
) -> None:
    """The answer cannot be appended: one line names the turn; the next run closes it."""
    model = write_script(tmp_path / "s.json", [{"text": "first"}])
    assert run_cli("run", "--model", model, "one").returncode == 0
    (session,) = session_ids(harness_home)
    path = harness_home / "sessions" / f"{session}.jsonl"
    committed = path.read_bytes()
    # Room for turn/start and the prompt, not for the long answer nor for a turn/end.
    model = write_script(tmp_path / "s.json", [{"text": "lost " * 2000}])
    result = subprocess.run(
        [HARNESS, "run", "--model", model, "--session", session, "two"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_limit_file_size(len(committed) + 200),
    )
    assert result.returncode == 1
    assert own_stderr(result.stderr) == (
        "harness: error: turn 2 was not saved: the session log refused a write (File too "
        "large); anything shown above for this turn is not on the log. Free some space; the "
        f"next `harness run --session {session}` closes the turn as an error and continues\n"
    )
    assert path.read_bytes().startswith(committed)
    model = write_script(tmp_path / "s.json", [{"text": "third"}])
    assert run_cli("run", "--model", model, "--session", session, "three").returncode == 0
    ends = [e["data"] for e in read_events(harness_home, session) if e["type"] == "turn/end"]
    assert [e["status"] for e in ends] == ["completed", "error", "completed"]


_NOT_UTF8_CHUNK = (
    b'{"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"caf\xe9"},"finish_reason":null}]}'
)


@pytest.mark.parametrize(
    ("served", "says"),
    [
        (
            reply("half \ud800 a surrogate"),
            "sent text that is not valid Unicode (a lone surrogate U+D800)",
        ),
        (Reply(chunks=(_NOT_UTF8_CHUNK,)), "the provider sent a response that is not valid UTF-8"),
    ],
    ids=["lone-surrogate", "not-utf8"],
)
def test_model_text_the_log_cannot_store_ends_the_turn_as_a_model_error(
    openai_server: OpenAIServer, harness_home: Path, served: Reply, says: str
) -> None:
    """A streamed lone surrogate or a non-UTF-8 body: one error line, the session id printed."""
    openai_server.expect(served)
    result = run_cli(
        "run",
        "--model",
        "openai:m",
        "--base-url",
        openai_server.base_url,
        "hi",
        env={"OPENAI_API_KEY": "sk-test"},
    )
    (session,) = session_ids(harness_home)
    assert result.returncode == 1
    assert says in one_error_line(result)
    assert f"session {session}" in result.stdout
    (end,) = [e for e in read_events(harness_home, session) if e["type"] == "turn/end"]
    assert end["data"]["status"] == "error" and says in end["data"]["error"]


@pytest.mark.parametrize("field", ["text", "arguments"])
def test_a_scripted_lone_surrogate_ends_the_turn_as_a_model_error(
    tmp_path: Path, harness_home: Path, field: str
) -> None:
    """A script whose text or tool arguments hold a lone surrogate: a model error, not a crash."""
    step = (
        {"text": "bad \ud800 text"}
        if field == "text"
        else {"tool_calls": [{"name": "bash", "arguments": '{"command": "echo \ud800"}'}]}
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"steps": [step]}), encoding="utf-8")  # ASCII: \ud800 escaped
    result = run_cli("run", "--model", f"scripted:{path}", "hi")
    (session,) = session_ids(harness_home)
    assert result.returncode == 1
    assert "the turn ended with error: model " in one_error_line(result)
    assert "internal error" not in result.stderr
    assert f"session {session}" in result.stdout
