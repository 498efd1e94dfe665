"""Property: the writer's incremental projection equals a fresh replay, and is always well formed."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from harness_core.log import EventTypeRegistry, FileLog, SessionLog, SessionStore, derive_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

Op = tuple[Any, ...]

_texts = st.text(max_size=12) | st.sampled_from(["\u2028", "🙂", "\x00", ""])

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("user"), _texts),
        st.tuples(
            st.just("assistant"),
            st.none() | _texts,
            st.integers(0, 3),
            st.none() | _texts,  # reasoning_content
        ),
        # Which call a result answers: an open one, one already answered, one of an older
        # assistant message, or one nobody made. The index picks among the candidates.
        st.tuples(
            st.just("result"),
            st.sampled_from(["open", "open", "open", "answered", "older", "stray"]),
            st.integers(0, 5),
            _texts,
        ),
        st.tuples(st.just("note"), _texts),
        st.tuples(st.just("turn"), st.booleans()),
    ),
    max_size=40,
)


class _Scenario:
    """Turns abstract ops into appends, tracking which calls exist, so results can target them."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.calls = 0
        self.open: list[str] = []
        self.answered: list[str] = []
        self.older: list[str] = []

    def apply(self, op: Op) -> None:
        kind = op[0]
        if kind == "user":
            self.log.append("message/user", {"text": op[1]}, turn=1)
        elif kind == "assistant":
            self._assistant(op[1], op[2], op[3])
        elif kind == "result":
            self._result(op[1], op[2], op[3])
        elif kind == "note":
            self.log.append("test/note", {"text": op[1]}, turn=1)
        elif op[1]:
            self.log.append("turn/start", {}, turn=1)
        else:
            self.log.append("turn/end", {"status": "completed"}, turn=1)

    def _assistant(self, text: str | None, count: int, reasoning: str | None) -> None:
        ids = [f"call_{self.calls + n}" for n in range(count)]
        self.calls += count
        calls = [{"id": i, "name": "tool", "arguments": '{"x": 1'} for i in ids]
        data: dict[str, Any] = {"text": text, "tool_calls": calls, "reasoning_content": reasoning}
        self.log.append("message/assistant", data, turn=1)
        self.older += self.open + self.answered
        self.open, self.answered = ids, []

    def _result(self, target: str, index: int, text: str) -> None:
        pool = {"open": self.open, "answered": self.answered, "older": self.older}.get(target)
        call_id = pool[index % len(pool)] if pool else "nobody"
        if call_id in self.open:
            self.open.remove(call_id)
            self.answered.append(call_id)
        payload = {"call_id": call_id, "tool_name": "tool", "text": text}
        self.log.append("tool/result", payload, turn=1)


def _assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """Tool messages sit right after their assistant message; every call is answered once."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"tool message without its call at {index}"
        index += 1
        if message["role"] != "assistant" or "tool_calls" not in message:
            continue
        answers = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answers.append(messages[index]["tool_call_id"])
            index += 1
        # Results keep the order they were appended in (the loop appends them in call order).
        assert sorted(answers) == sorted(call["id"] for call in message["tool_calls"])


@pytest.mark.slow
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=_ops)
def test_incremental_projection_equals_a_fresh_replay(
    ops: list[Op], log_registry: EventTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For any event sequence, the writer's projection is what replaying the file derives."""
    monkeypatch.setenv("HARNESS_DEV", "0")  # the sequences break the rules on purpose
    with tempfile.TemporaryDirectory() as home:
        store = SessionStore(Path(home), log_registry)
        with store.create(system_prompt="sys") as log:
            scenario = _Scenario(log)
            for op in ops:
                scenario.apply(op)
                incremental = log.projection.request_messages()
                assert incremental == derive_messages(log.events, log_registry.surface)
                _assert_well_formed(incremental)
            incremental = log.projection.request_messages()
        replayed = FileLog.open(log.path, log_registry, writable=False)
        assert replayed.events == log.events
        assert derive_messages(replayed.events, log_registry.surface) == incremental
        assert replayed.projection.request_messages() == incremental
        assert replayed.projection.pending_calls == log.projection.pending_calls
