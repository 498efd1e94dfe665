"""Order confirmations go to an address the order names."""

from .validators import is_valid_email


def confirmation_recipient(order: dict[str, str]) -> str | None:
    """The address to confirm the order to, or None when it is not a usable one."""
    email = order.get("email", "")
    return email if is_valid_email(email) else None
