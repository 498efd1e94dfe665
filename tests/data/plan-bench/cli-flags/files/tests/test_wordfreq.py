import contextlib
import io
import tempfile
import unittest
from pathlib import Path

from wordfreq import frequencies, main


class FrequenciesTest(unittest.TestCase):
    def test_most_frequent_first_and_ties_alphabetical(self):
        self.assertEqual(frequencies("b a B c a"), [("a", 2), ("b", 2), ("c", 1)])

    def test_min_length(self):
        self.assertEqual(frequencies("a bb a ccc", min_length=2), [("bb", 1), ("ccc", 1)])


class MainTest(unittest.TestCase):
    def run_main(self, *args):
        with tempfile.TemporaryDirectory() as home:
            path = Path(home) / "t.txt"
            path.write_text("x yy x zzz yy x")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                main([*args, str(path)])
        return out.getvalue().splitlines()

    def test_top(self):
        self.assertEqual(self.run_main("--top", "1"), ["x 3"])

    def test_min_length(self):
        self.assertEqual(self.run_main("--min-length", "3"), ["zzz 1"])

    def test_top_must_be_positive(self):
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            main(["--top", "0", "f"])


if __name__ == "__main__":
    unittest.main()
