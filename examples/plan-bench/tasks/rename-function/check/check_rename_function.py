"""Acceptance check: `order_total` everywhere, `calc_total` nowhere, behaviour unchanged."""

import subprocess
import sys
import unittest
from pathlib import Path

from shop import pricing
from shop.cart import Cart
from shop.discounts import loyalty_discount
from shop.invoice import render


class Check(unittest.TestCase):
    def test_the_new_name_computes_totals(self):
        lines = [pricing.Line("a", 2, 3.0), pricing.Line("b", 1, 1.0, discount=0.25)]
        self.assertEqual(pricing.order_total(lines), 6.75)
        cart = Cart()
        cart.add("a", 2, 3.0)
        self.assertEqual(cart.total(), 6.0)
        self.assertTrue(render(cart).endswith("6.00"))
        self.assertEqual(loyalty_discount(lines, 10), 0.68)

    def test_the_old_name_is_gone(self):
        self.assertFalse(hasattr(pricing, "calc_total"))
        for path in Path(".").rglob("*"):
            # The project's files: not __pycache__, nor a hidden directory (.git, .venv).
            hidden = "__pycache__" in path.parts or any(p.startswith(".") for p in path.parts)
            if path.suffix in (".py", ".md") and not hidden:
                self.assertNotIn("calc_total", path.read_text(), str(path))
        self.assertIn("order_total", Path("README.md").read_text())

    def test_the_tests_pass(self):
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertIn("Ran 4 tests", ran.stderr)
