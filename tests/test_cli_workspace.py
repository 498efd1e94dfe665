"""The workspace is never a system place: run, chat, serve and acp refuse a working directory
that is /, holds /tmp or /dev/shm, or lies in /proc, in one line, before anything runs; and
the sandbox's clean-up deletes nothing of the host's even when that check is skipped.

Every case that could delete files runs in a mount namespace of its own whose /tmp and
/dev/shm are fresh tmpfs holding canary files (the test's own directory bound back in at its
path): never on the machine's real /tmp. Those cases need root, as CI runs them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from acp import RequestError
from harness_core.tools.sandbox import probe
from test_acp import bridge
from test_cli_support import HARNESS, bash_call, child_env, session_ids, write_script

UNAVAILABLE = probe()
needs_bwrap = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no sandbox: {UNAVAILABLE}")
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a private mount namespace needs root and unshare(1)",
)

# The start of a shell script run as `unshare --mount --propagation private sh -c ...`: the
# test's directory KEEP (under the real /tmp) is opened first, then fresh tmpfs cover /tmp and
# /dev/shm, KEEP is bound back at its path from the open descriptor, and canaries are laid.
# The repository (the harness under test: its virtual environment and sources) is kept the
# same way, for a clone that lies under /tmp.
PRIVATE_TMP = r"""
set -e
exec 3< "$KEEP"
exec 4< "$REPO"
mount -t tmpfs canary-tmp /tmp
mount -t tmpfs canary-shm /dev/shm
mkdir -p "$KEEP" "$REPO"
mount --no-canonicalize --bind /proc/self/fd/3 "$KEEP"
mount --no-canonicalize --bind /proc/self/fd/4 "$REPO"
exec 3<&- 4<&-
mkdir /tmp/theirs
echo /tmp/canary > /tmp/canary
echo /tmp/theirs/canary > /tmp/theirs/canary
echo /dev/shm/canary > /dev/shm/canary
""".replace("$REPO", str(Path(__file__).resolve().parents[1]))
# RUN runs in WHERE; then its status, then each canary still there.
NAMESPACE = f"""{PRIVATE_TMP}
cd "$WHERE"
set +e
sh -c "$RUN" > "$KEEP/run.out" 2> "$KEEP/run.err" < "$KEEP/run.in"
echo $?
cat /tmp/canary /tmp/theirs/canary /dev/shm/canary 2>/dev/null
true
"""
CANARIES = ["/tmp/canary", "/tmp/theirs/canary", "/dev/shm/canary"]


@dataclass(frozen=True)
class Ran:
    status: int
    stdout: str
    stderr: str
    canaries: list[str]  # those left after the run


def in_private_tmp(tmp_path: Path, where: str, run: str, stdin: str = "") -> Ran:
    """`run` (a shell line) in `where`, inside a private /tmp and /dev/shm with canaries."""
    (tmp_path / "run.in").write_text(stdin)
    env = child_env({"KEEP": str(tmp_path), "WHERE": where, "RUN": run})
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines and lines[0].isdigit(), done.stdout + done.stderr
    return Ran(
        int(lines[0]),
        (tmp_path / "run.out").read_text(),
        (tmp_path / "run.err").read_text(),
        lines[1:],
    )


def one_line_refusal(ran: Ran, directory: str) -> str:
    """The one `harness: error:` line refusing `directory` as the workspace."""
    assert ran.status != 0, ran.stdout
    lines = ran.stderr.splitlines()
    assert len(lines) == 1, ran.stderr
    assert lines[0].startswith(
        f"harness: error: the working directory {directory} cannot be the sandbox's workspace: "
    ), lines[0]
    return lines[0]


def probing(tmp_path: Path, command: str) -> str:
    """A scripted turn with one bash call, `command`."""
    return write_script(
        tmp_path / "probe.json", [{"tool_calls": [bash_call(command)]}, {"text": "done"}]
    )


@needs_root
@needs_bwrap
@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("/tmp", "it is /tmp"),
        ("/", "it is the whole file system"),
        ("/dev/shm", "it is /dev/shm"),
        ("/var", "it holds /var/tmp"),
    ],
)
def test_run_in_a_shared_place_is_refused_and_deletes_nothing(
    tmp_path: Path, harness_home: Path, where: str, why: str
) -> None:
    """`cd /tmp && harness run --sandbox workspace` once emptied the host's /tmp (from /,
    /dev/shm too): now one line, no session, every canary still there."""
    model = probing(tmp_path, "echo ran")
    ran = in_private_tmp(tmp_path, where, f"{HARNESS} run --sandbox workspace --model {model} go")
    assert why in one_line_refusal(ran, where)
    assert ran.canaries == CANARIES
    assert session_ids(harness_home) == []


@needs_root
@needs_bwrap
def test_a_workspace_in_proc_sys_is_refused(tmp_path: Path, harness_home: Path) -> None:
    """/proc/sys/kernel as the workspace would be bound writable over the read-only /proc,
    re-opening core_pattern: refused before any command runs (the probe only asks)."""
    model = probing(tmp_path, "test -w core_pattern && echo writable")
    run = f"{HARNESS} run --sandbox workspace --model {model} go"
    ran = in_private_tmp(tmp_path, "/proc/sys/kernel", run)
    assert "it lies in /proc" in one_line_refusal(ran, "/proc/sys/kernel")
    assert "writable" not in ran.stdout
    assert session_ids(harness_home) == []


@needs_root
@needs_bwrap
def test_chat_in_tmp_is_refused(tmp_path: Path, harness_home: Path) -> None:
    model = probing(tmp_path, "echo ran")
    run = f"{HARNESS} chat --sandbox workspace --model {model}"
    ran = in_private_tmp(tmp_path, "/tmp", run, stdin="go\n")
    one_line_refusal(ran, "/tmp")
    assert ran.canaries == CANARIES


@needs_root
@needs_bwrap
def test_a_session_made_in_tmp_is_refused_a_sandboxed_turn(
    tmp_path: Path, harness_home: Path
) -> None:
    """A session started in /tmp with the sandbox off, resumed with it on from elsewhere:
    its turn is refused (the workspace is the session's directory, not the caller's)."""
    first = write_script(tmp_path / "first.json", [{"text": "hello"}])
    ran = in_private_tmp(tmp_path, "/tmp", f"{HARNESS} run --sandbox off --model {first} hi")
    assert ran.status == 0, ran.stderr
    [session] = session_ids(harness_home)
    model = probing(tmp_path, "echo ran")
    run = f"{HARNESS} run --session {session} --sandbox workspace --model {model} go"
    ran = in_private_tmp(tmp_path, str(tmp_path), run)
    one_line_refusal(ran, "/tmp")
    assert ran.canaries == CANARIES
    assert "ran" not in ran.stdout


@needs_root
@needs_bwrap
def test_serve_in_tmp_is_refused_at_start(tmp_path: Path, harness_home: Path) -> None:
    """Every session the page makes would run its tools in /tmp: refused before it listens."""
    ran = in_private_tmp(tmp_path, "/tmp", f"{HARNESS} serve --sandbox workspace --port 0")
    one_line_refusal(ran, "/tmp")
    assert ran.stdout == ""


@needs_bwrap
def test_acp_refuses_a_session_in_tmp(tmp_path: Path, harness_home: Path) -> None:
    """session/new in /tmp is an error naming it; no session is made (nothing runs, so this
    needs no private /tmp)."""

    model = probing(tmp_path, "echo ran")

    async def ask() -> str:
        async with bridge(tmp_path, "--sandbox", "workspace", "--model", model) as (conn, _):
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd="/tmp", mcp_servers=[])
        return str(refused.value.data or refused.value)

    assert "the working directory /tmp cannot be the sandbox's workspace" in anyio.run(ask)
    assert session_ids(harness_home) == []


# What no host does (they all check first): the check skipped, the sandbox started over /tmp.
BYPASS = """
import anyio
from harness_core.tools import ExecContext, sandbox
from harness_core.tools.bash import BashArgs, BashTool
sandbox.workspace_problem = lambda path: None
sandbox.install(sandbox.Sandbox("workspace"))
print(anyio.run(BashTool().execute, BashArgs(command="echo ran"), ExecContext()).text)
"""


@needs_root
@needs_bwrap
@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("/tmp", "sandbox server: /tmp is not the sandbox's own"),
        # Bound over /dev too, and so over the loader the server starts through.
        ("/", "bwrap: execvp /dev/.harness-sandbox-loader: No such file or directory"),
    ],
)
def test_the_clean_up_deletes_nothing_of_the_host_even_unchecked(
    tmp_path: Path, where: str, why: str
) -> None:
    """The sandbox's clean-up empties only the tmpfs mounts it made: with the workspace
    bound over its /tmp the server finds its own mounts covered and serves nothing, rather
    than empty what covers them."""
    (tmp_path / "bypass.py").write_text(BYPASS)
    ran = in_private_tmp(tmp_path, where, f"{sys.executable} {tmp_path / 'bypass.py'}")
    assert ran.canaries == CANARIES
    assert "ran\n" not in ran.stdout
    assert why in ran.stdout
