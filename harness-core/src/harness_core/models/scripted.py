"""A strict scripted model: plays a JSON script of responses in order.

File format (a contract, ARCHITECTURE §9):

    {"steps": [
      {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [...]}}]},
      {"tool_calls": [{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}]},
      {"text": "Done."}
    ]}

Each step is one response: `text`, `tool_calls`, or both. `arguments` is an object (sent as
its JSON) or a string sent unparsed, so malformed JSON can be scripted. A request past the last
step is an error, and `remaining` lets a runner treat unconsumed steps as one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._base import DeltaSink, ModelError, ModelResponse, ResponseToolCall

__all__ = ["ScriptError", "ScriptedModel"]


class ScriptError(ModelError):
    """The script is malformed, exhausted, or was not consumed to its end."""


class ScriptedModel:
    """Answers each request with the next scripted step, streaming its text in words."""

    def __init__(self, steps: Sequence[dict[str, Any]], *, name: str = "scripted") -> None:
        self.name = name
        self._steps = [_parse_step(step, index) for index, step in enumerate(steps)]
        self._next = 0
        self._requests: list[tuple[list[dict[str, Any]], int]] = []

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
        except ValueError as exc:
            raise ScriptError(f"script {path} is not valid JSON: {exc}") from None
        steps = document.get("steps") if isinstance(document, dict) else None
        if not isinstance(steps, list):
            raise ScriptError(f'script {path} must be an object with a "steps" list')
        return cls(steps, name=f"scripted:{path.name}")

    @property
    def requests(self) -> list[list[dict[str, Any]]]:
        """The message list of each request so far, as it was sent."""
        return [messages[:length] for messages, length in self._requests]

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._next

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        if self._next >= len(self._steps):
            raise ScriptError(
                f"the script has {len(self._steps)} steps and the loop asked for step "
                f"{self._next + 1}: add a final text-only step"
            )
        step = self._steps[self._next]
        self._next += 1
        # Keep a reference and a length, not a copy: copying would make every step's cost
        # grow with the history. The projection only ever appends to the list.
        self._requests.append((messages, len(messages)))
        if on_delta is not None and step.text:
            for word in step.text.split(" "):
                on_delta("text", word + " ")
        return step


def _parse_step(step: object, index: int) -> ModelResponse:
    where = f"step {index + 1}"
    if not isinstance(step, dict) or not ({"text", "tool_calls"} & step.keys()):
        raise ScriptError(f'{where} must be an object with "text", "tool_calls" or both')
    text = step.get("text")
    if text is not None and not isinstance(text, str):
        raise ScriptError(f'{where}: "text" must be a string')
    calls = step.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ScriptError(f'{where}: "tool_calls" must be a list')
    return ModelResponse(
        text=text,
        tool_calls=tuple(_parse_call(call, index, n) for n, call in enumerate(calls)),
        model="scripted",
    )


def _parse_call(call: object, step: int, n: int) -> ResponseToolCall:
    where = f"step {step + 1}, tool call {n + 1}"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ScriptError(f'{where} must be an object with a string "name"')
    arguments = call.get("arguments", {})
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    call_id = call.get("id") or f"call_{step + 1}_{n + 1}"
    return ResponseToolCall(id=str(call_id), name=call["name"], arguments=raw)
