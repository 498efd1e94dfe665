"""A small template renderer."""

__version__ = "1.5.0"
