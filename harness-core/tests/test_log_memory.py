"""What a session log keeps in memory: a writer holds no events, only the folds its turns
read; anything older comes back from the file (docs/log.md, "Memory")."""

from __future__ import annotations

import gc
from collections.abc import Callable, Collection

import pytest
from harness_core.hosts import Conversation, SessionSnapshot
from harness_core.log import Event, SessionLog, SessionStore, ToolApproval

WriteTurn = Callable[[SessionLog, str], int]


def _written(store: SessionStore, write_turn: WriteTurn, turns: int) -> SessionLog:
    log = store.create(system_prompt="sys")
    for number in range(turns):
        write_turn(log, f"prompt {number}")
    return log


def _events_alive() -> int:
    gc.collect()
    return sum(isinstance(o, Event) for o in gc.get_objects())


def test_a_writer_holds_no_events_however_long_its_session(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Appending 400 turns leaves a few events alive (the newest of each type), not 3,200,
    once the projection has folded what was appended (the loop reads it every step)."""
    before = _events_alive()
    with _written(log_store, log_turn, 400) as log:
        assert log.next_seq == 1 + 400 * 8
        log.projection.catch_up()
        assert _events_alive() - before < 20
    with log_store.open(log.session_id) as reopened:  # a replay of the file keeps none either
        assert reopened.next_seq == log.next_seq
        assert _events_alive() - before < 40


def test_history_reads_back_what_the_writer_appended(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """`history()` and `events` on a writer equal what a reader of the file holds."""
    with _written(log_store, log_turn, 3) as log:
        reader = log_store.open(log.session_id, writable=False)
        assert [e.to_json() for e in log.history()] == [e.to_json() for e in reader.events]
        assert log.events == reader.events
        assert log.start is not None and log.start.type == "session/start"


def test_latest_answers_from_the_folds_as_a_scan_back_would(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """The newest event of any set of types, on a writer and on a reopened writer alike."""
    with _written(log_store, log_turn, 3) as log:
        events = log.events
        for types in (("turn/start",), ("tool/result", "test/note"), ("turn/end", "nothing")):
            expected = next((e for e in reversed(events) if e.type in types), None)
            assert log.latest(types) == expected
        assert log.latest("nothing") is None
    with log_store.open(log.session_id) as again:
        assert again.latest(("tool/result", "test/note")) == expected_result(events)


def expected_result(events: list[Event]) -> Event:
    return next(e for e in reversed(events) if e.type in ("tool/result", "test/note"))


def test_session_grants_survive_a_reopen_without_the_events(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A user's "allow for this session" is folded on append and again on open."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        assert log.grants.tools == set()
        call = log.latest("message/assistant")
        assert call is not None
        log.append("turn/start", {}, turn=2)
        log.append("message/user", {"text": "two"}, turn=2)
        calls = [{"id": "c1", "name": "bash", "arguments": "{}"}]
        log.append("message/assistant", {"text": None, "tool_calls": calls}, turn=2)
        decision = ToolApproval(call_id="c1", decision="allow", by="user", scope="session")
        log.append("tool/approval", decision, turn=2)
        assert log.grants.tools == {"bash"}
    with log_store.open(log.session_id) as reopened:
        assert reopened.grants.tools == {"bash"}


def test_a_live_conversation_keeps_only_the_open_calls(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """`Conversation(keep=False)` reports every change but remembers no finished entry."""
    with _written(log_store, log_turn, 5) as log:
        events = log.events
    kept, live = Conversation(), Conversation(keep=False)
    kinds = [(kept.apply(e).kind, live.apply(e).kind) for e in events]
    assert all(a == b for a, b in kinds)
    assert len(kept.entries) == 15 and sum(len(entry.rows) for entry in kept.entries) == 10
    assert live.entries == [] and live.running == []


def _calls(log: SessionLog, turn: int, *ids: str) -> None:
    calls = [{"id": i, "name": "bash", "arguments": f'{{"command": "echo {i}"}}'} for i in ids]
    log.append("message/assistant", {"text": None, "tool_calls": calls}, turn=turn)


def _result(log: SessionLog, turn: int, call_id: str, *, error: bool = False) -> None:
    result = {"call_id": call_id, "tool_name": "bash", "text": f"out {call_id}", "is_error": error}
    log.append("tool/result", {**result, "data": {"exit_code": int(error)}}, turn=turn)


def test_a_snapshot_keeps_seqs_and_makes_every_row_a_kept_conversation_holds(
    log_store: SessionStore, log_turn: WriteTurn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SessionSnapshot keeps a call as seqs, not as a row: for every page of a session the
    rows it makes (reading back the events outside the page) are those of a conversation
    that keeps every entry, through approvals, errors, a call a message closed, a result
    that came late, a repeated call id and a call still running (what a crash or an older
    writer may leave: the dev invariants, which refuse some of it, are off)."""
    monkeypatch.delenv("HARNESS_DEV")
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        log.append("turn/start", {}, turn=2)
        log.append("message/user", {"text": "two"}, turn=2)
        _calls(log, 2, "a", "b")
        log.append("tool/approval", ToolApproval(call_id="a", decision="allow", by="user"), turn=2)
        _result(log, 2, "a")
        _result(log, 2, "b", error=True)
        _calls(log, 2, "c")
        log.append("message/user", {"text": "interrupting"}, turn=2)  # c: closed, unanswered
        _result(log, 2, "c")  # too late: answers no open call
        _calls(log, 2, "a")  # an id used again
        _result(log, 2, "a", error=True)
        _calls(log, 2, "d")  # still running
        events = log.events
    snapshot, kept = SessionSnapshot([]), Conversation()
    for event in events:
        snapshot.apply(event)
        kept.apply(event)
    every = {row.call_id: row for entry in kept.entries for row in entry.rows}  # by id, last
    by_seq = {event.seq: event for event in events}
    fetched: list[int] = []

    def fetch(seqs: Collection[int]) -> dict[int, Event]:
        fetched.extend(seqs)
        return {seq: by_seq[seq] for seq in seqs}

    for size in (1, 3, len(events)):
        for start in range(0, len(events), size):
            page = events[start : start + size]
            made = snapshot.rows(page, fetch)
            calls = {str(e.data.get("call_id")) for e in page if e.type == "tool/result"}
            calls |= {c["id"] for e in page for c in e.data.get("tool_calls") or ()}
            assert made == {call: every[call] for call in calls}
    assert fetched  # pages cut between a call and its result read the other back
    states = {call: every[call].state for call in "abcd"}
    assert states == {"a": "error", "b": "error", "c": "error", "d": "running"}
    assert every["a"].text == "out a" and every["c"].approval is None


def test_a_log_is_freed_the_moment_it_is_dropped(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """No reference cycle keeps a log (and a reader's events) alive until the cyclic
    collector runs: a host that lets sessions go gets their memory back at once."""
    import weakref

    with _written(log_store, log_turn, 3) as log:
        session_id = log.session_id
    gc.disable()
    try:
        for writable in (False, True):
            opened = log_store.open(session_id, writable=writable)
            opened.projection.request_messages()
            gone = weakref.ref(opened)
            opened.close()
            del opened
            assert gone() is None, f"writable={writable}"
    finally:
        gc.enable()
