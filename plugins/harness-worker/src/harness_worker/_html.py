"""`harness batch status ID --html FILE`: the status report as one self-contained HTML page.

The figures are `_batch._report`'s, shown as the text form shows them (the variants side by
side, through `VARIANT_ROWS`), with bars of each variant's pass rate and mean tokens, and the
task table. The page loads nothing: its style is inline and its bars are CSS. Every string
from the batch (session ids, variant names, statuses) is escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, Final

from harness_core.hosts import CommandError

from ._batch import VARIANT_ROWS, number, percent

__all__ = ["page", "write"]

_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.counts span { margin-right: 1.2em; }
.chart td { border: none; }
.chart td.track { text-align: left; }
.track div { width: 24em; background: #f0f0f0; }
.bar { height: 0.9em; display: block; }
.pass { background: #3a7; } .input { background: #47b; } .output { background: #d83; }
.cached { background: #999; }
"""

_TOKENS: Final = ("input", "output", "cached")


def write(report: dict[str, Any], path: Path) -> None:
    try:
        path.write_text(page(report), encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write the report to {path}: {exc.strerror or exc}") from None


def page(report: dict[str, Any]) -> str:
    batch = escape(str(report["batch"]))
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>batch {batch}</title><style>{_STYLE}</style></head><body>",
            f"<h1>batch {batch}</h1>",
            _counts(report["counts"]),
            "<h2>Variants</h2>",
            _variants(report["variants"]),
            "<h2>Pass rate</h2>",
            _pass_chart(report["variants"]),
            "<h2>Mean tokens</h2>",
            _token_chart(report["variants"]),
            "<h2>Tasks</h2>",
            _tasks(report["tasks"]),
            "</body></html>",
            "",
        ]
    )


def _counts(counts: dict[str, int]) -> str:
    cells = "".join(
        f'<span class="count">{kind} <b>{counts[kind]}</b></span>'
        for kind in ("queued", "running", "done", "failed", "passed")
    )
    return f'<p class="counts">{cells}</p>'


def _variants(variants: dict[str, dict[str, Any]]) -> str:
    head = "".join(f"<th>{escape(name)}</th>" for name in variants)
    rows = [f"<tr><th></th>{head}</tr>"]
    for label, cell in VARIANT_ROWS:
        cells = "".join(f"<td>{escape(cell(v))}</td>" for v in variants.values())
        rows.append(f"<tr><td>{escape(label)}</td>{cells}</tr>")
    return f'<table class="variants">{"".join(rows)}</table>'


def _bar(kind: str, fraction: float, label: str) -> str:
    width = max(0.0, min(1.0, fraction)) * 100
    return (
        f'<td class="track"><div><span class="bar {kind}" style="width: {width:.1f}%"></span>'
        "</div></td>"
        f"<td>{escape(label)}</td>"
    )


def _pass_chart(variants: dict[str, dict[str, Any]]) -> str:
    rows = [
        f"<tr><td>{escape(name)}</td>"
        f"{_bar('pass', v['pass_rate'] or 0.0, percent(v['pass_rate']))}</tr>"
        for name, v in variants.items()
    ]
    return f'<table class="chart pass-rate">{"".join(rows)}</table>'


def _token_chart(variants: dict[str, dict[str, Any]]) -> str:
    """One bar per kind of token per variant, all on the scale of the largest mean."""
    means = [v["mean_tokens"][kind] or 0.0 for v in variants.values() for kind in _TOKENS]
    scale = max(means, default=0.0) or 1.0
    rows = []
    for name, v in variants.items():
        for index, kind in enumerate(_TOKENS):
            mean = v["mean_tokens"][kind]
            first = f"<td>{escape(name)}</td>" if index == 0 else "<td></td>"
            rows.append(
                f"<tr>{first}<td>{kind}</td>{_bar(kind, (mean or 0.0) / scale, number(mean))}</tr>"
            )
    return f'<table class="chart tokens">{"".join(rows)}</table>'


_TASK_COLUMNS: Final = (
    "session",
    "variant",
    "status",
    "check",
    "steps",
    "input tokens",
    "output tokens",
    "cached tokens",
    "seconds",
    "plan used",
)


def _tasks(tasks: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{column}</th>" for column in _TASK_COLUMNS)
    rows = [f"<tr>{head}</tr>"]
    for task in tasks:
        tokens = task["tokens"] or {}
        values = [
            task["session"],
            task["variant"] or "-",
            task["status"],
            task["check"] or "-",
            number(task["steps"]),
            *(number(tokens.get(kind)) for kind in _TOKENS),
            number(task["seconds"]),
            "-" if task["plan_used"] is None else ("yes" if task["plan_used"] else "no"),
        ]
        rows.append("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in values) + "</tr>")
    return f'<table class="tasks">{"".join(rows)}</table>'
