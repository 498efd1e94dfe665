import unittest

from netutil.fetch import fetch_with_retry
from netutil.retry import retry


class RetryTest(unittest.TestCase):
    def test_retry_waits_twice_as_long_each_time(self):
        answers, waits = [OSError(), OSError(), "ok"], []

        def call():
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

        self.assertEqual(retry(call, attempts=3, delay=0.5, sleep=waits.append), "ok")
        self.assertEqual(waits, [0.5, 1.0])

    def test_fetch_with_retry_gives_up_after_three(self):
        calls = []

        def get(url):
            calls.append(url)
            raise ConnectionError

        with self.assertRaises(ConnectionError):
            fetch_with_retry(get, "u", sleep=lambda seconds: None)
        self.assertEqual(len(calls), 3)


if __name__ == "__main__":
    unittest.main()
