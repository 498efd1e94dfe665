"""`context/compact` in the message projection: the span it replaces, the tail it keeps."""

from __future__ import annotations

from collections.abc import Callable

from harness_core.log import (
    SUMMARY_HEADER,
    ContextCompact,
    EventTypeRegistry,
    FileLog,
    History,
    SessionLog,
    SessionStore,
    derive_messages,
)

WriteTurn = Callable[[SessionLog, str], int]


def _compact(log: SessionLog, keep: int, summary: str = "the summary") -> ContextCompact:
    """Append a compaction of everything but the last `keep` messages, inside a turn."""
    span = log.projection.compaction_range(keep, log.events[-1].seq)
    assert span is not None
    payload = ContextCompact(
        summary=summary, first_seq=span.first_seq, last_seq=span.last_seq, model="m"
    )
    turn = (log.latest(("turn/start",)) or log.events[0]).turn or 0
    log.append("turn/start", {}, turn=turn + 1)
    log.append("context/compact", payload, turn=turn + 1)
    log.append("turn/end", {"status": "completed"}, turn=turn + 1)
    log.commit()
    return payload


def test_a_compaction_replaces_its_span_with_one_summary_message(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """System prompt, then the summary as a user message, then the kept tail, in that order."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        log_turn(log, "two")
        before = log.projection.request_messages()
        events = len(log.events)
        _compact(log, keep=1)
        messages = log.projection.request_messages()
    assert messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": f"{SUMMARY_HEADER}\n\nthe summary"},
        before[-1],
    ]
    assert len(log.events) == events + 3  # nothing left the log


def test_the_kept_tail_never_starts_with_a_tool_result(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Asked to keep one message (a tool result), the cut moves back to the calling message."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        log_turn(log, "two")
        messages = log.projection.request_messages()
        span = log.projection.compaction_range(2, log.events[-1].seq)  # answer + a result
        assert span is not None
        kept = messages[span.messages :]
    assert kept[0]["role"] == "assistant" and kept[0]["tool_calls"]
    assert [m["role"] for m in kept] == ["assistant", "tool", "tool", "assistant"]


def test_keeping_nothing_replaces_everything_through_the_last_event(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """A compaction by hand: the system prompt, then only the summary; the span ends at `through`."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        last = log.events[-1].seq
        payload = _compact(log, keep=0)
        messages = log.projection.request_messages()
    assert (payload.first_seq, payload.last_seq) == (1, last)
    assert messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": f"{SUMMARY_HEADER}\n\nthe summary"},
    ]


def test_a_second_compaction_replaces_the_first_summary(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Compactions nest: the newer summary stands for everything the older one did."""
    with log_store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        _compact(log, keep=1, summary="first")
        log_turn(log, "two")
        _compact(log, keep=1, summary="second")
        messages = log.projection.request_messages()
    contents = [m["content"] for m in messages]
    assert contents[:2] == ["sys", f"{SUMMARY_HEADER}\n\nsecond"]
    assert not any("first" in str(c) for c in contents)
    assert messages[-1] == {"role": "assistant", "content": "Answer 3."}


def test_a_reopened_compacted_session_derives_the_same_messages(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """Replay renders compactions exactly as the live projection did (prompt caches rely on it)."""
    with log_store.create(system_prompt="sys") as log:
        for number in range(3):
            log_turn(log, f"prompt {number}")
            _compact(log, keep=3, summary=f"summary {number}")
        live = log.projection.request_messages()
    reopened = FileLog.open(log.path, log_store.registry, writable=False)
    assert reopened.projection.request_messages() == live
    assert derive_messages(reopened.events, log_store.registry.surface) == live


def test_what_plugins_carry_follows_the_summary(
    log_store: SessionStore, log_turn: WriteTurn
) -> None:
    """The registry's carry sees only the events before the compaction; its texts follow."""
    seen: list[int] = []

    def carry(history: History) -> list[str]:
        newest = history.latest(("message/user", "message/assistant", "turn/start", "test/note"))
        assert newest is not None
        seen.append(newest.seq)
        return [f"carried up to seq {newest.seq}"]

    registry = EventTypeRegistry(carry=carry)
    registry.declare(log_store.registry.get("test/note"))  # type: ignore[arg-type]
    store = SessionStore(log_store.home, registry)
    with store.create(system_prompt="sys") as log:
        log_turn(log, "one")
        _compact(log, keep=1)
        summary = log.projection.request_messages()[1]["content"]
    compaction = next(e for e in log.events if e.type == "context/compact")
    assert summary.endswith(f"\n\ncarried up to seq {compaction.seq - 1}")
    reopened = FileLog.open(log.path, registry, writable=False)
    assert reopened.projection.request_messages()[1]["content"] == summary
    assert seen == [compaction.seq - 1] * 2
