"""The import-layer contract in pyproject.toml: a new upward import fails, naming the import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the workspace contracts, on the harness_core found first on the path."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    command = [Path(sys.executable).with_name("lint-imports"), "--config", ROOT / "pyproject.toml"]
    return subprocess.run(
        [*command, "--no-cache"], cwd=package_parent, env=env, capture_output=True, text=True
    )


def test_a_tool_importing_the_loop_breaks_the_layers(tmp_path: Path) -> None:
    """A tool that imports the loop again (the circle issue 9 cut) fails with that import."""
    copy = tmp_path / "harness_core"
    shutil.copytree(ROOT / "harness-core/src/harness_core", copy)
    tool = copy / "tools" / "_tool.py"
    tool.write_text(tool.read_text() + "\nfrom ..loop import Agent\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "harness_core.tools is not allowed to import harness_core.loop" in result.stdout
    assert "harness_core.tools._tool -> harness_core.loop" in result.stdout
