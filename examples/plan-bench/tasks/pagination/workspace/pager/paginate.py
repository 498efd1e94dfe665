"""Slicing a list into pages numbered from 1."""

from dataclasses import dataclass


def page_count(total: int, size: int) -> int:
    """How many pages `total` items fill, `size` a page; at least one page."""
    if size < 1:
        raise ValueError("a page holds at least one item")
    return max(1, total // size)


@dataclass(frozen=True)
class Page:
    items: list[object]
    number: int
    count: int

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number <= self.count else None


def page(items: list[object], number: int, size: int) -> Page:
    """Page `number` of items; ValueError for a page that does not exist."""
    count = page_count(len(items), size)
    if not 1 <= number <= count:
        raise ValueError(f"no page {number}: there are {count}")
    start = number * size
    return Page(items[start : start + size], number, count)
