"""The tool registry: registration, strict schemas, and the single execute path."""

from __future__ import annotations

from typing import Literal

import anyio
import pytest
from harness_core.plugins import ProviderTools
from harness_core.tools import (
    ExecContext,
    Preparation,
    RawArguments,
    SchemaError,
    Tool,
    ToolNameConflict,
    ToolRegistry,
    ToolResult,
    strict_schema,
)
from pydantic import BaseModel, ConfigDict


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    state: Literal["open", "done"]


class PlanArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: list[Step]
    note: str


class PlanTool(Tool[PlanArgs]):
    name = "plan"
    description = "Record a plan."
    arguments = PlanArgs

    async def execute(self, args: PlanArgs, exec_ctx: ExecContext) -> ToolResult:
        if args.note == "explode":
            raise RuntimeError("kaboom")
        return ToolResult(f"{len(args.steps)} steps", data={"note": args.note})


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PlanTool(), provider="planner")
    return registry


def test_schema_is_strict_and_inlined() -> None:
    """Every object forbids extra keys, lists all properties as required, and has no $ref."""
    schema = strict_schema(PlanArgs)
    step = schema["properties"]["steps"]["items"]
    assert schema["additionalProperties"] is False and step["additionalProperties"] is False
    assert schema["required"] == ["steps", "note"] and step["required"] == ["title", "state"]
    assert "$ref" not in str(schema) and "title" not in schema


def test_models_that_do_not_fit_strict_mode_are_refused() -> None:
    """Defaults and open objects are caught when the tool is registered, not at the provider."""

    class Loose(BaseModel):
        text: str

    class Defaulted(BaseModel):
        model_config = ConfigDict(extra="forbid")
        text: str = ""

    with pytest.raises(SchemaError, match="forbid extra keys"):
        strict_schema(Loose)
    with pytest.raises(SchemaError, match=r"every property must be required; \['text'\]"):
        strict_schema(Defaulted)


def test_collision_names_both_providers_and_disposer_is_exact(registry: ToolRegistry) -> None:
    """A duplicate name is refused; a disposer removes only its own registration."""
    with pytest.raises(
        ToolNameConflict, match="'plan' from 'other' collides with the one from 'planner'"
    ):
        registry.register(PlanTool(), provider="other")
    registry2 = ToolRegistry()
    dispose_old = registry2.register(PlanTool(), provider="a")
    dispose_old()
    newer = PlanTool()
    registry2.register(newer, provider="b")
    dispose_old()
    assert registry2.get("plan") is newer


def test_without_leaves_out_a_providers_tools_and_follows_the_rest(
    registry: ToolRegistry,
) -> None:
    """A turn run with a plugin disabled sees every tool but that plugin's, including tools
    registered after the view was made (an MCP server that starts late)."""

    class Other(PlanTool):
        name = "other"

    view = registry.without(["planner"])
    assert view.names() == [] and view.get("plan") is None and view.schemas() == []
    registry.register(Other(), provider="late")
    assert view.names() == ["other"] and view.provider("other") == "late"
    assert registry.names() == ["other", "plan"]  # the registry itself keeps everything


def test_schemas_are_openai_function_tools(registry: ToolRegistry) -> None:
    """`schemas()` is the `tools` parameter of a chat completion request."""
    [tool] = registry.schemas()
    assert tool["type"] == "function" and tool["function"]["strict"] is True
    assert tool["function"]["name"] == "plan" and tool["function"]["parameters"]["type"] == "object"


async def test_valid_call_runs(registry: ToolRegistry) -> None:
    """Valid JSON arguments reach the tool, validated."""
    args = '{"steps": [{"title": "a", "state": "open"}], "note": "n"}'
    result = await registry.execute("plan", args, ExecContext())
    assert result == ToolResult("1 steps", data={"note": "n"})


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("nope", "{}", 'Error: unknown tool "nope". Available tools: plan.'),
        ("plan", "{bad", "Error: the arguments for plan are not valid JSON ("),
        (
            "plan",
            '{"note": ' + "[" * 5000 + "]" * 5000 + "}",
            "Error: the arguments for plan are not valid JSON (nested too deeply). Send one",
        ),
        (
            "plan",
            '{"steps": [{"title": "a", "state": "closed"}], "note": "n"}',
            "Error: invalid arguments for plan: steps.0.state: Input should be 'open' or 'done'",
        ),
        (
            "plan",
            '{"steps": [], "note": "n", "x": 1}',
            "Error: invalid arguments for plan: x: Extra inputs are not permitted",
        ),
        (
            "plan",
            "[1, 2]",
            "Error: invalid arguments for plan: (the arguments object): Input should be",
        ),
        (
            "plan",
            "",
            "Error: invalid arguments for plan: steps: Field required; note: Field required",
        ),
        ("plan", '{"steps": [], "note": "explode"}', "Error: plan failed: RuntimeError: kaboom"),
    ],
)
async def test_every_failure_is_an_error_result_the_model_can_act_on(
    registry: ToolRegistry, name: str, raw: str, expected: str
) -> None:
    """Unknown tool, bad JSON, schema errors with paths, and exceptions become error results."""
    result = await registry.execute(name, raw, ExecContext())
    assert result.is_error and result.text.startswith(expected)


async def test_error_list_is_capped(registry: ToolRegistry) -> None:
    """Many schema errors are summarised, not dumped."""
    steps = ",".join('{"title": 1, "state": "x"}' for _ in range(4))
    result = await registry.execute("plan", f'{{"steps": [{steps}], "note": 2}}', ExecContext())
    assert result.is_error and result.text.endswith("; and 4 more")


class RemoteTool(Tool[RawArguments]):
    """A tool whose schema another system owns, like an MCP server's."""

    name = "remote"
    description = "Echo the arguments."
    arguments = RawArguments

    def __init__(self, schema: dict[str, object]) -> None:
        self.json_schema = schema

    async def execute(self, args: RawArguments, exec_ctx: ExecContext) -> ToolResult:
        return ToolResult("ok", data=args.model_dump())


OPEN_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "depth": {"type": "integer", "minimum": 0}},
    "required": ["path"],
}


async def test_a_tool_with_its_own_schema_is_sent_non_strict_and_checked_before_the_call() -> None:
    """The schema goes out as given with strict off; arguments are checked against it first."""
    registry = ToolRegistry()
    registry.register(RemoteTool(OPEN_SCHEMA), provider="mcp")
    (sent,) = registry.schemas()
    assert sent["function"]["parameters"] == OPEN_SCHEMA and sent["function"]["strict"] is False
    ok = await registry.execute("remote", '{"path": "a", "extra": 1}', ExecContext())
    assert not ok.is_error and ok.data == {"path": "a", "extra": 1}
    bad = await registry.execute("remote", '{"depth": -1}', ExecContext())
    assert bad.is_error
    assert "'path' is a required property" in bad.text and "depth: -1 is less than" in bad.text


def test_an_invalid_own_schema_is_refused_at_registration() -> None:
    """A schema jsonschema cannot use fails the registration, naming the tool."""
    with pytest.raises(SchemaError, match="remote: its JSON schema is invalid"):
        ToolRegistry().register(RemoteTool({"type": "object", "required": 3}), provider="mcp")


async def test_deferred_tools_register_when_the_registry_is_readied(registry: ToolRegistry) -> None:
    """A deferred registration runs at the next `ready` (before a model request), once."""
    runs: list[int] = []

    async def start() -> None:
        runs.append(1)
        registry.register(RemoteTool(OPEN_SCHEMA), provider="mcp")

    registry.defer(start, provider="mcp")
    assert registry.names() == ["plan"]
    await registry.ready()
    await registry.ready()
    assert registry.names() == ["plan", "remote"] and runs == [1]


async def test_a_failing_preparation_is_logged_and_the_next_still_runs(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """One provider's failure is a warning naming it; what others deferred still registers."""

    async def broken() -> None:
        raise OSError("no such server")

    async def start() -> None:
        registry.register(RemoteTool(OPEN_SCHEMA), provider="mcp")

    registry.defer(broken, provider="flaky")
    registry.defer(start, provider="mcp")
    await registry.ready()
    assert "remote" in registry.names()
    assert "tools from flaky were not prepared: no such server" in caplog.text


async def test_a_session_registry_adds_its_own_tools_to_its_base(registry: ToolRegistry) -> None:
    """Its tools and the base's, including the base's later ones; the base never sees its own."""
    session = ToolRegistry(base=registry)
    session.register(RemoteTool(OPEN_SCHEMA), provider="client")
    with pytest.raises(ToolNameConflict, match="collides with the one from 'planner'"):
        session.register(PlanTool(), provider="client")
    registry.defer(_register_later(registry), provider="late")
    await session.ready()  # readies the base too
    assert session.names() == ["later", "plan", "remote"]
    assert registry.names() == ["later", "plan"]
    assert [s["function"]["name"] for s in session.schemas()] == session.names()
    ok = await session.execute("remote", '{"path": "a"}', ExecContext())
    assert ok.data == {"path": "a"} and session.provider("plan") == "planner"


def test_an_unloaded_plugins_deferred_registration_never_runs() -> None:
    """ProviderTools: after dispose_all (unload, reload) a deferred registration is dropped."""
    registry = ToolRegistry()
    tools = ProviderTools(registry, provider="mcp")

    async def start() -> None:
        tools.register(RemoteTool(OPEN_SCHEMA))

    tools.defer(start)
    tools.dispose_all()
    anyio.run(registry.ready)
    assert registry.names() == []


def _register_later(registry: ToolRegistry) -> Preparation:
    async def register() -> None:
        later = RemoteTool(OPEN_SCHEMA)
        later.name = "later"
        registry.register(later, provider="late")

    return register
