"""Acceptance check: --top and --min-length work from the command line, bad values are usage
errors, the README documents both, and the tests cover them and pass."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

TEXT = "the cat and the dog and THE bird; a cat is a cat. I am\n" * 2 + "zebra " * 13


def run(*args):
    return subprocess.run(
        [sys.executable, "-B", "wordfreq.py", *args], capture_output=True, text=True
    )


class Check(unittest.TestCase):
    def setUp(self):
        self.home = tempfile.TemporaryDirectory()
        self.file = str(Path(self.home.name) / "text.txt")
        Path(self.file).write_text(TEXT)

    def tearDown(self):
        self.home.cleanup()

    def test_the_default_is_unchanged(self):
        ran = run(self.file)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        lines = ran.stdout.splitlines()
        self.assertEqual(len(lines), 10)
        self.assertEqual(lines[:4], ["zebra 13", "cat 6", "the 6", "a 4"])

    def test_top(self):
        ran = run("--top", "2", self.file)
        self.assertEqual(ran.stdout.splitlines(), ["zebra 13", "cat 6"])

    def test_min_length(self):
        ran = run(self.file, "--min-length", "4", "--top", "3")
        self.assertEqual(ran.stdout.splitlines(), ["zebra 13", "bird 2"])
        ran = run(self.file, "--min-length", "1", "--top", "20")
        self.assertIn("i 2", ran.stdout.splitlines())

    def test_bad_values_are_usage_errors(self):
        for bad in ("0", "-3", "many"):
            ran = run("--top", bad, self.file)
            self.assertEqual(ran.returncode, 2, bad)
            self.assertIn("usage:", ran.stderr)

    def test_readme_and_tests(self):
        readme = Path("README.md").read_text()
        self.assertIn("--top", readme)
        self.assertIn("--min-length", readme)
        tests = "".join(path.read_text() for path in Path("tests").glob("test*.py"))
        self.assertIn("--top", tests)
        self.assertIn("--min-length", tests)
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
