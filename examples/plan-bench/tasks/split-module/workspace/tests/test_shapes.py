import math
import unittest

from shapes import Circle, Rectangle, Square, largest, total_area


class ShapesTest(unittest.TestCase):
    def test_areas(self):
        self.assertAlmostEqual(Circle(1).area(), math.pi)
        self.assertEqual(Rectangle(2, 3).area(), 6)
        self.assertEqual(Square(3).perimeter(), 12)

    def test_total_and_largest(self):
        shapes = [Square(2), Circle(1), Rectangle(1, 5)]
        self.assertAlmostEqual(total_area(shapes), 9 + math.pi)
        self.assertEqual(largest(shapes), Rectangle(1, 5))


if __name__ == "__main__":
    unittest.main()
