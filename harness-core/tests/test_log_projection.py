"""The model's message history as a projection of surface events."""

from __future__ import annotations

from typing import Any

from harness_core.log import (
    INTERRUPTED_TEXT,
    Event,
    MessageProjection,
    SessionStore,
    derive_messages,
)


def _events(*specs: tuple[str, dict[str, Any]]) -> list[Event]:
    return [Event(seq, kind, "t", data, 1) for seq, (kind, data) in enumerate(specs)]


def _start(prompt: str | None = "sys") -> tuple[str, dict[str, Any]]:
    return "session/start", {
        "id": "s",
        "created": "t",
        "harness_version": "0",
        "system_prompt": prompt,
    }


def _user(text: str) -> tuple[str, dict[str, Any]]:
    return "message/user", {"text": text}


def _assistant(text: str | None = None, *calls: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    tool_calls = [{"id": c, "name": "bash", "arguments": f'{{"n": "{c}"}}'} for c in calls]
    return "message/assistant", {"text": text, "tool_calls": tool_calls, **extra}


def _result(call_id: str, text: str = "out") -> tuple[str, dict[str, Any]]:
    return "tool/result", {"call_id": call_id, "tool_name": "bash", "text": text, "is_error": False}


def _interrupted(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_TEXT, "is_error": True}


def test_conversation_maps_to_openai_chat_messages() -> None:
    """System prompt, user, assistant tool calls (raw arguments) and results, in order."""
    messages = derive_messages(
        _events(
            _start(),
            _user("hi"),
            _assistant("Looking.", "c1", "c2"),
            _result("c1", "a"),
            _result("c2", "b"),
            _assistant("Done."),
        )
    )
    assert messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"n": "c1"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"n": "c2"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
        {"role": "assistant", "content": "Done."},
    ]


def test_no_system_message_without_a_prompt() -> None:
    """A session without a system prompt starts with the first user message."""
    assert derive_messages(_events(_start(None), _user("hi"))) == [
        {"role": "user", "content": "hi"}
    ]


def test_malformed_arguments_are_replayed_byte_for_byte() -> None:
    """The raw argument string is sent back unparsed, even when it is not JSON."""
    call = {"id": "c1", "name": "bash", "arguments": '{"command": "ls"'}
    messages = derive_messages(
        _events(("message/assistant", {"tool_calls": [call]}), _result("c1"))
    )
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == '{"command": "ls"'
    assert messages[0]["content"] == ""


def test_reasoning_content_is_sent_back_only_when_present() -> None:
    """DeepSeek's reasoning_content rides on the assistant message that produced it."""
    messages = derive_messages(
        _events(_assistant("a", reasoning_content="thinking"), _assistant("b"))
    )
    assert messages[0]["reasoning_content"] == "thinking"
    assert "reasoning_content" not in messages[1]


def test_unanswered_call_is_interrupted_next_to_its_assistant_message() -> None:
    """A call left open when the user speaks again gets a synthetic result before the user turn."""
    projection = MessageProjection()
    projection.apply_all(_events(_assistant(None, "c1", "c2"), _result("c1"), _user("next")))
    roles = [(m["role"], m.get("tool_call_id")) for m in projection.messages]
    assert roles == [("assistant", None), ("tool", "c1"), ("tool", "c2"), ("user", None)]
    assert projection.messages[2] == _interrupted("c2")


def test_open_calls_are_answered_in_the_request_but_not_stored() -> None:
    """At the end of the log, open calls are answered in `request_messages` only."""
    projection = MessageProjection()
    projection.apply_all(_events(_user("go"), _assistant(None, "c1", "c2"), _result("c2")))
    assert projection.pending_calls == {"c1": "bash"}
    assert projection.request_messages()[-1] == _interrupted("c1")
    assert len(projection.messages) == 3
    projection.apply(Event(9, "tool/result", "t", _result("c1")[1]))
    assert projection.request_messages() is projection.messages


def test_stray_and_duplicate_results_are_dropped_with_a_problem() -> None:
    """A result answering no open call never reaches the history; it is reported."""
    projection = MessageProjection()
    projection.apply_all(
        _events(
            _assistant(None, "c1"),
            _result("c1"),
            _result("c1"),
            _result("nobody"),
            _assistant("x", "c2"),
            _result("c1"),
        )
    )
    assert [m.get("tool_call_id") for m in projection.messages] == [None, "c1", None]
    assert len(projection.problems) == 3
    assert all("answers no open call" in p for p in projection.problems)


def test_non_surface_and_unknown_types_are_ignored() -> None:
    """turn markers, plugin types and unknown types never change the messages."""
    plain = derive_messages(_events(_user("hi"), _assistant("yo")))
    noisy = derive_messages(
        _events(
            ("turn/start", {}),
            _user("hi"),
            ("todo/write", {"todos": []}),
            ("someone/else", {"text": "x"}),
            _assistant("yo"),
            ("turn/end", {"status": "completed"}),
        )
    )
    assert noisy == plain


def test_malformed_payload_is_skipped_with_a_problem() -> None:
    """A payload missing required keys is skipped and reported, not fatal."""
    projection = MessageProjection()
    projection.apply_all(
        _events(("message/user", {}), ("message/assistant", {"tool_calls": [{}]}), _user("ok"))
    )
    assert projection.messages == [{"role": "user", "content": "ok"}]
    assert len(projection.problems) == 2
    assert projection.problems[0].startswith("seq 0: malformed message/user payload skipped")


def test_malformed_result_leaves_its_call_open() -> None:
    """A result without text does not consume its call: the call is answered as interrupted."""
    projection = MessageProjection()
    projection.apply_all(_events(_assistant(None, "c1"), ("tool/result", {"call_id": "c1"})))
    assert projection.pending_calls == {"c1": "bash"}
    assert projection.request_messages()[-1] == _interrupted("c1")


def test_stray_session_start_does_not_split_a_call_from_its_results() -> None:
    """A second session/start in a damaged file closes open calls before its system message."""
    projection = MessageProjection()
    projection.apply_all(_events(_assistant(None, "c1"), _start("again"), _result("c1")))
    assert [m["role"] for m in projection.request_messages()] == ["assistant", "tool", "system"]


def test_surface_types_decide_what_is_folded() -> None:
    """Only the given surface types are visited."""
    events = _events(_start(), _user("hi"))
    assert derive_messages(events, {"message/user"}) == [{"role": "user", "content": "hi"}]


def test_appending_extends_the_history_without_rebuilding_it(log_store: SessionStore) -> None:
    """One append adds one message; earlier message objects are untouched (incremental)."""
    with log_store.create(system_prompt="sys") as log:
        log.append("turn/start", {}, turn=1)
        messages = log.projection.messages
        log.append("message/user", {"text": "one"}, turn=1)
        first = log.projection.messages[-1]
        log.append("message/assistant", {"text": "two"}, turn=1)
        log.append("test/note", {"text": "not surface"}, turn=1)
        assert log.projection.messages is messages
        assert messages[1] is first
        assert [m["content"] for m in messages] == ["sys", "one", "two"]
        assert log.projection.request_messages() == derive_messages(
            log.events, log_store.registry.surface
        )
