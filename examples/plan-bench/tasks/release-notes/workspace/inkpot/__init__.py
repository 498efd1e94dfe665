"""A small template renderer."""

__version__ = "1.4.2"
