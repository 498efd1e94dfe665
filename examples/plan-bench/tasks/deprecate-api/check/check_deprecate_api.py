"""Acceptance check: the new functions, the warning on the old one (which still works), no
warning from the package's own code, tests that cover it and pass."""

import subprocess
import sys
import unittest
import warnings
from pathlib import Path

from units import report
from units.convert import c_to_f, convert, f_to_c


class Check(unittest.TestCase):
    def test_the_new_functions(self):
        self.assertEqual(c_to_f(100), 212)
        self.assertEqual(c_to_f(-40), -40)
        self.assertEqual(f_to_c(32), 0)
        self.assertAlmostEqual(f_to_c(100), 37.78, places=2)

    def test_the_old_function_warns_and_still_works(self):
        for value, unit, new in ((100, "C", "c_to_f"), (212, "F", "f_to_c")):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.assertEqual(convert(value, unit), 212 if unit == "C" else 100)
            self.assertEqual([w.category for w in caught], [DeprecationWarning])
            self.assertIn(new, str(caught[0].message))

    def test_the_package_does_not_warn(self):
        readings = {"Oslo": -3.0, "Rome": 17.5}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertTrue(report.table(readings).startswith("Rome"))
            self.assertEqual(report.warmest_in_fahrenheit(readings), 63.5)
            self.assertEqual(report.from_fahrenheit({"x": 50}), {"x": 10})
        self.assertNotIn("convert(", Path("units/report.py").read_text())

    def test_the_tests_cover_it_and_pass(self):
        tests = "".join(path.read_text() for path in Path("tests").glob("test*.py"))
        for name in ("c_to_f", "f_to_c", "DeprecationWarning"):
            self.assertIn(name, tests)
        ran = subprocess.run(
            [
                sys.executable,
                "-B",
                "-W",
                "error::DeprecationWarning:units.report",
                "-m",
                "unittest",
                "discover",
                "-s",
                "tests",
            ],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
