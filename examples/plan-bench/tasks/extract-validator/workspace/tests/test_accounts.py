import unittest

from accounts.newsletter import subscribers
from accounts.orders import confirmation_recipient
from accounts.users import InvalidEmail, sign_up


class AccountsTest(unittest.TestCase):
    def test_sign_up(self):
        self.assertEqual(sign_up("Ada", "ada@example.org")["email"], "ada@example.org")
        with self.assertRaises(InvalidEmail):
            sign_up("Bob", "bob-at-example.org")

    def test_confirmation_recipient(self):
        self.assertEqual(confirmation_recipient({"email": "c@shop.example"}), "c@shop.example")
        self.assertIsNone(confirmation_recipient({}))

    def test_subscribers(self):
        found = subscribers(["x@mail.example", "X@mail.example", "nope"])
        self.assertEqual(found, ["x@mail.example"])


if __name__ == "__main__":
    unittest.main()
