"""`harness store init [--store URL]` and `harness store copy SRC DST [--session ID ...]`."""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from typing import TYPE_CHECKING, Final

from harness_core.hosts import Command, CommandContext, CommandError

if TYPE_CHECKING:
    from harness_core.log import EventTypeRegistry, Store

__all__ = ["STORE"]

DESCRIPTION: Final = """\
init creates the PostgreSQL store's tables in the database --store (else HARNESS_STORE, else
config `store`) names, or migrates them to this plugin's schema version; running it again
changes nothing. copy copies sessions (all, or each --session) from the store SRC to the
store DST, each a file:///PATH or postgresql:// URL, as the very lines they hold: a session
DST has already is skipped, one it holds a prefix of is extended, and any other difference
stops the copy before anything is written (exit 1)."""


def _configure(parser: ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="{init,copy}")
    init = actions.add_parser("init", help="create or migrate the store's tables")
    init.add_argument("--store", metavar="URL", help="postgresql://USER@HOST/DATABASE")
    copy = actions.add_parser("copy", help="copy sessions from one store to another")
    copy.add_argument("source", metavar="SRC", help="file:///PATH or postgresql://...")
    copy.add_argument("destination", metavar="DST", help="file:///PATH or postgresql://...")
    copy.add_argument(
        "--session", action="append", metavar="ID", help="only this session (repeatable)"
    )


def _run(args: Namespace, ctx: CommandContext) -> int:
    if args.action == "init":
        return _init(ctx)
    return _copy(args, ctx)


def _init(ctx: CommandContext) -> int:
    from ._connect import connect, translated
    from ._schema import init
    from ._store import PostgresStore

    store = ctx.store  # --store became HARNESS_STORE before the store was chosen
    if not isinstance(store, PostgresStore):
        raise CommandError(
            f"the store is {store.url}, not a PostgreSQL one: name it with "
            "--store postgresql://USER@HOST/DATABASE (or HARNESS_STORE)"
        )
    with connect(store.raw_url) as conn, translated(store.raw_url, "cannot initialise"):
        before, now = init(conn, store.url)
    if before == now:
        print(f"{store.url}: schema version {now}, up to date", file=ctx.stdout)
    elif before == 0:
        print(f"{store.url}: created the tables (schema version {now})", file=ctx.stdout)
    else:
        print(f"{store.url}: migrated from schema version {before} to {now}", file=ctx.stdout)
    return 0


def _copy(args: Namespace, ctx: CommandContext) -> int:
    from ._copy import Divergent, apply, plan

    source = _open(args.source, ctx.store.registry)
    destination = _open(args.destination, ctx.store.registry)
    ids = args.session or [s.id for s in reversed(source.list()) if s.problem is None]
    try:
        steps = plan(source, destination, ids)
        for step in steps:
            apply(destination, step)
            done = {"copy": "copied", "extend": "extended", "same": "already there"}
            events = f"{len(step.lines)} events" if step.lines else f"{step.have} events"
            print(f"{step.session_id}: {done[step.action]} ({events})", file=ctx.stdout)
    except Divergent as exc:
        raise CommandError(str(exc)) from None
    return 0


def _open(url: str, registry: EventTypeRegistry) -> Store:
    """A store of `copy`: the file store or this plugin's."""
    from harness_core.log import SessionStore, file_store_directory, redact_url, scheme_of

    from . import SCHEMES
    from ._store import PostgresStore

    directory = file_store_directory(url)
    if directory is not None:
        return SessionStore(directory, registry)
    if scheme_of(url) in SCHEMES:
        return PostgresStore(url, registry)
    raise CommandError(
        f"harness store copy reads and writes file:///PATH and postgresql:// stores, "
        f"not {redact_url(url)!r}"
    )


STORE: Final = Command(
    name="store",
    help="initialise a PostgreSQL store, copy sessions between stores (harness-store-postgres)",
    run=_run,
    configure=_configure,
    description=DESCRIPTION,
)
