"""Whole-order discounts."""

from .pricing import Line, order_total


def loyalty_discount(lines: list[Line], percent: float) -> float:
    """What a loyal customer saves on the order, rounded to cents."""
    return round(order_total(lines) * percent / 100, 2)
