"""A day's readings as a table."""

from .convert import c_to_f, f_to_c


def table(readings: dict[str, float]) -> str:
    """One `place  C  F` line per reading (given in Celsius), warmest first."""
    rows = sorted(readings.items(), key=lambda item: -item[1])
    return "\n".join(f"{place:<10}{c:>7.1f}{c_to_f(c):>7.1f}" for place, c in rows)


def warmest_in_fahrenheit(readings: dict[str, float]) -> float:
    return c_to_f(max(readings.values()))


def from_fahrenheit(readings: dict[str, float]) -> dict[str, float]:
    """Readings in Fahrenheit, as Celsius."""
    return {place: f_to_c(f) for place, f in readings.items()}
