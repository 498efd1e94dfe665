"""Suite-wide settings: dev-mode log invariants on, a throwaway HARNESS_HOME per test, the
run's own PostgreSQL, and no skips but the live-key tests'."""

from __future__ import annotations

import os
import signal
from collections.abc import Generator, Iterator
from pathlib import Path
from types import FrameType

import pytest
from harness_store_postgres.testing import CLUSTER, Cluster

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


def pytest_configure(config: pytest.Config) -> None:
    """Unless HARNESS_TEST_POSTGRES names a server, the run gets a PostgreSQL cluster of its
    own: its directory is made here, in the main process (xdist's workers inherit the path),
    the first test that needs it starts it, and it is stopped and deleted when the run ends,
    on Ctrl-C and SIGTERM too."""
    if hasattr(config, "workerinput") or os.environ.get("HARNESS_TEST_POSTGRES"):
        return
    if os.environ.get(CLUSTER):  # a pytest run by a test: the outer run's cluster
        return
    cluster = Cluster.create()
    os.environ[CLUSTER] = str(cluster.directory)
    config.add_cleanup(cluster.remove)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # pytest then ends the run as on Ctrl-C, cleanups included


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skipped test fails, unless it is a live-key test: the suite brings every service and
    package it needs (./scripts/test), so a skip could only hide a test that never ran."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and not item.get_closest_marker("live"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, but only the live-key tests may skip: {reason}"
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests (marked slow) first, in their order: on a core or two the run then
    ends on short tests that keep every process busy, not on one long test that holds up
    the rest."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = len(terminalreporter.stats.get("skipped", []))
    if skipped:
        terminalreporter.write_line(
            f"{skipped} skipped: the live-key tests, which run with HARNESS_LIVE_TESTS=1 and a "
            "provider's key (docs/models.md)"
        )
