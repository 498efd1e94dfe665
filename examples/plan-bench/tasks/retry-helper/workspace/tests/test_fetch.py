import unittest

from netutil.fetch import fetch


class FetchTest(unittest.TestCase):
    def test_fetch(self):
        self.assertEqual(fetch(lambda url: url.encode(), "u"), b"u")


if __name__ == "__main__":
    unittest.main()
