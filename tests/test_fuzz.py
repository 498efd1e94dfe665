"""Fuzzing the CLI with damaged inputs: session files and scripted-model files.

A real session (plans, tool calls, two turns) is mutated with bit flips, truncations, inserted
garbage, huge lines, and duplicated, dropped or swapped lines; every read command and a resume
(`run --session` with a scripted model) then run against it. Scripted-model files are mutated
the same way and run. The properties, for every case:

- the command exits 0, or non-zero with exactly one `harness: error:` line on stderr (every
  stderr line is a `harness: ...` line: never a traceback, never "internal error");
- it returns within `HANG_SECONDS` (a hang detector, not a performance goal);
- a read command leaves the session file byte for byte as it was; a resume keeps every
  complete line (the committed bytes) and moves a torn tail aside with its bytes intact.

The CLI runs in-process (`harness_core.cli.main`) for speed; a few cases also run as real
subprocesses. CI runs a bounded number of cases (`HARNESS_FUZZ_EXAMPLES`, default below);
`scripts/fuzz` runs many more with statistics.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from harness_core.cli import main
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_cli_support import bash_call, child_env, run_cli, todo_call

EXAMPLES: Final = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "200"))
HANG_SECONDS: Final = 20.0  # far above any real run: only a hang or a runaway read exceeds it
HUGE_LINE: Final = int(os.environ.get("HARNESS_FUZZ_HUGE_LINE", "2000000"))

READ_COMMANDS: Final = (
    ("show",),
    ("show", "--json"),
    ("events",),
    ("todos",),
    ("todos", "--json"),
    ("todos", "--history"),
)

FUZZ_SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the CLI's own time is bounded by HANG_SECONDS instead
    database=None,  # CI starts clean; scripts/fuzz prints what it found
    # Each case makes its own HARNESS_HOME, so the per-test fixtures are never shared state.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

SESSION_ID: Final = "20260101-000000-f0f0f0"

SCRIPT: Final = [
    {"text": "Planning.", "tool_calls": [todo_call(("Look", "in_progress"), ("Fix", "pending"))]},
    {"tool_calls": [bash_call("echo hello")]},
    {"tool_calls": [todo_call(("Look", "completed"), ("Fix", "in_progress"))]},
    {"text": "Done: 🙂 日本語 \u2028 ok."},
]


# -- running harness -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    args: tuple[str, ...]
    status: int
    stdout: str
    stderr: str
    seconds: float


@contextmanager
def _home(home: Path) -> Iterator[None]:
    """HARNESS_HOME=home for an in-process command, and the environment as it was after it
    (`--store URL` becomes HARNESS_STORE for the process, as in a `harness` process: left
    behind, every later test's subprocess would open that store)."""
    saved = dict(os.environ)
    os.environ["HARNESS_HOME"] = str(home)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def harness(home: Path, *args: str) -> Outcome:
    """`harness ARGS` in this process, with HARNESS_HOME=home and captured output."""
    # Text streams over bytes, as a process has: some commands write bytes to stdout.buffer.
    out, err = (io.TextIOWrapper(io.BytesIO(), "utf-8", write_through=True) for _ in "12")
    start = time.monotonic()
    with _home(home), redirect_stdout(out), redirect_stderr(err):
        status = main(list(args))
    seconds = time.monotonic() - start
    return Outcome(args, status, _text(out), _text(err), seconds)


def _text(stream: io.TextIOWrapper) -> str:
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8", "replace")


def assert_well_behaved(outcome: Outcome) -> None:
    """Exit 0, or one error line; only `harness: ...` lines on stderr; within the bound."""
    lines = outcome.stderr.splitlines()
    context = f"harness {' '.join(outcome.args)}: status {outcome.status}, stderr {lines!r}"
    assert all(line.startswith("harness: ") for line in lines), context
    assert "internal error" not in outcome.stderr and "Traceback" not in outcome.stderr, context
    errors = [line for line in lines if line.startswith("harness: error: ")]
    assert len(errors) == (0 if outcome.status == 0 else 1), context
    assert outcome.seconds < HANG_SECONDS, context


# -- inputs ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real two-turn session with plans, a bash call and multi-byte text, as bytes."""
    home = tmp_path_factory.mktemp("fuzz-origin")
    script = home / "script.json"
    script.write_text(json.dumps({"steps": SCRIPT}), encoding="utf-8")
    assert harness(home, "run", "--model", f"scripted:{script}", "first").status == 0
    (path,) = (home / "sessions").glob("*.jsonl")
    script.write_text(json.dumps({"steps": [{"text": "second answer"}]}), encoding="utf-8")
    assert (
        harness(
            home, "run", "--model", f"scripted:{script}", "--session", path.stem, "again"
        ).status
        == 0
    )
    return path.read_bytes()


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@dataclass(frozen=True, slots=True)
class Damaged:
    """Damaged bytes, with a short repr: a failing case may hold a 2 MB line."""

    content: bytes

    def __repr__(self) -> str:
        cut = b"..." if len(self.content) > 300 else b""
        return f"Damaged({len(self.content)} bytes: {self.content[:300] + cut!r})"


# The fillers of a huge line: filler, bytes that are not UTF-8, an endless string, and deep
# nesting ("[" * 2 MB), which a JSON parser must refuse rather than recurse into.
SESSION_FILLERS: Final = (b"x", b"\xff", b'{"seq":1,"type":"', b"[")
SCRIPT_FILLERS: Final = (b"x", b"\xff", b'{"steps": [{"text": "', b"[")


@st.composite
def mutations(
    draw: st.DrawFn, original: bytes, floor: int = 0, fillers: tuple[bytes, ...] = SESSION_FILLERS
) -> Damaged:
    """`original` after one to four random damages, none of them before byte `floor`."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        last = max(len(data) - 1, 0)
        where = draw(st.integers(min(floor, last), last))
        kind = draw(
            st.sampled_from(
                ["flip", "truncate", "garbage", "huge", "duplicate", "drop", "swap", "value"]
            )
        )
        if kind == "flip" and data:
            data[where] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[where:]
        elif kind == "garbage":
            data[where:where] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "huge":
            filler = draw(st.sampled_from(fillers))
            data[where:where] = filler * (HUGE_LINE // len(filler)) + b"\n"
        elif kind in ("duplicate", "drop", "swap"):
            lines = _lines(bytes(data))
            first = 1 if floor else 0
            if len(lines) <= first:
                continue  # only the protected header is left: no line to move
            i = draw(st.integers(first, max(len(lines) - 1, first)))
            j = draw(st.integers(first, max(len(lines) - 1, first)))
            if kind == "duplicate":
                lines.insert(j, lines[i])
            elif kind == "drop":
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        else:  # a JSON value replaced by another of a surprising kind
            value = draw(
                st.sampled_from(
                    [
                        b"-1",
                        b"1e400",
                        b"99999999999999999999999",
                        b"null",
                        b"[]",
                        b'"\\ud800"',
                        b"{}",
                    ]
                )
            )
            data[where:where] = value
    return Damaged(bytes(data))


def _plant(home: Path, content: bytes) -> Path:
    directory = home / "sessions"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{SESSION_ID}.jsonl"
    path.write_bytes(content)
    return path


# -- read commands ---------------------------------------------------------------------------


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_read_commands_on_damaged_sessions(session_bytes: bytes, data: st.DataObject) -> None:
    """Every read command on a damaged session: well behaved, and the file is untouched."""
    content = data.draw(mutations(session_bytes), label="session file").content
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path = _plant(home, content)
        for command in (("sessions",), ("sessions", "--json")):
            assert_well_behaved(harness(home, *command))
        for command in READ_COMMANDS:
            outcome = harness(home, command[0], SESSION_ID, *command[1:])
            assert_well_behaved(outcome)
            event(f"{' '.join(command)}: exit {outcome.status}")
        assert path.read_bytes() == content


# -- resume ----------------------------------------------------------------------------------


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_resume_keeps_every_committed_byte(session_bytes: bytes, data: st.DataObject) -> None:
    """`run --session` on a damaged session: well behaved; complete lines are never changed.

    Half the cases keep the session/start line intact, so most runs get past the header
    check and exercise replay, repair and the torn-tail move.
    """
    floor = session_bytes.find(b"\n") + 1 if data.draw(st.booleans(), label="keep header") else 0
    content = data.draw(mutations(session_bytes, floor), label="session file").content
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path = _plant(home, content)
        script = home / "script.json"
        script.write_text(json.dumps({"steps": [{"text": "resumed"}]}), encoding="utf-8")
        outcome = harness(
            home, "run", "--model", f"scripted:{script}", "--session", SESSION_ID, "go on"
        )
        assert_well_behaved(outcome)
        event(f"resume: exit {outcome.status}")
        _assert_committed_kept(path, content)


def _assert_committed_kept(path: Path, content: bytes) -> None:
    """Complete lines are a prefix of the file now; a torn tail was moved aside intact."""
    good = content.rfind(b"\n") + 1
    after = path.read_bytes()
    assert after.startswith(content[:good])
    torn = content[good:]
    if after == content:
        return  # refused, or nothing to do: nothing changed
    if torn:
        asides = list(path.parent.glob(f"{path.name}.torn-*"))
        assert [p.read_bytes() for p in asides] == [torn]


# -- scripted-model files --------------------------------------------------------------------


def _script_bytes() -> bytes:
    return json.dumps({"steps": SCRIPT}, indent=1).encode()


_JSON: Final = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# Tool calls a fuzzed script may make: harmless ones only (bash runs a fixed echo), plus
# names no tool has and arguments of every shape.
_CALLS: Final = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["todo_write", "bash", "no_such_tool", ""]),
        "arguments": st.sampled_from([{"command": "echo fuzz"}, '{"command": "echo fuzz"}'])
        | _JSON
        | st.text(max_size=30),
    }
).filter(lambda call: call["name"] != "bash" or "echo fuzz" in json.dumps(call["arguments"]))
_STEPS: Final = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "text": st.none() | st.text(max_size=30) | _JSON,
            "tool_calls": st.lists(_CALLS, max_size=3) | _JSON,
            "extra": _JSON,
        },
    )
    | _JSON,
    max_size=4,
)
SCRIPTS: Final = mutations(_script_bytes(), fillers=SCRIPT_FILLERS) | _STEPS.map(
    lambda steps: Damaged(json.dumps({"steps": steps}).encode())
)


@FUZZ_SETTINGS
@given(script=SCRIPTS)
def test_fuzz_damaged_scripts(script: Damaged) -> None:
    """`run` with a damaged script: well behaved, and any session it made reads back."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        path = home / "script.json"
        path.write_bytes(script.content)
        outcome = harness(home, "run", "--model", f"scripted:{path}", "go")
        assert_well_behaved(outcome)
        event(f"run: exit {outcome.status}")
        for path in (home / "sessions").glob("*.jsonl"):
            assert path.stat().st_size > 0
            assert_well_behaved(harness(home, "show", path.stem))


# -- a few real processes --------------------------------------------------------------------


def _damaged_samples(original: bytes) -> list[bytes]:
    """Fixed damages, one of each kind, for the subprocess cases."""
    lines = _lines(original)
    middle = len(original) // 2
    return [
        original[:middle],  # torn in the middle of a line
        original[:middle] + b"\x00\xff garbage\n" + original[middle:],
        b"\n".join([*lines[:3], b"x" * HUGE_LINE, *lines[3:]]),
        b"\n".join(lines[1:]),  # no session/start
        bytes(b ^ 0x20 if i % 97 == 0 else b for i, b in enumerate(original)),
    ]


@pytest.mark.parametrize("sample", range(5))
def test_damaged_sessions_through_real_processes(
    session_bytes: bytes, harness_home: Path, tmp_path: Path, sample: int
) -> None:
    """The same properties through the installed `harness` command, for fixed damages."""
    content = _damaged_samples(session_bytes)[sample]
    path = _plant(harness_home, content)
    for command in (("sessions",), ("show", SESSION_ID), ("todos", SESSION_ID)):
        result = run_cli(*command, timeout=HANG_SECONDS)
        assert_well_behaved(Outcome(command, result.returncode, result.stdout, result.stderr, 0))
    assert path.read_bytes() == content
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "resumed"}]}), encoding="utf-8")
    args = ("run", "--model", f"scripted:{script}", "--session", SESSION_ID, "go on")
    result = run_cli(*args, timeout=HANG_SECONDS, env=child_env())
    assert_well_behaved(Outcome(args, result.returncode, result.stdout, result.stderr, 0))
    _assert_committed_kept(path, content)
