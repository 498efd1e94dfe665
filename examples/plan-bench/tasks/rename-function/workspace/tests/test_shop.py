import unittest

from shop.cart import Cart
from shop.discounts import loyalty_discount
from shop.invoice import render
from shop.pricing import Line, calc_total


class ShopTest(unittest.TestCase):
    def test_calc_total(self):
        lines = [Line("pen", 3, 1.5), Line("pad", 1, 4.0, discount=0.5)]
        self.assertEqual(calc_total(lines), 8.0)

    def test_cart_total(self):
        cart = Cart()
        cart.add("pen", 2, 1.25)
        self.assertEqual(cart.total(), 2.5)

    def test_invoice_ends_with_the_total(self):
        cart = Cart()
        cart.add("ink", 4, 2.0)
        self.assertTrue(render(cart).endswith("8.00"))

    def test_loyalty_discount(self):
        self.assertEqual(loyalty_discount([Line("pen", 10, 1.0)], 5), 0.5)


if __name__ == "__main__":
    unittest.main()
