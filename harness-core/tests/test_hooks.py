"""Each hook spec through the typed facade: per plugin, broadcast, firstresult, isolation."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from harness_core.log import Event, EventType, SessionLog, SessionStore
from harness_core.models import ModelResponse, ScriptedModel
from harness_core.plugins import PluginContext, PluginHost, ServiceNotInjected, hookimpl
from harness_core.testing.pytest_plugin import RegisterPlugin
from pydantic import BaseModel


class NotePayload(BaseModel):
    text: str


class Notes:
    """An object plugin declaring an event type and observing events."""

    name = "notes"
    inject = ()

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def harness_event_types(self) -> list[EventType]:
        return [EventType("note/add", NotePayload, surface=False)]

    @hookimpl
    def harness_event_appended(self, session: SessionLog, event: Event) -> None:
        self.seen.append(event.type)


class Exploding:
    name = "exploding"
    inject = ()

    @hookimpl
    def harness_event_appended(self, session: SessionLog, event: Event) -> None:
        raise RuntimeError("observer bug")


def test_harness_event_types_are_declared_for_a_plugin_added_late(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """A plugin added after the host started still gets its event type declared."""
    assert plugin_host.event_types.get("note/add") is None
    register_plugin(Notes())
    declared = plugin_host.event_types.get("note/add")
    assert declared is not None and declared.payload is NotePayload and not declared.surface


def test_harness_event_appended_observers_are_isolated(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, harness_home: Any
) -> None:
    """One observer raising is reported with its name; the other still sees every event."""
    notes = Notes()
    register_plugin(Exploding())
    register_plugin(notes)
    store = SessionStore(
        harness_home, plugin_host.event_types, on_append=plugin_host.hooks.event_appended
    )
    log = store.create()
    log.append("turn/start", {}, turn=1)
    log.append("note/add", {"text": "hi"}, turn=1)
    assert notes.seen == ["session/start", "turn/start", "note/add"]
    assert [str(e) for e in plugin_host.observer_errors] == [
        "plugin 'exploding' raised in harness_event_appended: RuntimeError: observer bug"
    ] * 3
    log.close()


def test_harness_register_tools_gets_only_injected_services(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """ctx exposes what `inject` names; anything else fails with how to fix it."""
    captured: dict[str, object] = {}

    class Peeker:
        name = "peeker"
        inject = ("config",)

        @hookimpl
        def harness_register_tools(self, ctx: PluginContext) -> None:
            captured["config"] = ctx.config.get("answer", 41)
            try:
                ctx.tools  # noqa: B018 - the access itself is the test
            except ServiceNotInjected as exc:
                captured["error"] = str(exc)

    register_plugin(Peeker())
    assert captured["config"] == 41
    assert captured["error"] == (
        "plugin 'peeker' uses ctx.tools but does not inject it; add \"tools\" to its `inject` tuple"
    )


def test_harness_model_is_firstresult_and_plugins_come_before_builtins(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, tmp_path: Any
) -> None:
    """A plugin answers its own spec; other specs fall through to the built-in providers."""

    class Echo(SimpleNamespace):
        name = "echo"
        inject = ()

        @hookimpl
        def harness_model(self, spec: str, options: dict[str, Any]) -> Any:
            if spec.startswith("echo:"):
                return ScriptedModel([{"text": spec}], name=spec)
            return None

    register_plugin(Echo())
    assert plugin_host.hooks.model("echo:hi", {}).name == "echo:hi"  # type: ignore[union-attr]
    script = tmp_path / "s.json"
    script.write_text('{"steps": [{"text": "done"}]}')
    built = plugin_host.hooks.model(f"scripted:{script}", {})
    assert isinstance(built, ScriptedModel) and built.remaining == 1
    assert plugin_host.hooks.model("nonesuch:x", {}) is None


async def test_builtin_scripted_model_answers(plugin_host: PluginHost, tmp_path: Any) -> None:
    """The built-in scripted provider returns the scripted response."""
    script = tmp_path / "s.json"
    script.write_text('{"steps": [{"text": "done"}]}')
    model = plugin_host.hooks.model(f"scripted:{script}", {})
    assert model is not None
    assert await model.respond([], []) == ModelResponse(text="done", model="scripted")


def test_missing_key_names_the_env_var(
    plugin_host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai:MODEL without OPENAI_API_KEY is a clear configuration error."""
    from harness_core.models._presets import ModelConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="needs an API key: set OPENAI_API_KEY"):
        plugin_host.hooks.model("openai:some-model", {})
