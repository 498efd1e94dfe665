"""Converting temperatures."""

import warnings


def c_to_f(celsius: float) -> float:
    return round(celsius * 9 / 5 + 32, 2)


def f_to_c(fahrenheit: float) -> float:
    return round((fahrenheit - 32) * 5 / 9, 2)


def convert(value: float, unit: str) -> float:
    """Deprecated: use c_to_f (unit "C") or f_to_c (unit "F")."""
    if unit not in ("C", "F"):
        raise ValueError(f"unknown unit {unit!r}: C or F")
    new = c_to_f if unit == "C" else f_to_c
    warnings.warn(
        f"convert() is deprecated: use {new.__name__}() instead", DeprecationWarning, stacklevel=2
    )
    return new(value)
