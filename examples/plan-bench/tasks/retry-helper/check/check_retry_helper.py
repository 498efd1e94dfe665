"""Acceptance check: retry's attempts, delays and errors; fetch_with_retry uses it; tests for
both that pass."""

import subprocess
import sys
import unittest
from pathlib import Path

from netutil.fetch import fetch_with_retry
from netutil.retry import retry


class Flaky:
    """Fails with each of `errors` in turn, then answers `value`."""

    def __init__(self, errors, value="ok"):
        self.errors, self.value, self.calls = list(errors), value, 0

    def __call__(self, *args):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


class Check(unittest.TestCase):
    def test_success_after_failures_waits_doubling(self):
        waits = []
        flaky = Flaky([OSError("a"), OSError("b")])
        self.assertEqual(retry(flaky, attempts=4, delay=0.5, sleep=waits.append), "ok")
        self.assertEqual((flaky.calls, waits), (3, [0.5, 1.0]))

    def test_the_last_error_when_every_attempt_fails(self):
        waits = []
        flaky = Flaky([KeyError("1"), KeyError("2"), KeyError("3")])
        with self.assertRaises(KeyError) as raised:
            retry(flaky, attempts=3, delay=1, sleep=waits.append)
        self.assertEqual(raised.exception.args, ("3",))
        self.assertEqual((flaky.calls, waits), (3, [1, 2]))

    def test_other_errors_propagate_at_once(self):
        waits = []
        flaky = Flaky([TypeError("no")])
        with self.assertRaises(TypeError):
            retry(flaky, attempts=5, delay=1, retry_on=(ConnectionError,), sleep=waits.append)
        self.assertEqual((flaky.calls, waits), (1, []))

    def test_attempts_must_be_positive(self):
        with self.assertRaises(ValueError):
            retry(Flaky([]), attempts=0, delay=1, sleep=lambda s: None)
        self.assertEqual(retry(Flaky([]), attempts=1, delay=1, sleep=lambda s: None), "ok")

    def test_fetch_with_retry(self):
        waits = []
        get = Flaky([ConnectionError(), ConnectionError()], b"body")
        self.assertEqual(fetch_with_retry(get, "http://x", sleep=waits.append), b"body")
        self.assertEqual(waits, [0.5, 1.0])
        get = Flaky([ConnectionError()] * 3, b"never")
        with self.assertRaises(ConnectionError):
            fetch_with_retry(get, "http://x", sleep=waits.append)
        self.assertEqual(get.calls, 3)
        get = Flaky([ValueError()], b"never")
        with self.assertRaises(ValueError):
            fetch_with_retry(get, "http://x", sleep=waits.append)
        self.assertEqual(get.calls, 1)

    def test_the_tests_cover_both_and_pass(self):
        tests = "".join(path.read_text() for path in Path("tests").glob("test*.py"))
        self.assertIn("retry(", tests)
        self.assertIn("fetch_with_retry", tests)
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
