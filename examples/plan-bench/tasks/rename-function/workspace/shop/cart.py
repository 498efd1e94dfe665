"""A shopping cart."""

from .pricing import Line, calc_total


class Cart:
    def __init__(self) -> None:
        self.lines: list[Line] = []

    def add(self, name: str, quantity: int, unit_price: float, discount: float = 0.0) -> None:
        self.lines.append(Line(name, quantity, unit_price, discount))

    def total(self) -> float:
        return calc_total(self.lines)
