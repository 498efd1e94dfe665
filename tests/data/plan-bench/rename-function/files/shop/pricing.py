"""Prices of order lines."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    name: str
    quantity: int
    unit_price: float
    discount: float = 0.0


def line_total(line: Line) -> float:
    return round(line.quantity * line.unit_price - line.discount, 2)


def order_total(lines: list[Line]) -> float:
    """The order's total: the sum of its lines."""
    return round(sum(line_total(line) for line in lines), 2)
