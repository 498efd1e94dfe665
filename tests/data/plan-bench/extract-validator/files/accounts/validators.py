"""The one rule for e-mail addresses."""

import re

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}")


def is_valid_email(address: str) -> bool:
    """Whether address is one local part, one "@" and a domain with a top level of letters."""
    return _EMAIL.fullmatch(address) is not None
