"""The on-disk envelope: key order, encoding, decoding, and text that must survive a round trip."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from harness_core.log import EnvelopeError, Event, FileLog, SessionStore, UserMessage
from harness_core.log._envelope import decode_line, now_ts

# Each of these breaks `str.splitlines()` (or a naive C reader) but is legal inside a JSON string.
TRICKY_TEXTS = [
    "line separator \u2028 inside",
    "paragraph separator \u2029 inside",
    "next line \x85, file/group/record separators \x1c\x1d\x1e, \x0b and \x0c",
    "emoji 🙂👩‍💻 and astral 𝄞",
    "NUL \x00 byte and other controls \x01\x1f\x7f",
    'real newline \n, carriage return \r, tab \t, quote " and backslash \\',
    "\u2028\u2029",  # nothing but separators
]


def written_lines(log_store: SessionStore) -> list[bytes]:
    """The lines `append` wrote: session/start, then turn/start and a user message in turn 3."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=3)
        log.append("message/user", UserMessage(text="hi"), turn=3)
    return [line + b"\n" for line in log.path.read_bytes().split(b"\n")[:-1]]


def test_envelope_keys_in_contract_order(log_store: SessionStore) -> None:
    """A line is `{"seq","type","ts","data"}` then `"turn"`, in that order, ending in one newline."""
    line = written_lines(log_store)[-1]
    assert line.count(b"\n") == 1 and line.endswith(b"\n")
    assert re.match(rb'\{"seq":2,"type":"message/user","ts":"[^"]+","data":', line)
    assert list(orjson.loads(line)) == ["seq", "type", "ts", "data", "turn"]


def test_turn_key_absent_outside_a_turn(log_store: SessionStore) -> None:
    """An event without a turn has no `turn` key at all (not null)."""
    line = written_lines(log_store)[0]
    assert list(orjson.loads(line)) == ["seq", "type", "ts", "data"]
    assert decode_line(line.rstrip(b"\n")).turn is None


@pytest.mark.parametrize("text", TRICKY_TEXTS)
def test_text_round_trips_through_a_session_file(log_store: SessionStore, text: str) -> None:
    """Separators, emoji and control characters come back byte for byte after a reopen."""
    with log_store.create(system_prompt=text) as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", UserMessage(text=text), turn=1)
        path = log.path
    raw = path.read_bytes()
    assert raw.count(b"\n") == 3, "one line per event: nothing inside a string may add a line"
    assert b"\x00" not in raw, "NUL is written as the escape \\u0000"
    reopened = FileLog.open(path, log_store.registry, writable=False)
    assert reopened.problems == []
    assert reopened.events[0].data["system_prompt"] == text
    assert reopened.events[2].data["text"] == text
    assert reopened.projection.messages[-1] == {"role": "user", "content": text}


def test_lines_are_split_on_newline_bytes_only(log_store: SessionStore) -> None:
    """A file `str.splitlines()` would cut into extra pieces still replays one event a line."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        for text in TRICKY_TEXTS:
            log.append("message/user", UserMessage(text=text), turn=1)
        path = log.path
    raw = path.read_bytes()
    assert len(raw.decode().splitlines()) > len(raw.split(b"\n")) - 1  # the trap is real
    reopened = FileLog.open(path, log_store.registry, writable=False)
    assert [e.data.get("text") for e in reopened.events[2:]] == TRICKY_TEXTS


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"seq": -1, "type": "x", "ts": "t", "data": {}}', "'seq'"),
        (b'{"seq": true, "type": "x", "ts": "t", "data": {}}', "'seq'"),
        (b'{"seq": 1.0, "type": "x", "ts": "t", "data": {}}', "'seq'"),
        (b'{"seq": 1, "type": 5, "ts": "t", "data": {}}', "'type'"),
        (b'{"seq": 1, "type": "x", "ts": "t", "data": []}', "'data'"),
        (b'{"seq": 1, "type": "x", "data": {}}', "'ts'"),
        (b'{"seq": 1, "type": "x", "ts": "t", "data": {}, "turn": "2"}', "'turn'"),
    ],
)
def test_decode_rejects_a_malformed_envelope(line: bytes, reason: str) -> None:
    """Anything that is not a well-formed envelope raises EnvelopeError saying what is wrong."""
    with pytest.raises(EnvelopeError, match=reason):
        decode_line(line)


def test_decode_accepts_other_key_orders_and_extra_keys() -> None:
    """A line written by another tool (other key order, extra keys) still decodes."""
    event = decode_line(b'{"data": {"text": "x"}, "ts": "t", "extra": 1, "type": "k", "seq": 4}')
    assert (event.seq, event.type, event.ts, event.data, event.turn) == (
        4,
        "k",
        "t",
        {"text": "x"},
        None,
    )


def test_events_compare_by_content() -> None:
    """Two events are equal when their envelopes are; events are not hashable (mutable data)."""
    data: dict[str, Any] = {"text": "x"}
    assert Event(1, "k", "t", data, 2) == Event(1, "k", "t", {"text": "x"}, 2)
    assert Event(1, "k", "t", data, 2) != Event(1, "k", "t", data, None)
    with pytest.raises(TypeError):
        hash(Event(1, "k", "t", data))


def test_timestamps_are_utc_milliseconds() -> None:
    """`ts` is ISO 8601 UTC with milliseconds and a Z, and tells the current time."""
    stamp = now_ts()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert abs(parsed - datetime.now(UTC)) < timedelta(seconds=5)


def test_timestamps_never_go_backwards() -> None:
    """Consecutive stamps are non-decreasing (they sort the session listing)."""
    stamps = [now_ts() for _ in range(5000)]
    assert stamps == sorted(stamps)


def test_unencodable_payload_is_refused_and_leaves_the_log_usable(log_store: SessionStore) -> None:
    """A lone surrogate cannot be UTF-8: the append fails cleanly and the next one works."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        before = log.path.read_bytes()
        with pytest.raises(EnvelopeError, match=r"seq 2 \(message/user\) cannot be written"):
            log.append("message/user", UserMessage(text="half a pair \ud800"), turn=1)
        assert log.path.read_bytes() == before
        assert log.next_seq == 2
        event = log.append("message/user", UserMessage(text="fine"), turn=1)
        assert event.seq == 2
