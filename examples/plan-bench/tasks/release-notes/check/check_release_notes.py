"""Acceptance check: 1.5.0 (two features, no breaking change) in both files, and its
section on top of the changelog with the features and fixes in commit order."""

import tomllib
import unittest
from pathlib import Path

SECTION = """## 1.5.0

### Features

- add --watch to re-render on change
- add the `slug` filter

### Fixes

- keep trailing newline when a template ends in a tag
- refuse a template that includes itself
- write cache files atomically

## 1.4.2
"""


class Check(unittest.TestCase):
    def test_the_version(self):
        with open("pyproject.toml", "rb") as handle:
            self.assertEqual(tomllib.load(handle)["project"]["version"], "1.5.0")
        source = Path("inkpot/__init__.py").read_text()
        self.assertIn('__version__ = "1.5.0"', source)

    def test_the_changelog(self):
        text = Path("CHANGELOG.md").read_text()
        normal = "\n".join(line.rstrip() for line in text.splitlines())
        self.assertTrue(normal.startswith("# Changelog\n\n" + SECTION), normal[:600])
        self.assertEqual(normal.count("## 1.4.1"), 1)
        self.assertNotIn("cache directory", normal)
        self.assertNotIn("test runner", normal)
