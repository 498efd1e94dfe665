"""Acceptance check: the TOML file with the renamed keys and real types, no INI left, and a
loader that reads TOML (the shipped file and any other)."""

import subprocess
import sys
import tempfile
import tomllib
import unittest
from pathlib import Path

from app.settings import Settings, load

EXPECTED = {
    "server": {"host": "0.0.0.0", "port": 8080, "workers": 4},
    "database": {"url": "postgresql://app@db.internal/app", "pool_size": 10},
    "features": {"cache": True, "beta_banner": False},
}


class Check(unittest.TestCase):
    def test_the_toml_file(self):
        self.assertFalse(Path("config/app.ini").exists())
        with open("config/app.toml", "rb") as handle:
            data = tomllib.load(handle)
        self.assertEqual(data, EXPECTED)
        self.assertIs(data["features"]["cache"], True)

    def test_the_loader_reads_the_shipped_file(self):
        self.assertEqual(
            load(),
            Settings("0.0.0.0", 8080, 4, "postgresql://app@db.internal/app", 10, True, False),
        )

    def test_the_loader_reads_another_toml_file(self):
        with tempfile.TemporaryDirectory() as home:
            path = Path(home) / "other.toml"
            path.write_text(
                '[server]\nhost = "::1"\nport = 1\nworkers = 2\n'
                '[database]\nurl = "sqlite://"\npool_size = 3\n'
                "[features]\ncache = false\nbeta_banner = true\n"
            )
            self.assertEqual(load(path), Settings("::1", 1, 2, "sqlite://", 3, False, True))

    def test_no_configparser_left(self):
        source = Path("app/settings.py").read_text()
        self.assertNotIn("configparser", source)
        self.assertIn("tomllib", source)

    def test_the_tests_pass(self):
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
