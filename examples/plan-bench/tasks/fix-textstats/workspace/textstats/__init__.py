"""Small statistics over text: word counts, frequent words, medians."""

from .summary import mean, median
from .words import top_words, word_count

__all__ = ["mean", "median", "top_words", "word_count"]
