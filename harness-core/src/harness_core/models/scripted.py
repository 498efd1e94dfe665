"""A strict scripted model: plays a JSON script of responses in order.

File format (a contract, docs/loop.md "The scripted model"):

    {"steps": [
      {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [...]}}]},
      {"tool_calls": [{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}]},
      {"text": "Done."}
    ]}

Each step is one response: `text`, `tool_calls`, or both. `arguments` is an object (sent as
its JSON) or a string sent unparsed, so malformed JSON can be scripted; a call may also name
its `id`. A request past the last step is an error, and `remaining` / `check_consumed` let a
runner treat unconsumed steps as one.

Strict in a second way too: every request is checked as a strict provider checks it (each
tool call answered exactly once, by tool messages right after its assistant message), so a
broken history fails the test that produced it instead of a real provider in production.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from anyio.lowlevel import checkpoint

from ._base import DeltaSink, ModelBase, ModelError, ModelResponse, ResponseToolCall

__all__ = ["MAX_SCRIPT_BYTES", "ScriptError", "ScriptedModel"]

_STEP_KEYS: Final = frozenset({"text", "tool_calls"})
_CALL_KEYS: Final = frozenset({"name", "arguments", "id"})
_WORDS: Final = re.compile(r"\S+\s*|\s+")
# Far above any real script (50,000 todo_write steps take 35 MB); /dev/zero is not one.
MAX_SCRIPT_BYTES: Final = 256 * 1024 * 1024

Message = dict[str, Any]


class ScriptError(ModelError):
    """The script is malformed, exhausted, was not consumed, or a request broke the rules."""


def _read_script(path: Path) -> str:
    """The text of a script file: a regular file of at most MAX_SCRIPT_BYTES.

    Opened without blocking (a FIFO would wait for a writer for good) and checked before it is
    read, so a device or an endless file is one line, not a hang or a read without limit.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ScriptError(f"script {path} is not a regular file")
        # Its size first, so a huge file is refused unread; the read's own limit stops one
        # that grows meanwhile.
        data = b"" if info.st_size > MAX_SCRIPT_BYTES else file.read(MAX_SCRIPT_BYTES + 1)
    if info.st_size > MAX_SCRIPT_BYTES or len(data) > MAX_SCRIPT_BYTES:
        raise ScriptError(f"script {path} is larger than {MAX_SCRIPT_BYTES >> 20} MiB")
    return data.decode("utf-8")


class ScriptedModel(ModelBase):
    """Answers each request with the next scripted step, streaming its text word by word."""

    def __init__(
        self, steps: Sequence[Mapping[str, Any]], *, name: str = "scripted", record: bool = True
    ) -> None:
        """`record`: keep every request for `requests` (tests); a host playing a script for a
        user passes False, since a request keeps its whole message list alive, compacted
        history included, for as long as the model lives."""
        if not isinstance(steps, list | tuple):
            raise ScriptError(f"{name}: the steps must be a list, got {type(steps).__name__}")
        self.name = name
        self._steps = [_parse_step(step, index, name) for index, step in enumerate(steps)]
        self._next = 0
        self._record = record
        self._asked = 0
        self._requests: list[tuple[list[Message], int]] = []
        self.tools: list[dict[str, Any]] = []  # the tool schemas of the latest request
        # One check per conversation: a subagent shares this model with its parent but sends
        # its own session's list. Keyed by the list's identity, kept alive beside its check
        # so the id cannot be reused; without `record`, only the latest few lists are kept
        # (a compaction starts a new list, which gets a new check).
        self._checks: dict[int, tuple[list[Message], _HistoryCheck]] = {}

    @classmethod
    def from_file(cls, path: Path, *, record: bool = True) -> ScriptedModel:
        """Load a script file; every problem is a ScriptError naming the file and step."""
        try:
            document = json.loads(_read_script(path))
        except OSError as exc:
            raise ScriptError(f"cannot read script {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ScriptError(f"script {path} is not valid JSON: {exc}") from None
        except RecursionError:  # the stdlib parser recurses once per level of nesting
            raise ScriptError(f"script {path} is not valid JSON (nested too deeply)") from None
        return cls.from_document(document, name=f"script {path}", record=record)

    @classmethod
    def from_document(
        cls, document: object, *, name: str = "scripted", record: bool = True
    ) -> ScriptedModel:
        """A script already parsed from JSON: `{"steps": [...]}`.

        Other top-level keys (a description, the demo's "prompt") are left to the caller.
        Inside steps every key must be known: a typo there would silently change the play.
        """
        if not isinstance(document, dict) or not isinstance(document.get("steps"), list):
            raise ScriptError(f'{name} must be a JSON object with a "steps" list')
        return cls(document["steps"], name=name, record=record)

    @property
    def requests(self) -> list[list[Message]]:
        """The message list of each request so far, exactly as it was sent (`record`)."""
        if not self._record:
            raise RuntimeError(f"{self.name} keeps no requests: build it with record=True")
        return [messages[:length] for messages, length in self._requests]

    @property
    def remaining(self) -> int:  # type: ignore[override]  # a script always knows
        """Steps not played yet; a finished run should leave none."""
        return len(self._steps) - self._next

    def skip(self, steps: int) -> None:
        """Go on `steps` responses further: a crashed turn that goes on from its log
        (`Agent.resume_turn`) already holds them, played by the process that died."""
        self._next = min(self._next + steps, len(self._steps))

    def check_consumed(self) -> None:
        """Raise ScriptError when steps are left: the run ended before the script did."""
        if self.remaining:
            raise ScriptError(
                f"{self.name}: {self.remaining} of {len(self._steps)} steps were never played; "
                f"the run ended after step {self._next}"
            )

    async def respond(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        self._asked += 1
        number = self._asked
        if self._next >= len(self._steps):
            raise ScriptError(
                f"{self.name} has {len(self._steps)} steps and the loop asked for step "
                f"{self._next + 1}: end the script with a text-only step"
            )
        self._check(messages).request(messages, number)
        step = self._steps[self._next]
        self._next += 1
        # Keep a reference and a length, not a copy: copying would make every step's cost
        # grow with the history. The projection only ever appends to the list.
        if self._record:
            self._requests.append((messages, len(messages)))
        self.tools = tools
        if on_delta is not None and step.text:
            for word in _WORDS.findall(step.text):
                on_delta("text", word)
                await checkpoint()  # a host may cancel mid-stream, as with a real model
        return step

    def _check(self, messages: list[Message]) -> _HistoryCheck:
        """The check of the conversation `messages` belongs to (a new one for a new list)."""
        known = self._checks.pop(id(messages), None)
        if known is None:
            known = (messages, _HistoryCheck())
            if not self._record and len(self._checks) >= _UNRECORDED_CHECKS:
                del self._checks[next(iter(self._checks))]  # the least recently asked
        self._checks[id(messages)] = known  # last: the most recently asked
        return known[1]


_UNRECORDED_CHECKS: Final = 8  # conversations checked at once without `record`


class _HistoryCheck:
    """Validates each request incrementally (only what was appended since the last one)."""

    __slots__ = ("checked", "open_calls", "previous_role")

    def __init__(self) -> None:
        self.checked = 0
        self.open_calls: dict[str, bool] = {}  # call id -> answered, for the latest message
        self.previous_role: str | None = None

    def request(self, messages: list[Message], number: int) -> None:
        if len(messages) < self.checked:
            raise ScriptError(f"request {number} has fewer messages than this history had before")
        for index in range(self.checked, len(messages)):
            problem = self._message(messages[index])
            if problem is not None:
                raise ScriptError(f"request {number}, message {index}: {problem}")
        unanswered = [call_id for call_id, answered in self.open_calls.items() if not answered]
        if unanswered:
            raise ScriptError(f"request {number} leaves tool call(s) {unanswered} unanswered")
        self.checked = len(messages)

    def _message(self, message: Message) -> str | None:
        role = message.get("role")
        previous, self.previous_role = self.previous_role, role
        if role == "tool":
            call_id = message.get("tool_call_id")
            if previous not in ("assistant", "tool") or call_id not in self.open_calls:
                return f"tool message for {call_id!r} does not follow the call it answers"
            if self.open_calls[call_id]:
                return f"tool call {call_id!r} is answered twice"
            self.open_calls[call_id] = True
            return None
        unanswered = [call_id for call_id, answered in self.open_calls.items() if not answered]
        if unanswered:
            return f"a {role} message comes before tool call(s) {unanswered} are answered"
        calls = (message.get("tool_calls") or ()) if role == "assistant" else ()
        self.open_calls = {call["id"]: False for call in calls}
        if len(self.open_calls) != len(calls):
            return "an assistant message repeats a tool call id"
        return None


def _parse_step(step: object, index: int, script: str) -> ModelResponse:
    where = f"{script}, step {index + 1}"
    if not isinstance(step, Mapping) or not (_STEP_KEYS & step.keys()):
        raise ScriptError(f'{where} must be an object with "text", "tool_calls" or both')
    extra = sorted(set(step) - _STEP_KEYS)
    if extra:
        raise ScriptError(f'{where}: unknown key(s) {extra}; a step has "text" and "tool_calls"')
    text = step.get("text")
    if text is not None and not isinstance(text, str):
        raise ScriptError(f'{where}: "text" must be a string, got {type(text).__name__}')
    calls = step.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ScriptError(f'{where}: "tool_calls" must be a list, got {type(calls).__name__}')
    if not calls and not text:
        raise ScriptError(f'{where}: a step needs a non-empty "text" or at least one tool call')
    parsed = tuple(_parse_call(call, index, n, where) for n, call in enumerate(calls))
    ids = [call.id for call in parsed]
    if len(set(ids)) != len(ids):
        raise ScriptError(f"{where}: two tool calls share an id ({ids})")
    return ModelResponse(text=text, tool_calls=parsed, model="scripted")


def _parse_call(call: object, step: int, n: int, where_step: str) -> ResponseToolCall:
    where = f"{where_step}, tool call {n + 1}"
    if not isinstance(call, Mapping):
        raise ScriptError(f'{where} must be an object with "name" and "arguments"')
    extra = sorted(set(call) - _CALL_KEYS)
    if extra:
        raise ScriptError(f'{where}: unknown key(s) {extra}; a call has "name", "arguments", "id"')
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise ScriptError(f'{where}: "name" must be a non-empty string')
    arguments = call.get("arguments", {})
    if not isinstance(arguments, (str, dict)):
        raise ScriptError(
            f'{where}: "arguments" must be an object or a raw JSON string, '
            f"got {type(arguments).__name__}"
        )
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call_id = call.get("id", f"call_{step + 1}_{n + 1}")
    if not isinstance(call_id, str) or not call_id:
        raise ScriptError(f'{where}: "id" must be a non-empty string')
    return ResponseToolCall(id=call_id, name=name, arguments=raw)
