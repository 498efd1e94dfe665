import unittest

from units.convert import convert
from units.report import from_fahrenheit, table, warmest_in_fahrenheit


class UnitsTest(unittest.TestCase):
    def test_convert(self):
        self.assertEqual(convert(100, "C"), 212)
        self.assertEqual(convert(212, "F"), 100)

    def test_report(self):
        readings = {"Oslo": -3.0, "Rome": 17.5}
        self.assertTrue(table(readings).startswith("Rome"))
        self.assertEqual(warmest_in_fahrenheit(readings), 63.5)
        self.assertEqual(from_fahrenheit({"x": 50}), {"x": 10})


if __name__ == "__main__":
    unittest.main()
