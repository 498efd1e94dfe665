import unittest

from textstats import mean, median, top_words, word_count


class SummaryTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_median_of_an_odd_count(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_median_of_an_even_count(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


class WordsTest(unittest.TestCase):
    def test_word_count_ignores_extra_whitespace(self):
        self.assertEqual(word_count("  one two\n\tthree  "), 3)

    def test_top_words_ignore_case_and_break_ties_alphabetically(self):
        text = "b a B c a A c"
        self.assertEqual(top_words(text, 2), [("a", 3), ("b", 2)])


if __name__ == "__main__":
    unittest.main()
