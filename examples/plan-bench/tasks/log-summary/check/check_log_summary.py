"""Acceptance check: summary.json holds the figures of logs/server.log (counted once, by hand,
when the log was written: 54 records, the traceback lines under the three deadlocks are
no records and no errors)."""

import json
import unittest
from pathlib import Path


class Check(unittest.TestCase):
    def setUp(self):
        self.summary = json.loads(Path("summary.json").read_text())

    def test_counts(self):
        self.assertEqual(self.summary["records"], 54)
        self.assertEqual(
            self.summary["levels"], {"INFO": 30, "DEBUG": 6, "WARNING": 5, "ERROR": 13}
        )
        self.assertEqual(self.summary["errors_by_component"], {"db": 8, "http": 3, "jobs": 2})

    def test_first_and_last(self):
        self.assertEqual(self.summary["first"], "2026-03-01T08:00:57")
        self.assertEqual(self.summary["last"], "2026-03-01T08:41:58")

    def test_top_errors(self):
        self.assertEqual(
            self.summary["top_errors"],
            [
                {"message": "connection reset by peer", "count": 5},
                {"message": "deadlock detected", "count": 3},
                {"message": "upstream timeout /payments", "count": 3},
            ],
        )

    def test_the_log_is_untouched(self):
        self.assertEqual(len(Path("logs/server.log").read_text().splitlines()), 63)
