"""Tool argument schemas that fit OpenAI and DeepSeek strict function calling.

Strict mode wants every object closed (`additionalProperties: false`) with every property
listed in `required`. We inline `$ref`s and drop `title`s: fewer tokens in every request, and
no reference resolution for providers that handle it poorly.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["SchemaError", "strict_schema"]


class SchemaError(TypeError):
    """An argument model that strict function calling cannot accept."""


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, inlined, validated for strict mode."""
    raw = model.model_json_schema()
    definitions = raw.pop("$defs", {})
    schema: dict[str, Any] = _inline(raw, definitions)
    _check(schema, model.__name__)
    return schema


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            return _inline(definitions[ref.rsplit("/", 1)[-1]], definitions)
        return {k: _inline(v, definitions) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    return node


def _check(node: Any, where: str) -> None:
    if isinstance(node, list):
        for item in node:
            _check(item, where)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "object":
        properties = node.get("properties", {})
        if node.get("additionalProperties") is not False:
            raise SchemaError(
                f"{where}: objects must forbid extra keys; "
                "set model_config = ConfigDict(extra='forbid')"
            )
        missing = sorted(set(properties) - set(node.get("required", ())))
        if missing:
            raise SchemaError(f"{where}: every property must be required; {missing} have defaults")
    for key, value in node.items():
        _check(value, f"{where}.{key}" if key != "properties" else where)
