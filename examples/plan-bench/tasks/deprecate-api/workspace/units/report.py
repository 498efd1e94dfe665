"""A day's readings as a table."""

from .convert import convert


def table(readings: dict[str, float]) -> str:
    """One `place  C  F` line per reading (given in Celsius), warmest first."""
    rows = sorted(readings.items(), key=lambda item: -item[1])
    return "\n".join(f"{place:<10}{c:>7.1f}{convert(c, 'C'):>7.1f}" for place, c in rows)


def warmest_in_fahrenheit(readings: dict[str, float]) -> float:
    return convert(max(readings.values()), "C")


def from_fahrenheit(readings: dict[str, float]) -> dict[str, float]:
    """Readings in Fahrenheit, as Celsius."""
    return {place: convert(f, "F") for place, f in readings.items()}
