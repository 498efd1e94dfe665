"""Dev-mode invariants: each structural rule rejects the append that breaks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from harness_core.log import (
    Event,
    EventType,
    EventTypeRegistry,
    FileLog,
    InvariantViolation,
    SessionLog,
    SessionStore,
    dev_mode,
)
from harness_core.log._invariants import InvariantChecker
from pydantic import BaseModel

WriteTurn = Callable[[SessionLog, str], int]

CALL = {"id": "c1", "name": "bash", "arguments": "{}"}


def _result(call_id: str) -> dict[str, Any]:
    return {"call_id": call_id, "tool_name": "bash", "text": "ok"}


def _in_turn(store: SessionStore) -> SessionLog:
    log = store.create()
    log.append("turn/start", {}, turn=1)
    log.append("message/user", {"text": "go"}, turn=1)
    return log


def test_suite_runs_in_dev_mode() -> None:
    """The root conftest switches the invariants on for every test."""
    assert dev_mode()


@pytest.mark.parametrize("value", ["0", "2", "yes", "true", ""])
def test_only_harness_dev_1_switches_the_invariants_on(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """HARNESS_DEV is on with exactly "1"; any other value is off."""
    monkeypatch.setenv("HARNESS_DEV", value)
    assert not dev_mode()


class _CallNote(BaseModel):
    """A plugin event that happens to carry a call id (a progress note for a running call)."""

    text: str
    call_id: str | None = None


@pytest.mark.parametrize("kind", ["audit/note", "note/call", "web/note"])
def test_a_plugin_event_while_a_call_is_open_neither_answers_nor_blocks_it(
    log_store: SessionStore, log_registry: EventTypeRegistry, kind: str
) -> None:
    """Only tool/result answers a call, only turn events open or close a turn: a plugin type
    (named to sort before, between and after the core ones) may come while a call is open."""
    log_registry.declare(EventType(kind, _CallNote, surface=False))
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        log.append(kind, {"text": "working"}, turn=1)
        log.append(kind, {"text": "still working", "call_id": "c1"}, turn=1)
        log.append("tool/result", _result("c1"), turn=1)
        log.append(kind, {"text": "done"}, turn=1)
        log.append("turn/end", {"status": "completed"}, turn=1)


@pytest.mark.parametrize("kind", ["message/user", "turn/start", "todo/write"])
def test_the_first_event_can_only_be_session_start(kind: str) -> None:
    """Whatever the type's name, nothing but session/start may open a log."""
    with pytest.raises(InvariantViolation, match="first event must be session/start"):
        InvariantChecker().validate(Event(0, kind, "t", {}, 1))


def test_a_repeated_seq_is_rejected(log_store: SessionStore) -> None:
    """seq must be exactly the next one: neither a gap nor a repeat."""
    with _in_turn(log_store) as log:
        checker = InvariantChecker.from_tail(log.events)
        with pytest.raises(InvariantViolation, match="seq must be 3"):
            checker.validate(Event(2, "test/note", "t", {"text": "again"}, 1))


def test_a_session_with_only_its_header_reopens_and_takes_a_turn(
    log_store: SessionStore, log_registry: EventTypeRegistry
) -> None:
    """Reopened after a crash right after create: the next event is seq 1, in a new turn."""
    with log_store.create() as log:
        pass
    with FileLog.open(log.path, log_registry) as reopened:
        assert reopened.append("turn/start", {}, turn=1).seq == 1


def test_event_outside_a_turn_is_rejected(log_store: SessionStore) -> None:
    """After session/start, every event must sit inside an open turn."""
    with log_store.create() as log, pytest.raises(InvariantViolation, match="inside an open turn"):
        log.append("message/user", {"text": "hi"})


def test_event_after_turn_end_is_rejected(log_store: SessionStore, log_turn: WriteTurn) -> None:
    """A closed turn takes no more events."""
    with log_store.create() as log:
        log_turn(log, "one")
        with pytest.raises(InvariantViolation, match="inside an open turn"):
            log.append("message/user", {"text": "late"}, turn=1)


def test_nested_turn_is_rejected(log_store: SessionStore) -> None:
    """turn/start while a turn is open: turns do not nest."""
    with _in_turn(log_store) as log, pytest.raises(InvariantViolation, match="do not nest"):
        log.append("turn/start", {}, turn=2)


def test_turn_start_needs_a_number(log_store: SessionStore) -> None:
    """turn/start must carry its turn number."""
    with log_store.create() as log, pytest.raises(InvariantViolation, match="turn number"):
        log.append("turn/start", {})


def test_event_claiming_another_turn_is_rejected(log_store: SessionStore) -> None:
    """An event inside turn 1 cannot say it belongs to turn 2 (or to none)."""
    with _in_turn(log_store) as log:
        with pytest.raises(InvariantViolation, match="claims turn 2 inside turn 1"):
            log.append("message/user", {"text": "x"}, turn=2)
        with pytest.raises(InvariantViolation, match="claims turn None inside turn 1"):
            log.append("message/user", {"text": "x"})


def test_second_session_start_is_rejected(log_store: SessionStore) -> None:
    """session/start may only be the first event."""
    start = {"id": "x", "created": "t", "harness_version": "0"}
    with _in_turn(log_store) as log, pytest.raises(InvariantViolation, match="only be the first"):
        log.append("session/start", start, turn=1)


def test_first_event_must_be_session_start() -> None:
    """An empty log only takes session/start (the file layer also refuses to open one)."""
    with pytest.raises(InvariantViolation, match="first event"):
        InvariantChecker().validate(Event(0, "turn/start", "2026-01-01T00:00:00.000Z", {}, 1))


def test_result_must_answer_an_open_call(log_store: SessionStore) -> None:
    """A tool/result for a call nobody made is rejected."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        with pytest.raises(InvariantViolation, match="answer an open call"):
            log.append("tool/result", _result("c2"), turn=1)


def test_result_cannot_answer_twice(log_store: SessionStore) -> None:
    """A second result for the same call is rejected."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        log.append("tool/result", _result("c1"), turn=1)
        with pytest.raises(InvariantViolation, match="answer an open call"):
            log.append("tool/result", _result("c1"), turn=1)


def test_result_cannot_answer_an_older_assistant_message(log_store: SessionStore) -> None:
    """Only calls of the latest assistant message may be answered."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        log.append("tool/result", _result("c1"), turn=1)
        log.append("message/assistant", {"text": "next"}, turn=1)
        with pytest.raises(InvariantViolation, match="latest assistant message"):
            log.append("tool/result", _result("c1"), turn=1)


@pytest.mark.parametrize(
    ("kind", "payload"), [("message/user", {"text": "x"}), ("message/assistant", {"text": "x"})]
)
def test_message_while_calls_are_open_is_rejected(
    log_store: SessionStore, kind: str, payload: dict[str, Any]
) -> None:
    """No user or assistant message until every call of the assistant message is answered."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        with pytest.raises(InvariantViolation, match=r"\['c1'\] must be answered first"):
            log.append(kind, payload, turn=1)


def test_turn_end_with_open_calls_is_rejected(log_store: SessionStore) -> None:
    """A turn cannot end while a call is unanswered."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        with pytest.raises(InvariantViolation, match="unanswered calls"):
            log.append("turn/end", {"status": "completed"}, turn=1)


def test_seq_gap_is_rejected() -> None:
    """The checker refuses an event whose seq skips one."""
    checker = InvariantChecker()
    checker.check(Event(0, "session/start", "t", {}))
    with pytest.raises(InvariantViolation, match="seq must be 1"):
        checker.check(Event(2, "turn/start", "t", {}, 1))


def test_rejected_append_writes_nothing_and_the_log_continues(log_store: SessionStore) -> None:
    """A violation leaves the file and the state as they were; the correct event then works."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
        before = log.path.read_bytes()
        with pytest.raises(InvariantViolation):
            log.append("tool/result", _result("wrong"), turn=1)
        assert log.path.read_bytes() == before
        event = log.append("tool/result", _result("c1"), turn=1)
        assert event.seq == 4
        log.append("turn/end", {"status": "completed"}, turn=1)


def test_reopened_writer_checks_from_the_last_turn_boundary(log_store: SessionStore) -> None:
    """A writer reopening a crashed turn keeps checking it: open calls, turn number."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
    with log_store.open(log.session_id) as reopened:
        with pytest.raises(InvariantViolation, match="unanswered calls"):
            reopened.append("turn/end", {"status": "error"}, turn=1)
        reopened.append("tool/result", _result("c1"), turn=1)
        reopened.append("turn/end", {"status": "error"}, turn=1)


def test_history_is_not_rechecked_on_open(
    log_store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log written without dev mode (breaking rules) still opens for writing in dev mode."""
    monkeypatch.setenv("HARNESS_DEV", "0")
    assert not dev_mode()
    with log_store.create() as log:
        log.append("message/user", {"text": "outside any turn"})
        log.append("tool/result", _result("nobody"))
    monkeypatch.setenv("HARNESS_DEV", "1")
    with log_store.open(log.session_id) as reopened:
        assert len(reopened.events) == 3
        reopened.append("turn/start", {}, turn=1)


def test_calls_outside_any_turn_in_a_damaged_log_do_not_block_the_next_turn(
    log_store: SessionStore, log_registry: EventTypeRegistry
) -> None:
    """A garbled turn/start leaves a call outside any turn: a writer can still start a turn."""
    with _in_turn(log_store) as log:
        log.append("message/assistant", {"tool_calls": [CALL]}, turn=1)
    lines = log.path.read_bytes().split(b"\n")
    lines[1] = b"z" + lines[1][1:]  # found by tests/test_fuzz.py: the turn/start is not JSON
    log.path.write_bytes(b"\n".join(lines))
    with FileLog.open(log.path, log_registry) as reopened:
        reopened.append("turn/start", {}, turn=2)
        reopened.append("message/user", {"text": "go on"}, turn=2)
    assert reopened.projection.request_messages()[-1] == {"role": "user", "content": "go on"}
