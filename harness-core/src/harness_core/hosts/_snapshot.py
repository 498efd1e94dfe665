"""A session as a host ships it: the conversation, the fields plugins add, the seq it covers.

The web host's tail page carries `fields()` (the todo plugin's `todos`, computed from the whole
log however short the page); any host that projects a session keeps one of these per session
and feeds it every event once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._conversation import Change, Conversation
from ._extensions import SnapshotFields

if TYPE_CHECKING:
    from ..log import Event

__all__ = ["SessionSnapshot"]

logger = logging.getLogger("harness.hosts")


class SessionSnapshot:
    """One session's conversation and plugin fields, folded event by event."""

    __slots__ = ("_folds", "_warned", "conversation", "seq")

    def __init__(self, folds: Sequence[tuple[str, SnapshotFields]]) -> None:
        self.conversation = Conversation()
        self.seq = -1  # the last seq folded
        self._folds = list(folds)
        self._warned: set[str] = set()

    def apply(self, event: Event) -> Change:
        """Fold one event into the conversation and every plugin's fields."""
        self.seq = event.seq
        for plugin, fold in list(self._folds):
            try:
                fold.apply(event)
            except Exception:
                # A plugin's bug must not take the session's page down: its fields go, once.
                logger.exception("snapshot fields of plugin %r failed; dropped", plugin)
                self._folds.remove((plugin, fold))
        return self.conversation.apply(event)

    def fields(self) -> dict[str, Any]:
        """Every plugin's fields; a name two plugins use keeps the first plugin's value."""
        merged: dict[str, Any] = {}
        owners: dict[str, str] = {}
        for plugin, fold in self._folds:
            for name, value in fold.fields().items():
                if name not in merged:
                    merged[name], owners[name] = value, plugin
                elif plugin not in self._warned:
                    self._warned.add(plugin)
                    logger.warning(
                        "plugin %r sets snapshot field %r, which plugin %r sets; dropped",
                        plugin,
                        name,
                        owners[name],
                    )
        return merged
