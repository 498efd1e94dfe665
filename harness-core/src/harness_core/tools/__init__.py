"""Tools: the base class, strict schemas, and the registry every call goes through."""

from ._caller import CallingAgent, ChildOutcome
from ._registry import Disposer, Preparation, RegisteredTool, ToolNameConflict, ToolRegistry
from ._schema import SchemaError, strict_schema
from ._tool import Effect, ExecContext, RawArguments, Tool, ToolResult

__all__ = [
    "CallingAgent",
    "ChildOutcome",
    "Disposer",
    "Effect",
    "ExecContext",
    "Preparation",
    "RawArguments",
    "RegisteredTool",
    "SchemaError",
    "Tool",
    "ToolNameConflict",
    "ToolRegistry",
    "ToolResult",
    "strict_schema",
]
