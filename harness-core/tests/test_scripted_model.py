"""ScriptedModel: the docs/loop.md file format, strictness, streaming, provider-style checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_core.models import ModelError, ScriptedModel, ScriptError
from harness_core.models.scripted import MAX_SCRIPT_BYTES

# The file format's example, as docs/loop.md shows it under "The scripted model".
LOOP_DOC = Path(__file__).resolve().parents[2] / "docs" / "loop.md"
CONTRACT_EXAMPLE = (
    LOOP_DOC.read_text(encoding="utf-8")
    .split("## The scripted model", 1)[1]
    .split("```json\n", 1)[1]
    .split("```", 1)[0]
)

Message = dict[str, Any]


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(*call_ids: str) -> Message:
    calls = [
        {"id": c, "type": "function", "function": {"name": "t", "arguments": "{}"}}
        for c in call_ids
    ]
    return {"role": "assistant", "content": "", "tool_calls": calls}


def tool(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


async def test_reads_the_contract_example(tmp_path: Path) -> None:
    """The docs/loop.md example loads: object arguments become JSON, strings stay raw."""
    path = tmp_path / "script.json"
    path.write_text(CONTRACT_EXAMPLE, encoding="utf-8")
    model = ScriptedModel.from_file(path)
    first = await model.respond([user("go")], [])
    assert first.tool_calls[0].name == "todo_write"
    assert json.loads(first.tool_calls[0].arguments) == {
        "todos": [{"content": "Read the code", "status": "in_progress"}]
    }
    history = [user("go"), assistant(first.tool_calls[0].id), tool(first.tool_calls[0].id)]
    second = await model.respond(history, [])
    assert second.tool_calls[0].arguments == '{"command": "ls"}'
    history += [assistant(second.tool_calls[0].id), tool(second.tool_calls[0].id)]
    third = await model.respond(history, [])
    assert (third.text, third.tool_calls, model.remaining) == ("Done.", (), 0)


async def test_raw_string_arguments_are_sent_unparsed() -> None:
    """A string `arguments` reaches the tool path byte for byte, malformed JSON included."""
    model = ScriptedModel([{"tool_calls": [{"name": "t", "arguments": '{"a": [1,'}]}])
    response = await model.respond([user("go")], [])
    assert response.tool_calls[0].arguments == '{"a": [1,'


async def test_call_ids_default_to_step_and_position_and_may_be_named() -> None:
    """Calls get ids `call_<step>_<n>` unless the script names one."""
    calls = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}, "id": "mine"}]
    model = ScriptedModel([{"tool_calls": calls}])
    response = await model.respond([user("go")], [])
    assert [c.id for c in response.tool_calls] == ["call_1_1", "mine"]


async def test_a_call_past_the_last_step_is_an_error() -> None:
    """Asking for more steps than the script has raises a ModelError that says what to add."""
    model = ScriptedModel([{"text": "only"}])
    await model.respond([user("go")], [])
    with pytest.raises(ModelError, match=r"has 1 steps and the loop asked for step 2"):
        await model.respond([user("go"), {"role": "assistant", "content": "only"}], [])


async def test_unconsumed_steps_are_reported() -> None:
    """`remaining` counts unplayed steps and `check_consumed` turns them into an error."""
    model = ScriptedModel([{"text": "a"}, {"text": "b"}])
    await model.respond([user("go")], [])
    assert model.remaining == 1
    with pytest.raises(ScriptError, match=r"1 of 2 steps were never played"):
        model.check_consumed()


async def test_requests_record_exactly_what_was_sent() -> None:
    """`requests` holds each request's messages as they were at the time of the call."""
    model = ScriptedModel([{"text": "a"}, {"text": "b"}])
    history = [user("one")]
    await model.respond(history, [])
    history += [{"role": "assistant", "content": "a"}, user("two")]
    await model.respond(history, [])
    assert model.requests == [[user("one")], history]


async def test_text_streams_in_chunks_that_add_up_to_the_text() -> None:
    """The deltas concatenate to exactly the scripted text."""
    text = "Two  spaces, a\nnewline and  trailing "
    model = ScriptedModel([{"text": text}])
    chunks: list[str] = []
    await model.respond([user("go")], [], lambda kind, chunk: chunks.append(chunk))
    assert "".join(chunks) == text
    assert len(chunks) > 3


async def test_streaming_can_be_cancelled_midway() -> None:
    """A host that cancels on the first delta gets no further deltas and no response."""
    model = ScriptedModel([{"text": "one two three four"}])
    chunks: list[str] = []
    with anyio.CancelScope() as scope:

        def on_delta(kind: str, chunk: str) -> None:
            chunks.append(chunk)
            scope.cancel()

        await model.respond([user("go")], [], on_delta)
        pytest.fail("respond returned after being cancelled")
    assert chunks == ["one "]


def write_script(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "script.json"
    path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"steps": [', r"is not valid JSON: Expecting value: line 1 column 12"),
        ('["a"]', r'must be a JSON object with a "steps" list'),
        ('{"steps": {}}', r'must be a JSON object with a "steps" list'),
        ('{"steps": [3]}', r'step 1 must be an object with "text", "tool_calls" or both'),
        ('{"steps": [{"txt": "hi"}]}', r'step 1 must be an object with "text", "tool_calls"'),
        (
            '{"steps": [{"text": "a", "tool_call": []}]}',
            r"step 1: unknown key\(s\) \['tool_call'\]",
        ),
        ('{"steps": [{"text": 3}]}', r'step 1: "text" must be a string, got int'),
        ('{"steps": [{"tool_calls": {}}]}', r'step 1: "tool_calls" must be a list, got dict'),
        ('{"steps": [{"tool_calls": []}]}', r'step 1: a step needs a non-empty "text"'),
        ('{"steps": [{"tool_calls": ["bash"]}]}', r"step 1, tool call 1 must be an object"),
        ('{"steps": [{"tool_calls": [{"arguments": {}}]}]}', r'"name" must be a non-empty'),
        (
            '{"steps": [{"text": "x"}, {"tool_calls": [{"name": "b", "arguments": [1]}]}]}',
            r'step 2, tool call 1: "arguments" must be an object or a raw JSON string, got list',
        ),
        (
            '{"steps": [{"tool_calls": [{"name": "b", "args": {}}]}]}',
            r"tool call 1: unknown key\(s\) \['args'\]",
        ),
        (
            '{"steps": [{"tool_calls": [{"name": "a", "id": "x"}, {"name": "b", "id": "x"}]}]}',
            r"two tool calls share an id",
        ),
    ],
)
def test_malformed_scripts_fail_with_the_file_and_place(
    tmp_path: Path, content: str, message: str
) -> None:
    """Every malformed script names the file, the step and call, and what is wrong."""
    path = write_script(tmp_path, content)
    with pytest.raises(ScriptError, match=message) as caught:
        ScriptedModel.from_file(path)
    assert str(path) in str(caught.value)


async def test_other_top_level_keys_are_left_alone(tmp_path: Path) -> None:
    """A script may carry a description or a prompt beside its steps."""
    path = write_script(tmp_path, '{"prompt": "Go.", "steps": [{"text": "ok"}]}')
    assert (await ScriptedModel.from_file(path).respond([user("Go.")], [])).text == "ok"


def test_a_missing_script_file_is_a_clear_error(tmp_path: Path) -> None:
    """A path that does not exist says so."""
    with pytest.raises(ScriptError, match=r"cannot read script .*missing\.json: No such file"):
        ScriptedModel.from_file(tmp_path / "missing.json")


def test_a_script_that_is_not_a_small_regular_file_is_refused(tmp_path: Path) -> None:
    """A FIFO (opening it would wait for a writer for good), a device (/dev/zero would be read
    without end) and a file over the size limit are each one clear error, read or not."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(ScriptError, match=rf"script {path} is not a regular file"):
            ScriptedModel.from_file(path)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as sparse:
        sparse.truncate(MAX_SCRIPT_BYTES + 1)
    limit = MAX_SCRIPT_BYTES >> 20
    with pytest.raises(ScriptError, match=rf"huge\.json is larger than {limit} MiB"):
        ScriptedModel.from_file(huge)


def test_steps_from_python_are_checked_too() -> None:
    """The Python form validates like the file form."""
    with pytest.raises(ScriptError, match=r"scripted, step 2, tool call 1: \"name\" must be"):
        ScriptedModel([{"text": "ok"}, {"text": None, "tool_calls": [{"name": 1}]}])
    with pytest.raises(ScriptError, match=r"the steps must be a list"):
        ScriptedModel("steps")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ([user("go"), assistant("a", "b"), tool("a")], r"leaves tool call\(s\) \['b'\] unanswered"),
        (
            [user("go"), assistant("a"), user("again"), tool("a")],
            r"message 2: a user message comes before tool call\(s\) \['a'\] are answered",
        ),
        ([user("go"), tool("a")], r"message 1: tool message for 'a' does not follow"),
        (
            [user("go"), assistant("a"), tool("a"), tool("a")],
            r"message 3: tool call 'a' is answered twice",
        ),
        ([user("go"), assistant("a", "a")], r"repeats a tool call id"),
    ],
)
async def test_a_broken_history_is_rejected_like_a_strict_provider(
    history: list[Message], message: str
) -> None:
    """Requests whose tool calls are unanswered, misplaced or doubled fail loudly."""
    model = ScriptedModel([{"text": "never"}])
    with pytest.raises(ScriptError, match=message):
        await model.respond(history, [])
    assert model.remaining == 1


async def test_each_conversation_is_checked_on_its_own() -> None:
    """A parent and a subagent share the model but each history is checked separately."""
    model = ScriptedModel([{"tool_calls": [{"name": "t"}]}, {"text": "child"}, {"text": "end"}])
    parent = [user("parent")]
    first = await model.respond(parent, [])
    parent += [assistant(first.tool_calls[0].id)]
    await model.respond([user("child task")], [])  # the child's own, shorter history
    parent += [tool(first.tool_calls[0].id)]
    assert (await model.respond(parent, [])).text == "end"


async def test_a_model_played_for_a_user_keeps_no_requests() -> None:
    """Without `record`, no request's list stays alive (each would hold a whole history) and
    the checks of old conversations are let go; the history is still checked."""
    model = ScriptedModel([{"text": str(n)} for n in range(20)], record=False)
    for n in range(20):
        history = [user(f"conversation {n}")]  # a new list: a compaction, or a subagent
        await model.respond(history, [])
    assert len(model._checks) <= 8
    with pytest.raises(RuntimeError, match="record=True"):
        model.requests  # noqa: B018
    broken = ScriptedModel([{"text": "a"}], record=False)
    with pytest.raises(ScriptError, match="does not follow"):
        await broken.respond([user("x"), tool("nobody-called")], [])
