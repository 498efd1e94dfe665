"""python3 wordfreq.py FILE: the most frequent words of FILE, one `word count` a line."""

import argparse
import re
from collections import Counter


def frequencies(text: str, min_length: int = 1) -> list[tuple[str, int]]:
    words = [w for w in re.findall(r"[a-z']+", text.lower()) if len(w) >= min_length]
    return sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The most frequent words of a file.")
    parser.add_argument("file")
    parser.add_argument("--top", type=positive, default=10, help="how many words to print")
    parser.add_argument("--min-length", type=int, default=1, help="the shortest word counted")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as handle:
        text = handle.read()
    for word, count in frequencies(text, args.min_length)[: args.top]:
        print(word, count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
