"""The import-layer contracts in pyproject.toml: a new upward import fails, naming the import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the workspace contracts, on the harness_core found first on the path."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    command = [Path(sys.executable).with_name("lint-imports"), "--config", ROOT / "pyproject.toml"]
    return subprocess.run(
        [*command, "--no-cache"], cwd=package_parent, env=env, capture_output=True, text=True
    )


CIRCLES = {
    # module that imports upward, the import, what lint-imports says: each was a circle once.
    "tool->loop": (
        "tools/_tool.py",
        "from ..loop import Agent",
        "harness_core.tools._tool -> harness_core.loop",
    ),
    "host->builtins": (
        "plugins/_host.py",
        "from .. import builtins",
        "harness_core.plugins._host -> harness_core.builtins",
    ),
    "model->presets": (
        "models/openai_compat.py",
        "from ._presets import PRESETS",
        "harness_core.models.openai_compat -> harness_core.models._presets",
    ),
}


@pytest.mark.parametrize("circle", CIRCLES)
def test_an_upward_import_breaks_a_contract_naming_it(circle: str, tmp_path: Path) -> None:
    """Closing one of the import circles issue 9 cut again fails, naming the import."""
    module, line, reported = CIRCLES[circle]
    copy = tmp_path / "harness_core"
    shutil.copytree(ROOT / "harness-core/src/harness_core", copy)
    source = copy / module
    source.write_text(source.read_text() + f"\n{line}\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert reported in result.stdout


def test_the_architecture_doc_shows_the_layers_contract() -> None:
    """docs/architecture.md lists the layers exactly as the checked contract states them."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        c["layers"] for c in contracts["tool"]["importlinter"]["contracts"] if c["id"] == "layers"
    ]
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    shown = doc.split("## Layers", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert shown.splitlines() == layers
