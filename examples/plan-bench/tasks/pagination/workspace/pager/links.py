"""Navigation text under a listing."""

from .paginate import Page


def navigation(current: Page) -> str:
    """`« 1 [2] 3 »`: every page number, the current one bracketed, arrows where they lead."""
    parts = ["«"] if current.previous else []
    for n in range(1, current.count):
        parts.append(f"[{n}]" if n == current.number else str(n))
    if current.next:
        parts.append("»")
    return " ".join(parts)
