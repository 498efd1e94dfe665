"""Order confirmations go to an address the order names."""

import re


def confirmation_recipient(order: dict[str, str]) -> str | None:
    """The address to confirm the order to, or None when it is not a usable one."""
    email = order.get("email", "")
    if re.fullmatch(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+", email):
        return email
    return None
