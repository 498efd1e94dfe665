import tempfile
import unittest
from pathlib import Path

from app.settings import load


class SettingsTest(unittest.TestCase):
    def test_the_shipped_config(self):
        settings = load()
        self.assertEqual((settings.host, settings.port, settings.workers), ("0.0.0.0", 8080, 4))
        self.assertEqual(settings.pool_size, 10)
        self.assertTrue(settings.cache)
        self.assertFalse(settings.beta_banner)

    def test_another_file(self):
        with tempfile.TemporaryDirectory() as home:
            path = Path(home) / "other.ini"
            path.write_text(
                "[server]\nlisten = 127.0.0.1\nport = 9000\nworkers = 1\n"
                "[database]\ndb_url = sqlite://\ndb_pool = 1\n"
                "[features]\nenable_cache = no\nbeta_banner = yes\n"
            )
            settings = load(path)
        self.assertEqual((settings.host, settings.port, settings.cache), ("127.0.0.1", 9000, False))


if __name__ == "__main__":
    unittest.main()
