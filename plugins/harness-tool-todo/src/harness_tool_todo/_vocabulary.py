"""The todo list's words, shared by the write side (pydantic) and the read side (plain)."""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["EVENT_TYPE", "STATUSES", "Status"]

EVENT_TYPE: Final = "todo/write"
Status = Literal["pending", "in_progress", "completed"]
STATUSES: Final[tuple[Status, ...]] = ("pending", "in_progress", "completed")
