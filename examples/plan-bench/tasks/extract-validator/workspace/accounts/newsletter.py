"""The newsletter's subscriber list."""

import re

EMAIL_PATTERN = r"\S+@\S+\.\S+"


def subscribers(addresses: list[str]) -> list[str]:
    """The valid addresses, lower-cased, without duplicates, sorted."""
    return sorted({a.lower() for a in addresses if re.match(EMAIL_PATTERN, a)})
