"""The log's derived messages and the registry's tool schemas as one Messages API request.

The derived messages are OpenAI-style (`docs/log.md`); the Messages API differs in four ways
that matter here: the system prompt is a parameter, a tool call is a `tool_use` block of the
assistant message and its result a `tool_result` block of the next user message (all results
of one response in one user turn), roles alternate, and the signed thinking blocks of an
assistant message go back in front of its text and calls.

Cache breakpoints mark the stable prefix, so each step of a long turn reads it from the
provider's cache instead of paying for it again: the tools, the system prompt, the history
before the latest user message, and that message itself (the next step's request starts with
everything this one sends). The API takes at most four.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["CACHE", "messages_of", "system_of", "tools_of"]

Block = dict[str, Any]
Message = dict[str, Any]

CACHE: Final = {"type": "ephemeral"}


def system_of(messages: Iterable[Message]) -> list[Block]:
    """The system prompt as text blocks, the last one a cache breakpoint."""
    blocks: list[Block] = [
        {"type": "text", "text": str(m["content"])}
        for m in messages
        if m.get("role") == "system" and m.get("content")
    ]
    if blocks:
        blocks[-1]["cache_control"] = CACHE
    return blocks


def tools_of(schemas: Iterable[dict[str, Any]]) -> list[Block]:
    """The registry's function schemas as Messages API tools, the last one a breakpoint."""
    tools: list[Block] = []
    for schema in schemas:
        function = schema.get("function", schema)
        tool: Block = {
            "name": function["name"],
            "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
        }
        if function.get("description"):
            tool["description"] = function["description"]
        tools.append(tool)
    if tools:
        tools[-1]["cache_control"] = CACHE
    return tools


def messages_of(messages: Iterable[Message]) -> list[Message]:
    """Alternating user and assistant turns, with breakpoints on the latest two user turns'
    neighbours: the end of the history before the latest user turn, and that turn."""
    turns: list[Message] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue  # a system prompt (sent apart) or an empty assistant message
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)  # results and a prompt after them: one turn
        else:
            turns.append({"role": role, "content": blocks})
    _mark_breakpoints(turns)
    return turns


def _blocks(message: Message) -> tuple[str, list[Block]]:
    role = message.get("role")
    if role == "assistant":
        return "assistant", _assistant_blocks(message)
    if role == "tool":
        result: Block = {
            "type": "tool_result",
            "tool_use_id": message["tool_call_id"],
            "content": str(message.get("content") or ""),
        }
        if message.get("is_error"):
            result["is_error"] = True
        return "user", [result]
    if role == "user":
        text = str(message.get("content") or "")
        return "user", [{"type": "text", "text": text}] if text else []
    return str(role), []


def _assistant_blocks(message: Message) -> list[Block]:
    signed = (_thinking_block(t) for t in message.get("thinking") or ())
    blocks = [block for block in signed if block is not None]
    if message.get("content"):
        blocks.append({"type": "text", "text": str(message["content"])})
    for call in message.get("tool_calls") or ():
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": function["name"],
                "input": _input(function.get("arguments")),
            }
        )
    return blocks


def _thinking_block(thinking: dict[str, Any]) -> Block | None:
    """The block as the API sent it; one without a signature cannot go back (the API
    refuses unsigned thinking), so it is left out."""
    if thinking.get("redacted"):
        return {"type": "redacted_thinking", "data": thinking["redacted"]}
    if thinking.get("signature"):
        return {
            "type": "thinking",
            "thinking": thinking.get("text") or "",
            "signature": thinking["signature"],
        }
    return None


def _input(arguments: object) -> dict[str, Any]:
    """A call's arguments as the object `tool_use.input` must be. The log keeps the raw string;
    one that is not a JSON object (the tool already answered it with an error) goes as {}."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _mark_breakpoints(turns: list[Message]) -> None:
    users = [i for i, turn in enumerate(turns) if turn["role"] == "user"]
    if not users:
        return
    latest = users[-1]
    marks = {latest} | ({latest - 1} if latest > 0 else set())
    for index in marks:
        last = turns[index]["content"][-1]
        if last.get("type") not in ("thinking", "redacted_thinking"):  # these take no marks
            last["cache_control"] = CACHE
