"""Calling something again when it fails for a passing reason."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retry(
    call: Callable[[], T],
    *,
    attempts: int,
    delay: float,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """call() until it returns, at most `attempts` times (attempts >= 1, else ValueError).

    After a failed attempt that raised one of `retry_on`, and only if another attempt is
    left, wait with sleep(): `delay` seconds after the first failure, then twice as long
    after each further one (0.5, 1.0, 2.0, ...). An exception not in `retry_on` propagates
    at once, without waiting. When every attempt failed, the last exception is raised.
    """
    raise NotImplementedError
