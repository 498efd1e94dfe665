"""Acceptance check: the bugs are fixed, and the shipped tests are intact and pass."""

import subprocess
import sys
import unittest
from pathlib import Path

from textstats import mean, median, top_words, word_count


class Check(unittest.TestCase):
    def test_median(self):
        self.assertEqual(median([5]), 5)
        self.assertEqual(median([7, 1, 4]), 4)
        self.assertEqual(median([1, 2, 3, 4]), 2.5)
        self.assertEqual(median([10, 0]), 5)
        with self.assertRaises(ValueError):
            median([])

    def test_mean(self):
        self.assertEqual(mean([2, 4]), 3)

    def test_word_count(self):
        self.assertEqual(word_count(""), 0)
        self.assertEqual(word_count("a  b\n\nc\td "), 4)

    def test_top_words(self):
        self.assertEqual(
            top_words("Dog cat dog CAT bird dog", 3), [("dog", 3), ("cat", 2), ("bird", 1)]
        )
        self.assertEqual(top_words("z y x", 2), [("x", 1), ("y", 1)])

    def test_the_shipped_tests_are_kept_and_pass(self):
        shipped = Path("tests/test_textstats.py").read_text()
        for name in ("test_median_of_an_even_count", "test_word_count_ignores_extra_whitespace"):
            self.assertIn(name, shipped)
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
