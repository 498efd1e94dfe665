"""Fuzzing the ACP bridge with lines of any shape and depth, on one real `harness acp`.

Generated lines: JSON of any shape, JSON-RPC messages with wrong types for the methods the
bridge serves (and for those it does not), ids that are huge, negative, fractional or not
scalars, nesting thousands of levels deep (too deep for Python's parser, or deep enough to
reach the SDK), NaN, and bytes that are not UTF-8. Each example sends a few such lines and a
well-formed request behind them (the probe), and reads until the probe is answered. The
properties, for every example:

- the bridge is still running, and has printed no traceback (every stderr line is a
  `harness: ...` line);
- every stdout line is a strict JSON-RPC 2.0 message (no NaN, an id or a method, one of
  result or error);
- a line that is not JSON, or not a JSON object, is answered with an error of id null before
  the probe; a request (a method and a string or integer id) gets an answer with its id;
- the probe is answered, so the bridge still serves; at the end of input it exits 0.

CI runs a bounded number of examples (`HARNESS_FUZZ_EXAMPLES`, default below); `scripts/fuzz`
runs many more with statistics.
"""

from __future__ import annotations

import json
import os
import queue
from pathlib import Path
from typing import Any, Final

from harness_core.acp._transport import MAX_DEPTH, _deeper_than
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_acp import RawBridge, not_json

EXAMPLES: Final = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "200"))
ANSWER_SECONDS: Final = 10.0  # far above any answer here: only a lost one takes that long

FUZZ_SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,  # each answer is bounded by ANSWER_SECONDS instead
    database=None,  # CI starts clean; scripts/fuzz prints what it found
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # One bridge serves every example, so a failure may be an earlier example's doing and
    # leaves the bridge broken for all later ones: shrinking would only mislead. A failure
    # names the lines of its example, and stderr holds the bridge's side.
    phases=[Phase.explicit, Phase.generate],
)

METHODS: Final = (
    "initialize",
    "session/new",
    "session/load",
    "session/prompt",
    "session/cancel",
    "session/list",
    "session/set_mode",
    "authenticate",
    "_harness/extension",
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
ids = (
    st.integers()
    | st.integers(min_value=10**300, max_value=10**400)
    | st.text(max_size=10).filter(lambda text: not text.startswith("probe"))
    | st.sampled_from([None, True, 1.5, [], {}])
)


def _params(method: str) -> st.SearchStrategy[Any]:
    """Params in the method's shape with values of any type, or anything at all."""
    fields = {
        "cwd": st.sampled_from(["/", "relative", ""]) | values,
        "sessionId": st.text(max_size=12) | values,
        "prompt": st.just([{"type": "text", "text": "hi"}]) | values,
        "mcpServers": st.just([]) | values,
        "protocolVersion": st.just(1) | values,
    }
    shaped = st.fixed_dictionaries({}, optional=fields)
    return shaped | values if method in METHODS else values


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    method = draw(st.sampled_from(METHODS) | st.text(max_size=12))
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]))}
    if draw(st.booleans()):
        message["id"] = draw(ids)
    if draw(st.integers(0, 9)) > 0:
        message["method"] = method if draw(st.integers(0, 9)) > 0 else draw(values)
    else:  # a response, as if to a request of the bridge's
        message["result" if draw(st.booleans()) else "error"] = draw(values)
    if draw(st.booleans()):
        message["params"] = draw(_params(method))
    return message


def _deep(depth: int, kind: str) -> bytes:
    opening, closing, inner = {"array": ("[", "]", ""), "object": ('{"a":', "}", "1")}[kind]
    return (opening * depth + inner + closing * depth).encode()


@st.composite
def deep_lines(draw: st.DrawFn) -> bytes:
    """Nesting from a few levels to far past Python's parser, bare or as a request's params."""
    nested = _deep(draw(st.integers(1, 5000)), draw(st.sampled_from(["array", "object"])))
    if draw(st.booleans()):
        return nested
    request_id = draw(st.integers(0, 10**6))
    head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"{draw(st.sampled_from(METHODS))}",'
    return head.encode() + b'"params":{"_meta":' + nested + b"}}"


lines = st.one_of(
    messages().map(lambda message: json.dumps(message).encode()),
    messages().map(lambda message: json.dumps(message, ensure_ascii=False).encode()),
    values.map(lambda value: json.dumps(value).encode()),
    deep_lines(),
    st.binary(max_size=200),  # not UTF-8, not JSON, or by chance both
    st.integers(4000, 6000).map(lambda digits: b'{"jsonrpc":"2.0","id":' + b"9" * digits + b"}"),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd":NaN}}',
            # 1e400 is JSON, read as inf, which an error echoing the params cannot write back
            b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":1e400}}',
        ]
    ),
).map(lambda line: line.replace(b"\n", b" "))


def expected_id(line: bytes) -> tuple[bool, Any]:
    """(whether an answer must come, its id): a parse error's is null, a request's its own."""
    if not line.strip():
        return False, None  # an empty line is no message: skipped, as the SDK does
    try:
        message = json.loads(line, parse_constant=not_json)
    except RecursionError:
        return False, None  # the bridge's parser may reach a little deeper: see below
    except ValueError:
        return True, None
    if not isinstance(message, dict):
        return True, None
    if _deeper_than(message, MAX_DEPTH):
        # Refused with its id, or, where the bridge's parser (deeper in its stack than this
        # one) gave up first, a parse error: either is an answer, neither is required here.
        return False, None
    request_id = message.get("id")
    is_request = isinstance(message.get("method"), str) and message.get("jsonrpc") == "2.0"
    if is_request and isinstance(request_id, int | str) and not isinstance(request_id, bool):
        return True, request_id
    return False, None


def assert_json_rpc(message: dict[str, Any]) -> None:
    assert message.get("jsonrpc") == "2.0", message
    if "method" in message:
        assert isinstance(message["method"], str), message
        return
    assert "id" in message and ("result" in message) != ("error" in message), message
    if "error" in message:
        error = message["error"]
        assert isinstance(error["code"], int) and isinstance(error["message"], str), message


def answers_until(
    raw: RawBridge, ids: set[Any], probe: str, batch: list[bytes]
) -> list[dict[str, Any]]:
    """Every message until the probe and each of `ids` has its answer (in any order)."""
    waiting = {*ids, probe}
    seen: list[dict[str, Any]] = []
    while waiting:
        try:
            message = raw.read(ANSWER_SECONDS)
        except queue.Empty:
            lost = f"no answer for {waiting!r} after {[line[:300] for line in batch]!r}"
            raise AssertionError(f"{lost}; stderr:\n{raw.stderr()[-3000:]}") from None
        assert_json_rpc(message)
        seen.append(message)
        if "method" not in message:
            waiting.discard(message["id"])
    return seen


def test_the_bridge_answers_every_line_and_keeps_serving(tmp_path: Path) -> None:
    """Lines of any shape and depth: each answered as JSON-RPC says, the probe behind them
    too, no traceback, and the bridge exits 0 at the end of input."""
    home = tmp_path / "home"
    with RawBridge(tmp_path, env={"HARNESS_HOME": str(home)}) as raw:
        probes = iter(range(10**9))

        @FUZZ_SETTINGS
        @given(st.lists(lines, min_size=1, max_size=4))
        def answered(batch: list[bytes]) -> None:
            probe = f"probe-{next(probes)}"
            expected = [expected_id(line) for line in batch]
            for line in batch:
                raw.send(line)
            raw.send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": probe, "method": "session/list", "params": {}}
                ).encode()
            )
            seen = answers_until(
                raw, {i for must, i in expected if must and i is not None}, probe, batch
            )
            errors = [m for m in seen if "method" not in m and m["id"] is None]
            nulls = sum(1 for must, i in expected if must and i is None)
            assert len(errors) >= nulls, (batch, seen)
            assert raw.process.poll() is None, raw.stderr()

        answered()
        assert raw.close() == 0, raw.stderr()
    stderr = raw.stderr()
    assert "Traceback" not in stderr, stderr
    assert all(line.startswith("harness: ") for line in stderr.splitlines()), stderr
