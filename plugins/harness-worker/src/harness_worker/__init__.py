"""harness-worker: turns run on workers that share a durable queue on DBOS.

A namespace plugin: `name`, `inject` and hook implementations. Its commands (`harness worker`,
`harness submit`, `harness batch`) arrive through the CLI host hook, and `harness serve
--queue` finds its queue through `harness_turn_queue`. DBOS (queues, concurrency limits, the
recovery of a dead executor's workflows) keeps its system tables in the store's own
PostgreSQL database; harness supplies what a turn is and how it goes on from the log
(`_turn.py`). The module stays light: DBOS loads when a command first needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    from harness_core.hosts import Command, TurnQueue
    from harness_core.log import Store

__all__ = ["harness_cli_commands", "harness_turn_queue", "inject", "name"]

name = "worker"
inject = ()


@hookimpl
def harness_cli_commands() -> Sequence[Command]:
    from ._commands import BATCH, SUBMIT, WORKER

    return [WORKER, SUBMIT, BATCH]


@hookimpl
def harness_turn_queue(store: Store) -> TurnQueue | None:
    from ._engine import postgres_url

    url = postgres_url(store)
    if url is None:
        return None  # workers share a PostgreSQL store; serve says so in one line
    from ._queue import WorkerQueue

    return WorkerQueue(store, url)
