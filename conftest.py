"""Suite-wide settings: dev-mode log invariants on, and a throwaway HARNESS_HOME per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Set before any test imports harness code, and inherited by every subprocess a test starts.
os.environ["HARNESS_DEV"] = "1"
for variable in ("HARNESS_LOAD_PLUGINS", "HARNESS_DISABLE_PLUGINS", "HARNESS_STRICT_PLUGINS"):
    os.environ.pop(variable, None)


@pytest.fixture(autouse=True)
def harness_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own HARNESS_HOME and never reads the developer's config."""
    home = tmp_path / "harness-home"
    monkeypatch.setenv("HARNESS_HOME", str(home))
    monkeypatch.delenv("HARNESS_CONFIG", raising=False)
    monkeypatch.delenv("HARNESS_MODEL", raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A session's working directory, `ws`, beside a directory outside it, `outside` (the
    sandbox tests write to both)."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "ws"


@pytest.fixture(autouse=True)
def process_wide_state() -> Iterator[None]:
    """A test that runs the CLI in-process installs the sandbox and the secrets the way a
    `harness` process does, once for the process. Back to the defaults after every test (a
    module-scoped fixture may have installed them before this one ran), so no later test's
    tools run inside another test's sandbox, whose private /tmp hides tmp_path."""
    yield
    from harness_core import secret
    from harness_core.tools import sandbox

    sandbox.install(sandbox.Sandbox())
    secret._installed = None
