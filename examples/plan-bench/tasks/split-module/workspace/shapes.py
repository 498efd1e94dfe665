"""Plane shapes and their areas."""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Circle:
    radius: float

    def area(self) -> float:
        return math.pi * self.radius**2

    def perimeter(self) -> float:
        return 2 * math.pi * self.radius


@dataclass(frozen=True)
class Rectangle:
    width: float
    height: float

    def area(self) -> float:
        return self.width * self.height

    def perimeter(self) -> float:
        return 2 * (self.width + self.height)


class Square(Rectangle):
    def __init__(self, side: float) -> None:
        super().__init__(side, side)


def total_area(shapes: list[Circle | Rectangle]) -> float:
    return sum(shape.area() for shape in shapes)


def largest(shapes: list[Circle | Rectangle]) -> Circle | Rectangle:
    """The shape with the largest area (the first of equals)."""
    if not shapes:
        raise ValueError("no shapes")
    return max(shapes, key=lambda shape: shape.area())
