"""Plane shapes and their areas."""

from .circle import Circle
from .rectangle import Rectangle, Square
from .total import largest, total_area

__all__ = ["Circle", "Rectangle", "Square", "largest", "total_area"]
