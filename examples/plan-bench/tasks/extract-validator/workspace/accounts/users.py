"""Sign-ups."""

import re

_EMAIL = re.compile(r"^[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)+$")


class InvalidEmail(ValueError):
    pass


def sign_up(name: str, email: str) -> dict[str, str]:
    if not _EMAIL.match(email):
        raise InvalidEmail(email)
    return {"name": name, "email": email.lower()}
