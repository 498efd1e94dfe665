"""Words in a text."""

from collections import Counter


def words(text: str) -> list[str]:
    """The words of text, split on spaces."""
    return text.split(" ")


def word_count(text: str) -> int:
    """How many words text holds; any run of whitespace separates two words."""
    return len(words(text))


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The n most frequent words, case-insensitive, most frequent first (ties: alphabetical)."""
    counts = Counter(words(text))
    return sorted(counts.items(), key=lambda item: -item[1])[:n]
