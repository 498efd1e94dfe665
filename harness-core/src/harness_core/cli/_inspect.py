"""The read-only commands: `sessions`, `show`, `events`. None takes the writer lock."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from typing import TYPE_CHECKING, Any

from .. import secret
from ..hosts import one_line
from ..log import EventTypeRegistry, SessionStore, Store, file_store_directory, redact_url
from ._app import App, ConfiguredHome
from ._usage import TurnUsage

if TYPE_CHECKING:
    from pathlib import Path

    from ..log import SessionSummary

__all__ = ["events", "sessions", "show"]


def _print_json(value: Any) -> None:
    """Indented JSON, UTF-8 as is, with any secret this process holds redacted (a log
    written before it was one, or by a process without it, may hold it)."""
    secrets = secret.current()
    encoded = _indented(value)
    if secrets.in_line(encoded):
        encoded = _indented(secrets.redact_json(value))
    sys.stdout.flush()
    sys.stdout.buffer.write(encoded)


def _indented(value: Any) -> bytes:
    """What `json.dumps(indent=2)` would write, by orjson, faster."""
    import orjson  # not for the plain listing, which `sessions` serves without it

    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # an integer past 64 bits in a hand-edited log: json can still write it
        return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()


# -- sessions --------------------------------------------------------------------------------


def sessions(args: Namespace) -> int:
    # On the file store nothing a plugin does changes the listing, so no plugin loads (startup
    # time); the config is still checked, as for every command. The listing reads no
    # payload: core types do. Another store comes from its plugin.
    home = ConfiguredHome()
    url = home.settings.store or ""
    directory = file_store_directory(url) if url else home.home
    store: Store = (
        SessionStore(directory, EventTypeRegistry()) if directory is not None else App().store
    )
    found = store.list()
    if args.json:
        files = store.directory if isinstance(store, SessionStore) else None
        _print_json([_summary_json(s, files) for s in found])
        return 0
    if not found:
        where = store.directory if isinstance(store, SessionStore) else redact_url(store.url)
        print(f"no sessions yet in {where}")
        return 0
    print(f"{'ID':<24} {'UPDATED':<19} {'EVENTS':>6}  TITLE")
    for summary in found:
        if summary.problem is not None:
            print(f"{summary.id:<24} {'-':<19} {'-':>6}  (unreadable: {summary.problem})")
            continue
        print(
            f"{summary.id:<24} {summary.updated[:19].replace('T', ' '):<19} "
            f"{summary.events:>6}  {_title(summary)}"
        )
    return 0


def _summary_json(summary: SessionSummary, files: Path | None) -> dict[str, Any]:
    """A session in `sessions --json`; `path`, its file, only on the file store (`files`)."""
    where = {} if files is None else {"path": str(files / f"{summary.id}.jsonl")}
    return {
        "id": summary.id,
        "created": summary.created,
        "updated": summary.updated,
        "events": summary.events,
        "title": summary.title,
        "parent_session": summary.parent_session,
        **where,
        "unreadable": summary.problem,
    }


def _title(summary: SessionSummary) -> str:
    title = one_line(summary.title or "(no prompt yet)", width=60)
    return f"↳ {summary.parent_session}: {title}" if summary.parent_session else title


# -- show and events -------------------------------------------------------------------------


def show(args: Namespace) -> int:
    app = App()
    log = app.reader(args.id)
    if args.json:
        _print_json(log.projection.request_messages())
        return 0
    from ._plain import PlainView  # the transcript presents tool calls: tools, pydantic

    view = PlainView(app.host.tools, sys.stdout, app.host.hooks.terminal_strips, transcript=True)
    view.bind(log, replay=False)
    usage = TurnUsage()  # a line per turn, before its end mark: cache reads and writes too
    for event in log.events:
        usage.add(event)
        if event.type == "turn/end" and (line := usage.take_line()):
            print(line, flush=True)
        view.on_event(log, event)
    if log.events and log.events[-1].type not in ("turn/end", "session/start"):
        if line := usage.take_line():
            print(line)
        print("(a turn is still open: running now, or its process stopped before it ended)")
    return 0


def events(args: Namespace) -> int:
    # Each well-formed envelope exactly as stored: the log wrote it with the encoding this
    # command would use, so re-encoding every event would only cost time. Only a line that
    # holds a secret this process knows (written before it was one, or by a process without
    # it) is re-encoded, redacted.
    lines = App().store.lines(args.id)
    secrets = secret.current()
    sys.stdout.flush()
    sys.stdout.buffer.writelines(
        (_redacted(line, secrets) if secrets.in_line(line) else line) + b"\n" for line in lines
    )
    return 0


def _redacted(line: bytes, secrets: secret.Secrets) -> bytes:
    import orjson

    try:
        return orjson.dumps(secrets.redact_json(orjson.loads(line)))
    except orjson.JSONDecodeError:  # an integer past 64 bits in a hand-edited log
        envelope = secrets.redact_json(json.loads(line))
        return json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode()
