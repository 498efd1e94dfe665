"""The terminal plan strip: one fold of the standing plan, and its collapsed rows."""

from __future__ import annotations

from typing import Any

from harness_core.log import Event
from harness_tool_todo import Status
from harness_tool_todo._hosts import PlanStrip, plain_strip, strip_rows
from harness_tool_todo.projections import PlanFold, Todo, todos_of


def event(seq: int, kind: str, data: dict[str, Any] | None = None, turn: int = 1) -> Event:
    return Event(seq, kind, "2026-01-01T00:00:00.000Z", data or {}, turn)


def write(seq: int, *items: tuple[str, str], turn: int = 1) -> Event:
    todos = [{"content": content, "status": status} for content, status in items]
    return event(seq, "todo/write", {"todos": todos}, turn)


def tasks(count: int, active: int | None) -> list[Todo]:
    """`count` tasks: those before `active` completed, `active` in progress, the rest pending."""

    def status(n: int) -> Status:
        if active is None or n < active:
            return "completed"
        return "in_progress" if n == active else "pending"

    return [Todo(f"task {n}", status(n)) for n in range(count)]


def test_the_latest_write_is_the_plan() -> None:
    """Whole-list replace: the strip shows the last todo/write only."""
    fold = PlanFold.replay(
        [write(1, ("a", "in_progress"), ("b", "pending")), write(2, ("b", "in_progress"))]
    )
    assert fold.todos == (Todo("b", "in_progress"),)


def test_a_new_turn_clears_the_strip_until_the_next_write() -> None:
    """turn/start clears the standing plan; the next write brings a strip back."""
    strip = PlanStrip()
    assert strip.apply(write(1, ("a", "completed")))
    assert strip.apply(event(2, "turn/start", turn=2))
    assert strip.lines() == []
    assert not strip.apply(event(3, "message/user", {"text": "hi"}, turn=2))
    strip.apply(write(4, ("b", "pending"), turn=2))
    assert (strip.fold.todos, strip.fold.seq) == ((Todo("b", "pending"),), 4)
    assert len(strip.lines()) == 2


def test_a_turn_end_keeps_the_plan_standing() -> None:
    """Only turn/start clears: after turn/end the plan still stands (resume shows it)."""
    fold = PlanFold.replay([write(1, ("a", "pending")), event(2, "turn/end")])
    assert fold.plan.todos == (Todo("a", "pending"),) and fold.plan.standing


def test_malformed_items_are_skipped_not_fatal() -> None:
    """A write with junk items folds to its well-formed items."""
    bad = event(
        1,
        "todo/write",
        {"todos": [{"content": "ok", "status": "pending"}, {"content": 3}, "x", {"status": "?"}]},
    )
    assert todos_of(bad) == (Todo("ok", "pending"),)
    assert todos_of(event(2, "todo/write", {"todos": "nope"})) == ()


def test_a_short_list_shows_every_task() -> None:
    """Seven tasks or fewer: one row each, in order."""
    rows = strip_rows(tasks(5, 2))
    assert [row.text for row in rows] == [f"task {n}" for n in range(5)]
    assert [row.mark for row in rows] == ["☑", "☑", "▶", "☐", "☐"]


def test_a_long_list_collapses_around_the_active_task() -> None:
    """Twenty tasks: a window of seven centred on the active one, with counts either side."""
    rows = strip_rows(tasks(20, 10))
    assert rows[0].text == "7 more above" and rows[0].status is None
    assert [row.text for row in rows[1:-1]] == [f"task {n}" for n in range(7, 14)]
    assert rows[-1].text == "6 more below"
    assert rows[4].status == "in_progress"


def test_collapse_keeps_the_window_inside_the_list() -> None:
    """An active task near either end shows the first or last seven, one marker only."""
    start = strip_rows(tasks(12, 1))
    assert [row.text for row in start[:-1]] == [f"task {n}" for n in range(7)]
    assert start[-1].text == "5 more below"
    end = strip_rows(tasks(12, 11))
    assert end[0].text == "5 more above"
    assert [row.text for row in end[1:]] == [f"task {n}" for n in range(5, 12)]


def test_without_an_active_task_the_window_follows_the_next_pending_one() -> None:
    """No task in progress: centre on the first pending one; all done: show the last ones."""
    todos = [Todo(f"t{n}", "completed" if n < 9 else "pending") for n in range(15)]
    assert any(row.text == "t9" for row in strip_rows(todos))
    finished = strip_rows(tasks(15, None))
    assert finished[0].text == "8 more above"
    assert finished[-1].text == "task 14"


def test_plain_strip_has_a_header_with_the_count() -> None:
    """Off a terminal the strip is a header line and one indented line a task."""
    assert plain_strip(tasks(3, 1)) == [
        "Plan · 1/3 done",
        "  ☑ task 0",
        "  ▶ task 1",
        "  ☐ task 2",
    ]
    assert plain_strip([]) == []
