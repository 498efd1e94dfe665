"""The harness version, kept importable without `importlib.metadata` (startup time)."""

__version__ = "0.1.0"
