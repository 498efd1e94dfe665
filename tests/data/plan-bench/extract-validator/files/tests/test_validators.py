import unittest

from accounts.validators import is_valid_email


class ValidatorTest(unittest.TestCase):
    def test_valid(self):
        self.assertTrue(is_valid_email("Ada.Lovelace+x@Mail.Example.org"))

    def test_invalid(self):
        for address in ("a@b", "a@b.c", " a@b.co", "a@@b.co", "a@b.c0"):
            self.assertFalse(is_valid_email(address), address)


if __name__ == "__main__":
    unittest.main()
