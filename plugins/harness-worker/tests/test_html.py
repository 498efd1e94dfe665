"""`harness batch status ID --html FILE`: the report's page, built from `_report`'s figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness_core.hosts import CommandError
from harness_worker._batch import _report
from harness_worker._html import page, write
from harness_worker._tables import Task

HOSTILE = '<script>alert("x")</script>&'


def tasks() -> list[Task]:
    return [
        Task(0, "s0", None, 0, HOSTILE, True, "completed", "passed", 2, (200, 20, 100), 3.0, True),
        Task(1, "s1", None, 0, HOSTILE, True, "error", "failed", 4, (400, 40, 0), 5.0, False),
        Task(2, "<s2>", None, 0, None, False, "completed", None, 1, (1000, 10, 0), 1.0, False),
        Task(3, "s3", None, 0, None, False, "queued", None, None, None, None, None),
    ]


def test_every_string_is_escaped_and_the_figures_are_shown() -> None:
    html = page(_report("b-1", tasks()))
    assert "<script" not in html and 'alert("x")' not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in html
    assert "&lt;s2&gt;" in html and "<s2>" not in html
    # No asset from elsewhere: the page is whole as written.
    assert not re.search(r"""(src|href)=|@import|url\(""", html)
    # The counts, then the variants side by side with the text form's rows.
    assert "done <b>2</b>" in html and "failed <b>1</b>" in html and "queued <b>1</b>" in html
    variants = html.split('<table class="variants">', 1)[1].split("</table>", 1)[0]
    for row in ("passed</td><td>1/2</td><td>-</td>", "pass rate</td><td>50%</td><td>-</td>"):
        assert row in variants
    assert "mean input tokens</td><td>300</td><td>1000</td>" in variants
    assert "plan used</td><td>50%</td><td>0%</td>" in variants
    # Bars: pass rate out of 100%, tokens on the scale of the largest mean (default's input).
    assert 'class="bar pass" style="width: 50.0%"' in html
    assert 'class="bar input" style="width: 30.0%"' in html
    assert 'class="bar input" style="width: 100.0%"' in html
    # The task table: one row each, with its figures.
    table = html.split('<table class="tasks">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 5
    assert "<td>s1</td>" in table and "<td>error</td><td>failed</td><td>4</td>" in table
    assert "<td>s3</td><td>-</td><td>queued</td><td>-</td><td>-</td>" in table


def test_an_unwritable_file_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot write the report to"):
        write(_report("b", tasks()), tmp_path / "no" / "such" / "dir" / "r.html")
