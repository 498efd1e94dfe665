"""Fixtures shared by the cross-distribution tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ACPX_VERSION = "0.19.1"


@pytest.fixture(scope="session")
def acpx() -> str:
    """The `acpx` headless ACP client from npm, installed once into the user's cache."""
    prefix = Path.home() / ".cache" / "harness-tests" / f"acpx-{ACPX_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "acpx"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: the acpx client test needs it")
        installed = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"acpx@{ACPX_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if installed.returncode != 0 or not binary.exists():
            pytest.skip(
                f"npm could not install acpx@{ACPX_VERSION}: {installed.stderr.strip()[-300:]}"
            )
    return str(binary)
