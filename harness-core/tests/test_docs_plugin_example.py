"""The plugin docs/plugins.md builds installs, loads and works as written: its tool, and the
command and terminal strip it adds through the host hooks."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from harness_core.cli import main
from harness_core.config import Config
from harness_core.plugins import PluginHost
from harness_core.testing.pytest_plugin import FakeDistribution
from harness_core.tools import ExecContext

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


async def test_documented_plugin_loads_through_its_entry_point(
    fake_distribution: FakeDistribution,
) -> None:
    """The doc's pyproject entry point and module load, and the tool reads its config."""
    pyproject = tomllib.loads(code_blocks("toml")[0])
    entry_points = pyproject["project"]["entry-points"]["harness.plugins"]
    module = code_blocks("python")[0]
    fake_distribution(
        pyproject["project"]["name"],
        entry_points,
        {"harness_tool_shout/__init__.py": module},
        version=pyproject["project"]["version"],
    )
    config = Config({"plugins": {"shout": {"suffix": "?"}}}, env={"HARNESS_SHOUT_SUFFIX": '"!!"'})
    host = PluginHost(config)
    records = {r.name: r for r in host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "shout"})}
    host.finish_loading()
    assert records["shout"].status == "loaded"
    assert records["shout"].tools == ["shout"]
    result = await host.tools.execute("shout", '{"text": "hi"}', ExecContext())
    assert (result.text, result.data) == ("HI!!", {"length": 2})


async def test_documented_test_snippet_passes(fake_distribution: FakeDistribution) -> None:
    """The doc's pytest example runs green against the documented plugin."""
    fake_distribution(
        "harness-tool-shout", {}, {"harness_tool_shout/__init__.py": code_blocks("python")[0]}
    )
    namespace: dict[str, object] = {}
    test_snippet = next(b for b in code_blocks("python") if "async def test_shout" in b)
    exec(compile(test_snippet, str(DOC), "exec"), namespace)
    host = PluginHost(Config({}, env={}))
    added: list[str] = []

    def register(plugin: object) -> None:
        added.append(host.add(plugin).status)

    await namespace["test_shout"](host, register)  # type: ignore[operator]
    assert added == ["loaded"]


# -- the command and the strip ----------------------------------------------------------------

SESSION_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")


def block_after(label: str) -> str:
    """The first code block after the first line of the doc that contains `label`."""
    after = DOC.read_text(encoding="utf-8").split(label, 1)[1]
    return re.findall(r"```\w*\n(.*?)```", after, re.S)[0]


def shell_steps(block: str) -> list[tuple[str, list[str]]]:
    """The `$ ` commands of a shell block, each with the output lines shown under it."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def install_shout_with_hosts(fake_distribution: FakeDistribution) -> None:
    """The documented plugin with its command, strip and both entry-point groups."""
    pyproject = tomllib.loads(code_blocks("toml")[0])["project"]
    module = code_blocks("python")[0] + "\n\n" + block_after("Add the two hooks to")
    info = fake_distribution(
        pyproject["name"],
        pyproject["entry-points"]["harness.plugins"],
        {
            "harness_tool_shout/__init__.py": module,
            "harness_tool_shout/_hosts.py": block_after("`src/harness_tool_shout/_hosts.py`:"),
        },
        version=pyproject["version"],
    )
    declared = tomllib.loads(block_after("declare the command in `pyproject.toml`"))
    with (info / "entry_points.txt").open("a", encoding="utf-8") as entry_points:
        for group, entries in declared["project"]["entry-points"].items():
            entry_points.write(f"[{group}]\n")
            entry_points.writelines(f"{name} = {value}\n" for name, value in entries.items())


@pytest.fixture
def workdir(
    fake_distribution: FakeDistribution, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The documented plugin installed, and a working directory for the scripts."""
    install_shout_with_hosts(fake_distribution)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_documented_command_and_strip_run_in_harness(
    workdir: Path,
    harness_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The doc's turn prints the strip shown, `harness shouts` the shouts, `--help` lists the
    command, and with the plugin disabled the command says where it comes from."""
    (workdir / "shout.json").write_text(block_after("A scripted turn that shouts"))
    session_id = "no session yet"
    for command, shown in shell_steps(block_after("run off a terminal")):
        words = shlex.split(SESSION_ID.sub(session_id, command))
        with monkeypatch.context() as env:
            while "=" in words[0]:  # VAR=value before the command
                env.setenv(*words.pop(0).split("=", 1))
            assert words[0] == "harness", command
            status = main(words[1:])
        out, err = capsys.readouterr()
        session_id = min(p.stem for p in (harness_home / "sessions").glob("*.jsonl"))
        assert SESSION_ID.sub("<id>", out + err).splitlines() == [
            SESSION_ID.sub("<id>", line) for line in shown
        ], command
        assert (status != 0) == shown[-1].startswith("harness: error:"), command
    assert main(["--help"]) == 0
    assert "added by harness-tool-shout (harness shouts --help)" in capsys.readouterr().out


def test_documented_command_error_is_one_line(
    workdir: Path, harness_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a session without shouts the doc's CommandError is one line with status 1."""
    (workdir / "quiet.json").write_text('{"steps": [{"text": "Hello."}]}')
    assert main(["run", "--model", "scripted:quiet.json", "Say hello"]) == 0
    (session,) = (p.stem for p in (harness_home / "sessions").glob("*.jsonl"))
    capsys.readouterr()
    assert main(["shouts", session]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"harness: error: session {session} has no shouts\n")
