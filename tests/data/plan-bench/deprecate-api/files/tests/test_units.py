import unittest
import warnings

from units.convert import c_to_f, convert, f_to_c
from units.report import from_fahrenheit, table, warmest_in_fahrenheit


class UnitsTest(unittest.TestCase):
    def test_new_functions(self):
        self.assertEqual(c_to_f(100), 212)
        self.assertEqual(f_to_c(212), 100)

    def test_convert_is_deprecated(self):
        with self.assertWarns(DeprecationWarning):
            self.assertEqual(convert(100, "C"), 212)

    def test_report(self):
        readings = {"Oslo": -3.0, "Rome": 17.5}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertTrue(table(readings).startswith("Rome"))
            self.assertEqual(warmest_in_fahrenheit(readings), 63.5)
            self.assertEqual(from_fahrenheit({"x": 50}), {"x": 10})


if __name__ == "__main__":
    unittest.main()
