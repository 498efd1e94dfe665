"""`plan_history`: every revision of the list with what changed, dropped work included."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
from harness_core.log import Event
from harness_core.loop import Agent
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext
from harness_tool_todo.projections import Change, Plan, Todo, diff, plan_history
from todo_helpers import open_turn, raw


def todos(*pairs: tuple[str, str]) -> tuple[Todo, ...]:
    return tuple(Todo(c, s) for c, s in pairs)  # type: ignore[arg-type]


def described(old: tuple[Todo, ...], new: tuple[Todo, ...]) -> list[str]:
    return [change.describe() for change in diff(old, new)]


PEND, ACTIVE, DONE = "pending", "in_progress", "completed"


def test_added_started_completed() -> None:
    """New items are added; status moves are started and completed."""
    assert described((), todos(("Read", PEND), ("Fix", PEND))) == ['added "Read"', 'added "Fix"']
    assert described(
        todos(("Read", PEND), ("Fix", PEND)), todos(("Read", ACTIVE), ("Fix", PEND))
    ) == ['started "Read"']
    assert described(
        todos(("Read", ACTIVE), ("Fix", PEND)), todos(("Read", DONE), ("Fix", ACTIVE))
    ) == [
        'completed "Read"',
        'started "Fix"',
    ]


def test_added_with_a_status() -> None:
    """An item that arrives active or done is added and then started or completed."""
    assert described((), todos(("Plan", DONE), ("Build", ACTIVE))) == [
        'added "Plan"',
        'completed "Plan"',
        'added "Build"',
        'started "Build"',
    ]


def test_reopened_and_paused() -> None:
    """Completed work coming back is reopened; active work going back to pending is paused."""
    old = todos(("Run tests", DONE), ("Deploy", ACTIVE))
    new = todos(("Run tests", ACTIVE), ("Deploy", PEND))
    assert described(old, new) == ['reopened "Run tests"', 'paused "Deploy"']
    assert described(todos(("Run tests", DONE)), todos(("Run tests", PEND))) == [
        'reopened "Run tests"'
    ]


def test_dropped_while_unfinished_versus_removed() -> None:
    """An unfinished item that vanishes is dropped; a completed one is merely removed."""
    old = todos(
        ("Read the code", DONE), ("Write a migration", ACTIVE), ("Update the changelog", PEND)
    )
    new = todos(("Ship it", PEND))
    assert described(old, new) == [
        'added "Ship it"',
        'removed "Read the code"',
        'dropped unfinished "Write a migration"',
        'dropped unfinished "Update the changelog"',
    ]
    kinds = [c.kind for c in diff(old, new)]
    assert kinds == ["added", "removed", "dropped", "dropped"]


def test_reworded() -> None:
    """A vanished item and a new one that read alike are one task reworded."""
    old = todos(("Read", DONE), ("Fix bug", ACTIVE), ("Test", PEND))
    new = todos(("Read", DONE), ("Fix the parser bug", ACTIVE), ("Test", PEND))
    assert diff(old, new) == (Change("reworded", "Fix the parser bug", previous="Fix bug"),)
    assert described(old, new) == ['reworded "Fix bug" -> "Fix the parser bug"']


def test_reworded_and_finished_in_one_write() -> None:
    """A rewording that also changes status reports both."""
    old = todos(("Update config loader", ACTIVE))
    new = todos(("Update the config loader", DONE))
    assert described(old, new) == [
        'reworded "Update config loader" -> "Update the config loader"',
        'completed "Update the config loader"',
    ]


def test_rewording_survives_an_insertion_before_it() -> None:
    """Pairing is by resemblance, so an item inserted above does not break it."""
    old = todos(("Read the code", DONE), ("Run tests", PEND))
    new = todos(
        ("Add a regression test", PEND), ("Read the code", DONE), ("Run the unit tests", PEND)
    )
    assert described(old, new) == [
        'added "Add a regression test"',
        'reworded "Run tests" -> "Run the unit tests"',
    ]


def test_unrelated_replacement_is_not_a_rewording() -> None:
    """A different task in the same slot is an addition and a drop, never a silent rewording."""
    old = todos(("Read the code", DONE), ("Write a migration", PEND))
    new = todos(("Read the code", DONE), ("Email the team", PEND))
    assert described(old, new) == [
        'added "Email the team"',
        'dropped unfinished "Write a migration"',
    ]


def test_unchanged_write_has_no_changes() -> None:
    """Resending the same list records a revision with nothing changed."""
    same = todos(("Read", DONE), ("Fix", ACTIVE))
    assert diff(same, same) == ()


async def test_history_of_a_real_session(todo_host: PluginHost, agent: Agent) -> None:
    """Revisions carry seq, ts and turn from the log, oldest first, non-todo events ignored."""

    async def write(*pairs: tuple[str, str]) -> Event:
        arguments = raw({"todos": [{"content": c, "status": s} for c, s in pairs]})
        await todo_host.tools.execute("todo_write", arguments, ExecContext(agent=agent))
        return agent.session.events[-1]

    first = await write(("Read the code", ACTIVE), ("Fix the bug", PEND), ("Write docs", PEND))
    second = await write(("Read the code", DONE), ("Fix the bug", ACTIVE), ("Write docs", PEND))
    open_turn(agent)
    third = await write(("Read the code", DONE), ("Fix the login bug", DONE))
    history = plan_history(agent.session.events)
    assert [(r.seq, r.ts, r.turn) for r in history] == [
        (e.seq, e.ts, e.turn) for e in (first, second, third)
    ]
    assert [r.turn for r in history] == [1, 1, 2]
    assert [[c.describe() for c in r.changes] for r in history] == [
        [
            'added "Read the code"',
            'started "Read the code"',
            'added "Fix the bug"',
            'added "Write docs"',
        ],
        ['completed "Read the code"', 'started "Fix the bug"'],
        [
            'reworded "Fix the bug" -> "Fix the login bug"',
            'completed "Fix the login bug"',
            'dropped unfinished "Write docs"',
        ],
    ]
    assert history[2].export() == {
        "seq": third.seq,
        "ts": third.ts,
        "turn": 2,
        "todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the login bug", "status": "completed"},
        ],
        "changes": [
            {"kind": "reworded", "content": "Fix the login bug", "previous": "Fix the bug"},
            {"kind": "completed", "content": "Fix the login bug", "previous": None},
            {"kind": "dropped", "content": "Write docs", "previous": None},
        ],
    }


def test_large_lists_skip_rewording_but_stay_correct() -> None:
    """Past the pairing budget every vanished item is still reported (no rewording guesses)."""
    old = todos(*[(f"old task {i}", PEND) for i in range(60)])
    new = todos(*[(f"new task {i}", PEND) for i in range(60)])
    kinds = [c.kind for c in diff(old, new)]
    assert kinds.count("added") == 60
    assert kinds.count("dropped") == 60


def test_a_shortened_wording_is_a_rewording() -> None:
    """New words all among the old ones: the same task, however much shorter."""
    old = todos(("Fix the flaky integration test in the parser module", ACTIVE))
    new = todos(("Fix the parser", ACTIVE))
    assert described(old, new) == [
        'reworded "Fix the flaky integration test in the parser module" -> "Fix the parser"'
    ]


def test_one_old_task_is_reworded_into_one_new_task_at_most() -> None:
    """Two new tasks that both read like one old task: one rewording, one addition."""
    old = todos(("Write the tests", PEND))
    new = todos(("Write the unit tests", PEND), ("Write the e2e tests", PEND))
    kinds = [c.kind for c in diff(old, new)]
    assert sorted(kinds) == ["added", "reworded"]


def test_rewordings_are_paired_up_to_exactly_the_pairing_budget() -> None:
    """50 vanished x 50 new is 2,500 pairs, within the budget: each rewording is found."""
    old = todos(*[(f"Check module {i} carefully", PEND) for i in range(50)])
    new = todos(*[(f"Check module {i} very carefully", PEND) for i in range(50)])
    assert [c.kind for c in diff(old, new)] == ["reworded"] * 50


def test_a_rewording_pairs_with_the_most_alike_old_task() -> None:
    """Two vanished tasks both resemble the new one: the closer wording wins."""
    old = todos(("Fix the lexer", PEND), ("Fix the parser bug", PEND))
    new = todos(("Fix the parser bugs", PEND))
    assert described(old, new) == [
        'reworded "Fix the parser bug" -> "Fix the parser bugs"',
        'dropped unfinished "Fix the lexer"',
    ]


def test_equally_alike_old_tasks_pair_by_nearest_position() -> None:
    """Both old wordings contain the new one: the task at the nearest position is the one."""
    old = todos(("Run the tests now", PEND), ("Read", DONE), ("Run the tests later", PEND))
    new = todos(("Read", DONE), ("Extra", PEND), ("Run the tests", PEND))
    assert described(old, new) == [
        'added "Extra"',
        'reworded "Run the tests later" -> "Run the tests"',
        'dropped unfinished "Run the tests now"',
    ]


def _write_event(items: tuple[Todo, ...]) -> Event:
    data = {"todos": [{"content": t.content, "status": t.status} for t in items]}
    return Event(1, "todo/write", "2026-01-01T00:00:00.000Z", data, 1)


def test_the_projections_are_immutable_values() -> None:
    """A host cannot change what another host reads: every projection value is frozen."""
    (revision,) = plan_history([_write_event(todos(("a", PEND)))])
    values = [revision, revision.todos[0], Change("added", "a"), Plan((), standing=False)]
    for value in values:
        field = next(iter(value.__dataclass_fields__))
        with pytest.raises(FrozenInstanceError):
            setattr(value, field, None)
