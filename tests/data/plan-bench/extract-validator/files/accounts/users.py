"""Sign-ups."""

from .validators import is_valid_email


class InvalidEmail(ValueError):
    pass


def sign_up(name: str, email: str) -> dict[str, str]:
    if not is_valid_email(email):
        raise InvalidEmail(email)
    return {"name": name, "email": email.lower()}
