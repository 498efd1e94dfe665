"""Invoices as text."""

from . import pricing
from .cart import Cart


def render(cart: Cart) -> str:
    rows = [f"{line.name:<12}{pricing.line_total(line):>10.2f}" for line in cart.lines]
    rows.append(f"{'TOTAL':<12}{pricing.calc_total(cart.lines):>10.2f}")
    return "\n".join(rows)
