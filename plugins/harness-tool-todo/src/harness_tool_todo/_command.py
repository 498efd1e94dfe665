"""`harness todos ID [--history] [--json | --markdown]`, a command this plugin adds to the CLI.

`--json` prints `{"todos": [...], "standing": bool}` with the content exactly as the model
wrote it; the human forms fold each task onto one clean line. The plain list reads only the
session file's tail, so it is instant however long the session is.
"""

from __future__ import annotations

import json
from argparse import ArgumentParser, Namespace
from typing import Any, Final, TextIO

from harness_core.hosts import Command, CommandContext

from ._render import render_checklist, render_markdown
from .projections import Revision, plan_history, read_plan

__all__ = ["TODOS"]

DESCRIPTION: Final = """\
The session's current todo list. It is *standing* (shown in the plan strip) when no turn has
started since it was written. --history lists every revision and what changed, including
tasks dropped while unfinished."""


def _configure(parser: ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID")
    parser.add_argument("--history", action="store_true", help="every revision and what changed")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help='{"todos": [...], "standing": bool}')
    output.add_argument("--markdown", action="store_true", help="a Markdown checklist")


def _run(args: Namespace, ctx: CommandContext) -> int:
    out = ctx.stdout
    if args.history:
        _print_history(plan_history(ctx.read_events(args.id)), args, out)
        return 0
    plan = read_plan(ctx.store, args.id)
    if args.json:
        _print_json(plan.export(), out)
    elif args.markdown:
        print(render_markdown(plan.todos) if plan.todos else "_No todo list yet._", file=out)
    elif not plan.todos:
        print("no todo list in this session yet", file=out)
    else:
        done = sum(t.status == "completed" for t in plan.todos)
        where = "standing: the plan strip shows it" if plan.standing else "from an earlier turn"
        print(f"{done}/{len(plan.todos)} done ({where})", file=out)
        print(render_checklist(plan.todos), file=out)
    return 0


def _print_json(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _print_history(revisions: list[Revision], args: Namespace, out: TextIO) -> None:
    if args.json:
        _print_json([revision.export() for revision in revisions], out)
        return
    if not revisions:
        print("no todo list in this session yet", file=out)
        return
    for number, revision in enumerate(revisions, 1):
        title = f"revision {number} · seq {revision.seq} · turn {revision.turn} · {revision.ts}"
        if args.markdown:
            print(f"### {title}\n", file=out)
            print("\n".join(f"- {change.describe()}" for change in revision.changes), file=out)
            print("\n" + render_markdown(revision.todos) + "\n", file=out)
            continue
        print(title, file=out)
        for change in revision.changes:
            print(f"  {change.describe()}", file=out)
        if not revision.changes:
            print("  (no change)", file=out)


TODOS: Final = Command(
    name="todos",
    help="a session's todo list (from harness-tool-todo)",
    description=DESCRIPTION,
    configure=_configure,
    run=_run,
)
