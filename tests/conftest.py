"""Fixtures shared by the cross-distribution tests."""

from __future__ import annotations

import pytest
from test_cli_support import npm_binary

ACPX_VERSION = "0.19.1"

# Reference solutions of examples/plan-bench: their tests/ are the tasks' own, not the suite's.
collect_ignore_glob = ["data/*"]


@pytest.fixture(scope="session")
def acpx() -> str:
    """The `acpx` headless ACP client from npm."""
    return npm_binary(f"acpx@{ACPX_VERSION}", "acpx", "the acpx client test")
