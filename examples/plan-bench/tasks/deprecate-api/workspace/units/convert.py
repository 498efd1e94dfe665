"""Converting temperatures."""


def convert(value: float, unit: str) -> float:
    """value in the other unit: unit "C" converts Celsius to Fahrenheit, "F" the reverse."""
    if unit == "C":
        return round(value * 9 / 5 + 32, 2)
    if unit == "F":
        return round((value - 32) * 5 / 9, 2)
    raise ValueError(f"unknown unit {unit!r}: C or F")
