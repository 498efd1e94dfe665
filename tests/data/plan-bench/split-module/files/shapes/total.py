from .circle import Circle
from .rectangle import Rectangle


def total_area(shapes: list[Circle | Rectangle]) -> float:
    return sum(shape.area() for shape in shapes)


def largest(shapes: list[Circle | Rectangle]) -> Circle | Rectangle:
    """The shape with the largest area (the first of equals)."""
    if not shapes:
        raise ValueError("no shapes")
    return max(shapes, key=lambda shape: shape.area())
