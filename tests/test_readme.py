"""Every command the READMEs show is run here, in order, and the output they show is checked.

A `console` block is a shell session: `$ COMMAND` lines and, under each, the output it
prints. Each command runs through bash with this workspace's `.venv/bin` first on PATH, so
`harness` is the console script under test. Outputs are compared after masking what differs
from run to run (session ids, timestamps, temporary paths, load times). The demo's terminal
screen (the block after `<!-- screen: harness demo -->`) is checked against a real run on a
pseudo-terminal.

What a reader's machine has and a test must not touch is stood in for:
- Until `$ export HARNESS_HOME=...`, HARNESS_HOME is unset and the per-user data directory
  (its default) is a fresh one; the export switches to another fresh directory.
- `$ export *_API_KEY=...` sets a test key and `$ export *_MODEL=...` a stand-in model name;
  `openai:` and `deepseek:` requests go to the loopback OpenAI-compatible server (real SDK,
  real HTTP), which answers each one.
- `./scripts/test` is what CI runs (.ci/run), so it is not run again from inside the suite.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pytest
from harness_core.config import Config
from harness_core.testing.openai_server import OpenAIServer, reply
from test_cli_support import REPO, SANDBOX_OFF, Terminal, child_env

READMES: Final = (REPO / "README.md", REPO / "harness-core" / "README.md")
SCREEN_MARK: Final = "<!-- screen: harness demo -->"

MASKS: Final = (
    (re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}"), "<session>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"), "<ts>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "<time>"),
    (re.compile(r"\S*/harness-demo-[A-Za-z0-9_]+"), "<demo-home>"),
    (re.compile(r"loaded in \d+\.\d ms"), "loaded in <n> ms"),
    # The demo's sandbox, which a machine without bubblewrap lacks (and then warns).
    (re.compile(f"{re.escape(SANDBOX_OFF)}.*\n?"), ""),
    (
        re.compile(r"bash runs (in the workspace sandbox|unsandboxed \(see above\))"),
        "bash runs <sandbox>",
    ),
)
SESSION_ID: Final = MASKS[0][0]


def mask(text: str) -> list[str]:
    for pattern, placeholder in MASKS:
        text = pattern.sub(placeholder, text)
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@dataclass
class Step:
    command: str
    output: list[str] = field(default_factory=list)


def console_steps(readme: Path) -> list[Step]:
    """The `$ ` commands of every ```console block, each with the output shown under it."""
    steps: list[Step] = []
    inside = False
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = line == "```console"
        elif inside and line.startswith("$ "):
            steps.append(Step(line[2:]))
        elif inside:
            steps[-1].output.append(line)
    return steps


def screen_block(readme: Path) -> list[str]:
    """The text block that follows the screen marker."""
    text = readme.read_text(encoding="utf-8")
    after = text.split(SCREEN_MARK, 1)[1].split("```text\n", 1)[1]
    return after.split("\n```", 1)[0].splitlines()


class Shell:
    """Runs README commands one after another, keeping what `export` changes."""

    def __init__(self, tmp_path: Path, server: OpenAIServer) -> None:
        self.tmp_path = tmp_path
        self.server = server
        self.env = child_env(
            {
                "PATH": f"{Path(sys.executable).parent}:{child_env()['PATH']}",
                "HARNESS_HOME": None,  # a newcomer has not set it
                "OPENAI_BASE_URL": server.base_url,
                "DEEPSEEK_BASE_URL": server.base_url,
                "UV": None,
                "TMPDIR": str(tmp_path),
            }
        )

    def run(self, step: Step) -> None:
        command = step.command
        if command.startswith("export "):
            self._export(command.removeprefix("export "))
            return
        if command == "./scripts/test":
            assert (REPO / ".ci" / "run").read_text().rstrip().endswith("exec ./scripts/test")
            return
        env = dict(self.env)
        if not command.startswith("./scripts/"):
            # The per-user data directory (HARNESS_HOME's default) of a stand-in user. Not
            # for the scripts: uv keeps its own data under XDG_DATA_HOME.
            env["XDG_DATA_HOME"] = str(self.tmp_path / "xdg")
        command = SESSION_ID.sub(lambda _: self.newest_session(), command)
        if self._asks_a_provider(command, env):
            self.server.expect(reply("(an answer from the loopback test server)"))
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        # Without pipefail, `harness ... | head` reports head's status, as a reader's shell
        # would; a failing harness still shows, as its error line on stderr.
        shown_error = any(line.startswith("harness: error:") for line in step.output)
        assert (result.returncode != 0) == shown_error, (command, result.stdout, result.stderr)
        if step.output:
            assert mask(result.stdout + result.stderr) == mask("\n".join(step.output)), command

    def _export(self, assignment: str) -> None:
        name, _, _ = assignment.partition("=")
        if name == "HARNESS_HOME":
            self.env[name] = str(self.tmp_path / "exported-home")
        elif name.endswith("_API_KEY"):
            self.env[name] = "sk-test"
        elif name.endswith("_MODEL"):
            self.env[name] = "stand-in-model"
        else:
            raise AssertionError(f"the README exports {name}; teach this test what it means")

    @staticmethod
    def _asks_a_provider(command: str, env: dict[str, str]) -> bool:
        words = shlex.split(command)
        for provider in ("openai", "deepseek"):
            if any(w.startswith(f"{provider}:") for w in words):
                return f"{provider.upper()}_API_KEY" in env
        return False

    def newest_session(self) -> str:
        home = Path(self.env.get("HARNESS_HOME") or self.tmp_path / "xdg" / "harness")
        ids = sorted(p.stem for p in (home / "sessions").glob("*.jsonl"))
        assert ids, f"a README command names a session, but {home} has none yet"
        return ids[-1]


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_readme_command_runs_with_the_output_shown(
    readme: Path, tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """Each `$` line runs in order; it fails exactly when it shows an error; output matches."""
    steps = console_steps(readme)
    assert steps, f"{readme} shows no commands"
    shell = Shell(tmp_path, openai_server)
    for step in steps:
        shell.run(step)


def test_the_quickstart_is_exactly_two_commands() -> None:
    """The first console block is the quickstart: the demo, then the tests."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    quickstart = text.split("## Quickstart", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    assert quickstart.splitlines() == ["$ ./scripts/demo", "$ ./scripts/test"]


def test_the_demo_screen_shown_is_the_real_one(tmp_path: Path) -> None:
    """The README's demo screen is what a terminal shows after `./scripts/demo`."""
    terminal = Terminal(
        "demo",
        "--fast",
        columns=200,
        env={"HARNESS_HOME": None, "UV": "uv", "TMPDIR": str(tmp_path)},
    )
    assert terminal.wait() == 0, terminal.text
    assert mask(terminal.text) == mask("\n".join(screen_block(REPO / "README.md")))


def test_the_config_example_is_accepted(tmp_path: Path) -> None:
    """The README's config.toml loads, and every plugin accepts its section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    toml = text.split("```toml\n", 1)[1].split("```", 1)[0]
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(toml, encoding="utf-8")
    config = Config.load(home, env={})
    assert config.get("model") == "deepseek:MODEL"
    result = subprocess.run(
        ["harness", "plugins", "--json"],
        env=child_env(
            {"HARNESS_HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert '"status": "rejected"' not in result.stdout


def test_the_embedding_example_prints_what_it_says(tmp_path: Path) -> None:
    """harness-core/README.md's Python example runs and prints the output shown under it."""
    text = (REPO / "harness-core" / "README.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    shown = text.split("It prints:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=child_env({"TMPDIR": str(tmp_path)}),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown
