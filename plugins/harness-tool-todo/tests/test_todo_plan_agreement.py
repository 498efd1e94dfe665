"""Property: every reading of the standing plan agrees: the fold the strip and the snapshot
apply, the in-memory scan, and the tail query of the session file."""

from __future__ import annotations

from pathlib import Path

from harness_core.log import SessionStore
from harness_core.plugins import PluginHost
from harness_tool_todo._hosts import PlanSnapshot, PlanStrip
from harness_tool_todo.projections import PlanFold, read_plan, standing_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STATUSES = ("pending", "in_progress", "completed")

writes = st.lists(
    st.tuples(
        st.sampled_from(["Read", "Fix", "Test", "Ship", "a\u2028b", " x "]),
        st.sampled_from(STATUSES),
    ),
    max_size=4,
    unique_by=lambda item: item[0],
)
# One step of a session: open a new turn, write a list, or say something (no plan change);
# what is said is up to a few blocks of the tail query's reads long, so the query's runs of
# lines start and end anywhere in a line.
steps = st.lists(
    st.one_of(
        st.just(("turn",)),
        writes.map(lambda w: ("write", w)),
        st.integers(0, 12_000).map(lambda length: ("say", length)),
    ),
    max_size=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=steps)
def test_every_reading_of_the_standing_plan_agrees(
    todo_host: PluginHost, tmp_path: Path, script: list[tuple[object, ...]]
) -> None:
    """Fold, scan, tail query, strip and snapshot fields give one answer after any history."""
    store = SessionStore(tmp_path / f"home-{len(list(tmp_path.iterdir()))}", todo_host.event_types)
    with store.create() as log:
        turn = 0
        for step in script:
            if step[0] == "turn" or turn == 0:
                if turn:
                    log.append("turn/end", {"status": "completed"}, turn=turn)
                turn += 1
                log.append("turn/start", {}, turn=turn)
            if step[0] == "write":
                todos = [{"content": c, "status": s} for c, s in step[1]]  # type: ignore[union-attr]
                log.append("todo/write", {"todos": todos}, turn=turn)
            elif step[0] == "say":
                length = step[1]
                assert isinstance(length, int)
                log.append("message/user", {"text": "hi " * (length // 3)}, turn=turn)
        log.commit()
        fold = PlanFold.replay(log.events)
        strip, snapshot = PlanStrip(), PlanSnapshot()
        for event in log.events:
            strip.apply(event)
            snapshot.apply(event)
        plan = fold.plan
        assert standing_plan(log.events) == plan
        assert read_plan(store, log.session_id) == plan
        shown = [todo.export() for todo in plan.todos] if plan.standing else []
        assert snapshot.fields() == {"todos": shown}
        assert bool(strip.lines()) == bool(shown)
