"""Acceptance check: every page of several lists holds the right items, counts and links."""

import subprocess
import sys
import unittest
from pathlib import Path

from pager import page, page_count
from pager.links import navigation


class Check(unittest.TestCase):
    def test_every_item_is_on_exactly_one_page(self):
        for total in range(0, 12):
            for size in range(1, 5):
                items = list(range(total))
                count = page_count(total, size)
                self.assertEqual(count, max(1, -(-total // size)), (total, size))
                seen = [i for n in range(1, count + 1) for i in page(items, n, size).items]
                self.assertEqual(seen, items, (total, size))

    def test_links_at_both_ends_and_between(self):
        items = list(range(7))
        self.assertEqual(navigation(page(items, 1, 2)), "[1] 2 3 4 »")
        self.assertEqual(navigation(page(items, 2, 2)), "« 1 [2] 3 4 »")
        self.assertEqual(navigation(page(items, 4, 2)), "« 1 2 3 [4]")
        self.assertEqual(navigation(page([], 1, 5)), "[1]")
        self.assertIsNone(page(items, 4, 2).next)

    def test_missing_pages(self):
        for number in (0, 5):
            with self.assertRaises(ValueError):
                page(list(range(7)), number, 2)

    def test_the_tests_are_kept_and_pass(self):
        self.assertIn('"« 1 2 3 [4]"', Path("tests/test_pager.py").read_text())
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertIn("Ran 5 tests", ran.stderr)
