"""Test support for harness and for plugin authors (the `harness` pytest plugin)."""
