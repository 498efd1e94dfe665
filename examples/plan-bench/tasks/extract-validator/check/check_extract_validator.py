"""Acceptance check: one validator with the stated rule, used by all three modules, none of
which keeps a regular expression; the tests pass and cover the validator."""

import subprocess
import sys
import unittest
from pathlib import Path

from accounts.newsletter import subscribers
from accounts.orders import confirmation_recipient
from accounts.users import InvalidEmail, sign_up
from accounts.validators import is_valid_email

GOOD = ["a@b.co", "Ada.Lovelace+x@Mail.Example.org", "o_k%1@sub-1.example.io"]
BAD = [
    "",
    "a@b",
    "a@b.c",
    "@b.co",
    "a@@b.co",
    "a@b@c.co",
    " a@b.co",
    "a@b.co ",
    "a b@c.co",
    "a@b..co",
    "a@b.c0",
    "a@b_c.co",
    "a@.b.co",
]


class Check(unittest.TestCase):
    def test_the_rule(self):
        for address in GOOD:
            self.assertTrue(is_valid_email(address), address)
        for address in BAD:
            self.assertFalse(is_valid_email(address), address)

    def test_the_three_modules_agree_with_it(self):
        self.assertEqual(sign_up("A", "A@B.CO")["email"], "a@b.co")
        for address in ("a@b", "x@y.z1"):
            with self.assertRaises(InvalidEmail):
                sign_up("A", address)
            self.assertIsNone(confirmation_recipient({"email": address}))
        self.assertEqual(confirmation_recipient({"email": "Q@R.io"}), "Q@R.io")
        self.assertEqual(subscribers(["a b@c.co", "Z@y.io", "z@y.io", "m@n.o"]), ["z@y.io"])

    def test_no_module_keeps_its_own_expression(self):
        for name in ("users", "orders", "newsletter"):
            source = Path(f"accounts/{name}.py").read_text()
            self.assertNotIn("import re", source, name)
            self.assertIn("is_valid_email", source, name)

    def test_the_tests_pass_and_cover_the_validator(self):
        sources = "".join(path.read_text() for path in Path("tests").glob("test*.py"))
        self.assertIn("is_valid_email", sources)
        ran = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(ran.returncode, 0, ran.stderr)
