"""The newsletter's subscriber list."""

from .validators import is_valid_email


def subscribers(addresses: list[str]) -> list[str]:
    """The valid addresses, lower-cased, without duplicates, sorted."""
    return sorted({a.lower() for a in addresses if is_valid_email(a)})
