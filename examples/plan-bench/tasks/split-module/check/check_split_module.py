"""Acceptance check: a package of the four modules asked for, shapes.py gone, the same
behaviour through the old imports."""

import math
import subprocess
import sys
import unittest
from pathlib import Path

import shapes
from shapes import Circle, Rectangle, Square, largest, total_area


class Check(unittest.TestCase):
    def test_the_layout(self):
        self.assertFalse(Path("shapes.py").exists())
        self.assertTrue(Path("shapes/__init__.py").is_file())
        self.assertEqual(Circle.__module__, "shapes.circle")
        self.assertEqual(Rectangle.__module__, "shapes.rectangle")
        self.assertEqual(Square.__module__, "shapes.rectangle")
        self.assertEqual(total_area.__module__, "shapes.total")
        self.assertEqual(largest.__module__, "shapes.total")
        self.assertTrue(hasattr(shapes, "__path__"))

    def test_the_behaviour(self):
        self.assertAlmostEqual(Circle(2).perimeter(), 4 * math.pi)
        self.assertEqual((Square(2).width, Square(2).height), (2, 2))
        self.assertEqual(largest([Circle(1), Square(2), Rectangle(4, 1)]), Square(2))
        self.assertEqual(total_area([]), 0)
        with self.assertRaises(ValueError):
            largest([])

    def test_the_tests_pass(self):
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertIn("Ran 2 tests", ran.stderr)
