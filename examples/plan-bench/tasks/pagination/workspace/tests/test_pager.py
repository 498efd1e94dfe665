import unittest

from pager import page, page_count
from pager.links import navigation

ITEMS = list(range(1, 11))  # 1..10


class PagerTest(unittest.TestCase):
    def test_the_first_page_starts_with_the_first_item(self):
        self.assertEqual(page(ITEMS, 1, 3).items, [1, 2, 3])

    def test_the_last_page_holds_the_rest(self):
        self.assertEqual(page(ITEMS, 4, 3).items, [10])

    def test_page_count(self):
        self.assertEqual(page_count(10, 3), 4)
        self.assertEqual(page_count(9, 3), 3)
        self.assertEqual(page_count(0, 3), 1)

    def test_links(self):
        self.assertEqual(navigation(page(ITEMS, 1, 3)), "[1] 2 3 4 »")
        self.assertEqual(navigation(page(ITEMS, 4, 3)), "« 1 2 3 [4]")

    def test_a_missing_page(self):
        with self.assertRaises(ValueError):
            page(ITEMS, 5, 3)


if __name__ == "__main__":
    unittest.main()
