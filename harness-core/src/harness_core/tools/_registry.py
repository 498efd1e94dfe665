"""The host's tool registry (`ctx.tools`) and the single path every tool call takes."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ValidationError

from ._schema import SchemaError, strict_schema
from ._tool import ExecContext, RawArguments, Tool, ToolResult

__all__ = ["Disposer", "Preparation", "RegisteredTool", "ToolNameConflict", "ToolRegistry"]

if TYPE_CHECKING:
    import anyio

logger = logging.getLogger("harness.tools")

Disposer = Callable[[], None]
Preparation = Callable[[], Awaitable[None]]


class ToolNameConflict(ValueError):
    """Two providers registered a tool of the same name."""


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    tool: Tool[Any]
    provider: str
    schema: dict[str, Any]
    # Set for a tool with its own `json_schema`: sent non-strict, checked before each call.
    validator: Any = None

    @property
    def strict(self) -> bool:
        return self.validator is None


class ToolRegistry:
    """Tools by name, each remembering which plugin provided it.

    A registry made with a `base` (one session's, beside the host's) holds its own tools and
    sees the base's as they change; a name may be registered on one of the two only.
    """

    def __init__(self, base: ToolRegistry | None = None) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._base = base
        # deque: appended from any thread (an MCP server's connection), run on the agent's loop
        self._deferred: deque[tuple[Preparation, str]] = deque()
        self._preparing: anyio.Lock | None = None  # made on the loop that first needs it
        self._hidden: frozenset[str] = frozenset()  # providers whose tools this one leaves out

    def defer(self, prepare: Preparation, *, provider: str) -> None:
        """Run `prepare` before the next model request (`ready`); callable from any thread.

        For tools that come late or change: a source that starts only when a session first
        needs it, or that announces a new set of tools from its own thread. `prepare`
        registers and disposes on this registry from the agent's loop, where nothing is
        reading it at the same time.
        """
        self._deferred.append((prepare, provider))

    async def ready(self) -> None:
        """Run what was deferred, in order; the agent awaits this before each model request.

        A preparation that raises is logged with its provider, and the others still run. A
        cancelled one (the turn was cancelled while a server started) stays first in line.
        """
        if self._base is not None:
            await self._base.ready()
        if not self._deferred:
            return
        import anyio  # only registries with deferred tools (MCP servers) pay for the import

        self._preparing = self._preparing or anyio.Lock()
        # A second agent on the same loop waits here for the tools the first is preparing.
        async with self._preparing:
            while self._deferred:
                prepare, provider = self._deferred[0]
                try:
                    await prepare()
                except Exception as exc:
                    logger.warning("tools from %s were not prepared: %s", provider, exc)
                    logger.debug("preparing tools from %s failed", provider, exc_info=True)
                self._deferred.popleft()

    def register(self, tool: Tool[Any], *, provider: str) -> Disposer:
        """Add `tool`; the returned disposer removes exactly this registration."""
        existing = self._entry(tool.name)
        if existing is not None:
            raise ToolNameConflict(
                f"tool {tool.name!r} from {provider!r} collides with the one from "
                f"{existing.provider!r}; disable one of the plugins (HARNESS_DISABLE_PLUGINS)"
            )
        if tool.json_schema is None:
            entry = RegisteredTool(tool, provider, strict_schema(tool.arguments))
        else:
            validator = _validator(tool.name, tool.arguments, tool.json_schema)
            entry = RegisteredTool(tool, provider, tool.json_schema, validator)
        self._tools[tool.name] = entry

        def dispose() -> None:
            # Only remove our own entry: after a reload, the name may belong to a newer one.
            if self._tools.get(tool.name) is entry:
                del self._tools[tool.name]

        return dispose

    def without(self, providers: Iterable[str]) -> ToolRegistry:
        """These tools, live, but for those the plugins `providers` register: a turn run with
        those plugins disabled (a batch task's `disable`)."""
        view = ToolRegistry(base=self)
        view._hidden = frozenset(providers)
        return view

    def _entry(self, name: str) -> RegisteredTool | None:
        entry = self._tools.get(name)
        if entry is None and self._base is not None:
            entry = self._base._entry(name)
        return None if entry is not None and entry.provider in self._hidden else entry

    def get(self, name: str) -> Tool[Any] | None:
        entry = self._entry(name)
        return entry.tool if entry is not None else None

    def provider(self, name: str) -> str | None:
        entry = self._entry(name)
        return entry.provider if entry is not None else None

    def names(self) -> list[str]:
        if self._base is None:
            return sorted(self._tools)
        names = {*self._tools, *self._base.names()}
        return sorted(name for name in names if self._entry(name) is not None)

    def schemas(self) -> list[dict[str, Any]]:
        """The `tools` parameter of a chat completion request, in name order."""
        entries = [(name, self._entry(name)) for name in self.names()]
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": entry.tool.description,
                    "parameters": entry.schema,
                    "strict": entry.strict,
                },
            }
            for name, entry in entries
            if entry is not None
        ]

    def parse(self, name: str, raw_arguments: str) -> tuple[Tool[Any], BaseModel] | ToolResult:
        """The tool and its validated arguments, or the error result the model should see."""
        entry = self._entry(name)
        if entry is None:
            available = ", ".join(self.names()) or "none"
            return ToolResult(
                f'Error: unknown tool "{name}". Available tools: {available}.', is_error=True
            )
        try:
            value = orjson.loads(raw_arguments) if raw_arguments.strip() else {}
        except orjson.JSONDecodeError as exc:
            # orjson stops at 1024 levels ("depth limit exceeded"); say it in plain words.
            why = "nested too deeply" if str(exc).startswith("depth limit") else str(exc)
            return ToolResult(
                f"Error: the arguments for {name} are not valid JSON ({why}). "
                "Send one JSON object that matches the tool's schema.",
                is_error=True,
            )
        if entry.validator is not None:
            problems = _schema_problems(entry.validator, value)
            if problems:
                return ToolResult(f"Error: invalid arguments for {name}: {problems}", True)
        try:
            return entry.tool, entry.tool.arguments.model_validate(value)
        except ValidationError as exc:
            return ToolResult(f"Error: invalid arguments for {name}: {_describe(exc)}", True)

    async def execute(self, name: str, raw_arguments: str, exec_ctx: ExecContext) -> ToolResult:
        """Parse, validate and run one call. Every failure becomes an error result."""
        parsed = self.parse(name, raw_arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        return await self.run(*parsed, exec_ctx)

    async def run(self, tool: Tool[Any], args: BaseModel, exec_ctx: ExecContext) -> ToolResult:
        """Run a call `parse` accepted (the loop asks for approval in between)."""
        name = tool.name
        try:
            # Typed as object: a plugin may break its contract, and this is where it shows.
            result: object = await tool.execute(args, exec_ctx)
        except Exception as exc:
            # The model reads the failure as the call's error result and the host shows it on
            # the call's row: it is not the host's error. The traceback is for HARNESS_DEBUG=1.
            logger.debug("tool %s (from %s) raised", name, self.provider(name), exc_info=True)
            return ToolResult(f"Error: {name} failed: {type(exc).__name__}: {exc}", True)
        if not isinstance(result, ToolResult):
            logger.error("tool %s (from %s) returned %r", name, self.provider(name), result)
            return ToolResult(
                f"Error: {name} failed: it returned {type(result).__name__}, not a ToolResult",
                True,
            )
        return result


def _validator(name: str, arguments: type[BaseModel], schema: dict[str, Any]) -> Any:
    """A jsonschema validator for a tool's own schema; a schema that is not one is refused."""
    import jsonschema  # only tools with their own schema (MCP) pay for the import

    if arguments is not RawArguments:
        raise SchemaError(f"{name}: a tool with a json_schema takes RawArguments")
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"{name}: its JSON schema is invalid: {exc.message}") from exc
    return cls(schema)


def _schema_problems(validator: Any, value: object) -> str:
    """The first few jsonschema errors as `path: message` pairs, or "" when `value` fits."""
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    parts = [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(the arguments object)'}: {e.message}"
        for e in errors[:5]
    ]
    more = len(errors) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _describe(exc: ValidationError) -> str:
    """pydantic errors as `path: message` pairs the model can act on."""
    parts = []
    for error in exc.errors(include_url=False)[:5]:
        path = ".".join(str(p) for p in error["loc"]) or "(the arguments object)"
        parts.append(f"{path}: {error['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
