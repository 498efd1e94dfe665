import unittest

from wordfreq import frequencies


class FrequenciesTest(unittest.TestCase):
    def test_most_frequent_first_and_ties_alphabetical(self):
        self.assertEqual(frequencies("b a B c a"), [("a", 2), ("b", 2), ("c", 1)])


if __name__ == "__main__":
    unittest.main()
