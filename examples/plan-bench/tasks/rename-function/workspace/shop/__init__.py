"""A tiny order book."""
