"""python3 wordfreq.py FILE: the most frequent words of FILE, one `word count` a line."""

import argparse
import re
from collections import Counter


def frequencies(text: str) -> list[tuple[str, int]]:
    counts = Counter(re.findall(r"[a-z']+", text.lower()))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The most frequent words of a file.")
    parser.add_argument("file")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as handle:
        text = handle.read()
    for word, count in frequencies(text)[:10]:
        print(word, count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
