"""`harness store init [--store URL]` and `harness store copy SRC DST [--session ID ...]`, for
every store: the file store, and any a plugin provides (`harness_session_store`)."""

from __future__ import annotations

from argparse import Namespace

from ..log import Divergent, apply_copy, plan_copy
from ._app import App, CliError

__all__ = ["store"]

_DONE = {"copy": "copied", "extend": "extended", "same": "already there"}


def store(args: Namespace) -> int:
    return _init() if args.action == "init" else _copy(args)


def _init() -> int:
    store = App().store  # --store became HARNESS_STORE before the store was chosen
    done = store.initialise()
    print(f"{store.url}: {done or 'nothing to initialise'}")
    return 0


def _copy(args: Namespace) -> int:
    app = App()
    source, destination = app.open_store(args.source), app.open_store(args.destination)
    ids = args.session or [s.id for s in reversed(source.list()) if s.problem is None]
    try:
        for step in plan_copy(source, destination, ids):
            apply_copy(destination, step)
            events = f"{len(step.lines)} events" if step.lines else f"{step.have} events"
            print(f"{step.session_id}: {_DONE[step.action]} ({events})")
    except Divergent as exc:
        raise CliError(str(exc)) from None
    return 0
