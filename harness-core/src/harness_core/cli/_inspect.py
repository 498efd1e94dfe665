"""The read-only commands: `sessions`, `show`, `events`, `todos`. None takes the writer lock."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from types import ModuleType
from typing import Any

import orjson

from ..log import SessionSummary
from ._app import App, CliError
from ._present import one_line

__all__ = ["events", "sessions", "show", "todos"]


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


# -- sessions --------------------------------------------------------------------------------


def sessions(args: Namespace) -> int:
    app = App()
    found = app.store.list()
    if args.json:
        _print_json([_summary_json(s) for s in found])
        return 0
    if not found:
        print(f"no sessions yet in {app.store.directory}")
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


def _summary_json(summary: SessionSummary) -> dict[str, Any]:
    return {
        "id": summary.id,
        "created": summary.created,
        "updated": summary.updated,
        "events": summary.events,
        "title": summary.title,
        "parent_session": summary.parent_session,
        "path": str(summary.path),
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

    view = PlainView(app.host.tools, sys.stdout, transcript=True)
    view.bind(log)
    for event in log.events:
        view.on_event(log, event)
    if log.events and log.events[-1].type not in ("turn/end", "session/start"):
        print("(a turn is still open: running now, or its process stopped before it ended)")
    return 0


def events(args: Namespace) -> int:
    app = App()
    out = sys.stdout
    for event in app.reader(args.id).events:
        out.write(orjson.dumps(event.to_json()).decode() + "\n")
    return 0


# -- todos -----------------------------------------------------------------------------------


def todos(args: Namespace) -> int:
    projections, render = _todo_modules()
    app = App()
    path = app.store.path(args.id)
    if path.lstat().st_size == 0:
        app.reader(args.id)  # the plan is read from the tail; the reader says what is wrong
    if args.history:
        revisions = projections.plan_history(app.reader(args.id).events)
        _print_history(revisions, render, args)
        return 0
    plan = projections.read_plan(path)
    if args.json:
        _print_json(plan.export())
    elif args.markdown:
        print(render.render_markdown(plan.todos) if plan.todos else "_No todo list yet._")
    elif not plan.todos:
        print("no todo list in this session yet")
    else:
        done = sum(t.status == "completed" for t in plan.todos)
        where = "standing: the plan strip shows it" if plan.standing else "from an earlier turn"
        print(f"{done}/{len(plan.todos)} done ({where})")
        print(render.render_checklist(plan.todos))
    return 0


def _todo_modules() -> tuple[ModuleType, ModuleType]:
    try:
        import harness_tool_todo
        from harness_tool_todo import projections
    except ImportError as exc:
        raise CliError(
            f"`harness todos` needs the harness-tool-todo plugin, which is not importable "
            f"({exc}); install it: pip install harness-tool-todo"
        ) from None
    return projections, harness_tool_todo  # the package exports the renderings


def _print_history(revisions: list[Any], render: ModuleType, args: Namespace) -> None:
    if args.json:
        _print_json([revision.export() for revision in revisions])
        return
    if not revisions:
        print("no todo list in this session yet")
        return
    for number, revision in enumerate(revisions, 1):
        title = f"revision {number} · seq {revision.seq} · turn {revision.turn} · {revision.ts}"
        if args.markdown:
            print(f"### {title}\n")
            print("\n".join(f"- {change.describe()}" for change in revision.changes))
            print("\n" + render.render_markdown(revision.todos) + "\n")
            continue
        print(title)
        for change in revision.changes:
            print(f"  {change.describe()}")
        if not revision.changes:
            print("  (no change)")
