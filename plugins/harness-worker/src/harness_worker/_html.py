"""`harness batch status ID --html FILE`: the status report as one self-contained HTML page.

The figures are `_batch._report`'s. First each comparison of two variants: its verdict and
the difference in pass rate with its interval as a bar on a scale of -100 to +100 points.
Then the grid of samples (a row per task, a column per variant and repeat: pass, fail or
skipped at a glance), then the variants side by side (through `VARIANT_ROWS`), with bars of
each variant's pass rate and mean tokens, and the task table. The page loads nothing: its
style is inline and its bars are CSS. Every string from the batch (session ids, task ids,
variant names, statuses) is escaped.
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
.diff { position: relative; width: 24em; height: 1.2em; background: #f0f0f0; }
.diff .zero { position: absolute; left: 50%; top: 0; bottom: 0; border-left: 1px solid #444; }
.diff .ci { position: absolute; top: 0.3em; height: 0.6em; background: #47b; }
.diff .point { position: absolute; top: 0; height: 1.2em; border-left: 2px solid #222; }
.axis { color: #666; font-size: 0.9em; margin-top: 0.3em; }
.grid td.passed { background: #cfe8d6; } .grid td.failed { background: #f3c9c4; }
.grid td.skipped { background: #eee; color: #777; }
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
            *(_comparison(c) for c in report.get("comparisons", [])),
            "<h2>Samples</h2>",
            _grid(report["tasks"]),
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


def _comparison(comparison: dict[str, Any]) -> str:
    """The verdict, then B - A in points as a bar: its interval, its point, and zero."""
    title = f"{escape(comparison['a'])} vs {escape(comparison['b'])}"
    parts = [f"<h2>{title}</h2>", f'<p class="verdict"><b>{escape(comparison["verdict"])}</b></p>']
    if comparison["diff"] is not None:

        def at(value: float) -> float:  # -1..1 onto 0..100% of the track
            return max(0.0, min(100.0, (value + 1) * 50))

        ci = comparison["diff_ci"] or [comparison["diff"]] * 2
        low, high = at(ci[0]), at(ci[1])
        parts.append(
            '<div class="diff"><span class="zero"></span>'
            f'<span class="ci" style="left: {low:.1f}%; width: {high - low:.1f}%"></span>'
            f'<span class="point" style="left: {at(comparison["diff"]):.1f}%"></span></div>'
            f'<p class="axis">{escape(comparison["b"])} - {escape(comparison["a"])} in points '
            "of pass rate, from -100 to +100: the line is the difference, the bar its 95% "
            "interval, the thin line zero</p>"
        )
    return "\n".join(parts)


def _grid(tasks: list[dict[str, Any]]) -> str:
    """A row per task, a column per (variant, repeat): each sample's check at a glance."""
    variants = list(dict.fromkeys(t["variant"] or "" for t in tasks))  # the file's order
    columns = sorted(
        {(t["variant"] or "", t["repeat"]) for t in tasks},
        key=lambda column: (variants.index(column[0]), column[1]),
    )
    cells: dict[tuple[str, str, int], str] = {}
    names: list[str] = []
    for t in tasks:
        name = t["task"] if t["task"] is not None else t["session"]
        if name not in names:
            names.append(name)
        cells[name, t["variant"] or "", t["repeat"]] = t["check"] or t["status"]
    head = "".join(
        f"<th>{escape(variant or '-')} #{repeat + 1}</th>" for variant, repeat in columns
    )
    rows = [f"<tr><th>task</th>{head}</tr>"]
    for name in names:
        row = []
        for variant, repeat in columns:
            value = cells.get((name, variant, repeat), "")
            row.append(f'<td class="{escape(value)}">{escape(value)}</td>')
        rows.append(f"<tr><td>{escape(name)}</td>{''.join(row)}</tr>")
    return f'<table class="grid">{"".join(rows)}</table>'


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
