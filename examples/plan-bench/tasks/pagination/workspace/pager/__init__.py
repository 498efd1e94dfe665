"""Pages of a list: numbered from 1."""

from .paginate import Page, page, page_count

__all__ = ["Page", "page", "page_count"]
