"""Event types: the core payload models, the surface flag and the registry plugins extend."""

from __future__ import annotations

import pytest
from harness_core.log import (
    CORE_EVENT_TYPES,
    EventType,
    EventTypeConflict,
    EventTypeRegistry,
    FileLog,
    SessionStore,
    UserMessage,
    derive_messages,
)
from pydantic import BaseModel


class Bookmark(BaseModel):
    label: str


class OtherBookmark(BaseModel):
    label: str


# Declared by "another plugin": the owner is the payload's top-level package.
OtherBookmark.__module__ = "other_plugin.events"


def test_core_types_and_their_surface_flags() -> None:
    """Exactly the contract's core types; session start, messages and compactions are surface."""
    flags = {t.name: t.surface for t in CORE_EVENT_TYPES}
    assert flags == {
        "session/start": True,
        "turn/start": False,
        "turn/end": False,
        "message/user": True,
        "message/assistant": True,
        "tool/approval": False,
        "tool/result": True,
        "context/compact": True,
    }
    registry = EventTypeRegistry()
    assert registry.names() == sorted(flags)
    assert registry.surface == {name for name, surface in flags.items() if surface}


def test_declared_type_is_registered_and_owned_by_its_package() -> None:
    """A plugin type is found by name; its owner is the package defining the payload."""
    registry = EventTypeRegistry()
    registry.declare(EventType("test/bookmark", Bookmark, surface=False))
    declared = registry.get("test/bookmark")
    assert declared is not None and declared.payload is Bookmark
    assert declared.owner == __name__.split(".")[0]
    assert "test/bookmark" in registry.names()
    assert "test/bookmark" not in registry.surface


def test_same_name_from_another_owner_conflicts() -> None:
    """Two packages declaring one name fail with both owners named; the first one stays."""
    registry = EventTypeRegistry()
    registry.declare(EventType("test/bookmark", Bookmark, surface=False))
    with pytest.raises(EventTypeConflict, match=r"'test/bookmark'.*'other_plugin'"):
        registry.declare(EventType("test/bookmark", OtherBookmark, surface=False))
    assert registry.get("test/bookmark") == EventType("test/bookmark", Bookmark, surface=False)


def test_core_types_name_their_payload_models() -> None:
    """Each core type resolves to the payload model the write path validates against."""
    from harness_core.log import _events

    for event_type in CORE_EVENT_TYPES:
        model = event_type.payload
        assert model is getattr(_events, model.__name__)
        assert event_type.owner == "harness_core"


def test_a_payload_named_by_reference_is_imported_on_first_use() -> None:
    """`"module:Class"` declares a type without importing it; the owner is read from the name."""
    registry = EventTypeRegistry()
    registry.declare(EventType("test/later", "not_installed_pkg.events:Later", surface=False))
    declared = registry.get("test/later")
    assert declared is not None and declared.owner == "not_installed_pkg"
    assert "test/later" in registry.names()
    with pytest.raises(ModuleNotFoundError, match="not_installed_pkg"):
        declared.payload  # noqa: B018  # the import happens here, not at declaration
    by_ref = EventType("test/bookmark", f"{__name__}:Bookmark", surface=False)
    assert by_ref.payload is Bookmark
    assert by_ref == EventType("test/bookmark", Bookmark, surface=False)


def test_core_type_cannot_be_taken_over_by_a_plugin() -> None:
    """A plugin redeclaring `message/user` is a conflict with harness_core."""
    registry = EventTypeRegistry()
    with pytest.raises(EventTypeConflict, match="harness_core"):
        registry.declare(EventType("message/user", OtherBookmark, surface=False))


def test_a_plugin_type_declared_surface_is_refused() -> None:
    """The projection renders core types only: a plugin surface type is an error, not ignored."""
    registry = EventTypeRegistry()
    with pytest.raises(ValueError, match=r"'test/bookmark' .* surface=True.*surface=False"):
        registry.declare(EventType("test/bookmark", Bookmark, surface=True))
    assert registry.get("test/bookmark") is None
    assert "test/bookmark" not in registry.surface


def test_type_declared_after_open_is_accepted_by_the_open_log(log_store: SessionStore) -> None:
    """A log opened before a plugin declared its type can append that type afterwards."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        with pytest.raises(ValueError, match="unknown event type 'test/bookmark'"):
            log.append("test/bookmark", Bookmark(label="x"), turn=1)
        log_store.registry.declare(EventType("test/bookmark", Bookmark, surface=False))
        event = log.append("test/bookmark", Bookmark(label="x"), turn=1)
    assert event.data == {"label": "x"}


class NotedBookmark(Bookmark):
    note: str


def test_a_subclass_payload_is_stored_as_the_declared_model(log_store: SessionStore) -> None:
    """An instance of a subclass of the declared payload is dumped as the declared model: its
    own fields stay off the log, on disk and in the event appended."""
    log_store.registry.declare(EventType("test/bookmark", Bookmark, surface=False))
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        event = log.append("test/bookmark", NotedBookmark(label="x", note="private"), turn=1)
        path = log.path
    assert event.data == {"label": "x"}
    assert FileLog.open(path, log_store.registry, writable=False).events[-1].data == event.data


def test_unknown_type_append_names_the_hook(log_store: SessionStore) -> None:
    """Appending an undeclared type fails before writing and says how to declare it."""
    with log_store.create() as log:
        size = log.path.stat().st_size
        with pytest.raises(ValueError, match="harness_event_types hook"):
            log.append("nobody/declared", {"x": 1})
        assert log.path.stat().st_size == size


@pytest.mark.parametrize(
    ("kind", "payload", "field"),
    [
        ("message/user", {}, "text"),
        ("turn/end", {"status": "finished"}, "status"),
        ("tool/result", {"call_id": "c", "text": "t"}, "tool_name"),
        ("message/assistant", {"tool_calls": [{"id": "c", "name": "n"}]}, "arguments"),
    ],
)
def test_invalid_payload_is_refused_with_the_field(
    log_store: SessionStore, kind: str, payload: dict[str, object], field: str
) -> None:
    """A payload that does not validate raises ValueError naming the type and field; nothing is written."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        size = log.path.stat().st_size
        with pytest.raises(ValueError, match=rf"invalid {kind} payload(.|\n)*{field}"):
            log.append(kind, payload, turn=1)
        assert log.path.stat().st_size == size
        assert log.next_seq == 2


def test_payloads_keep_fields_a_newer_harness_added(log_store: SessionStore) -> None:
    """Unknown payload keys are kept on disk and on replay, so an older reader loses nothing."""
    with log_store.create() as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "hi", "attachments": ["a.png"]}, turn=1)
        path = log.path
    reopened = FileLog.open(path, log_store.registry, writable=False)
    assert reopened.events[2].data == {"text": "hi", "attachments": ["a.png"]}
    assert UserMessage.model_validate(reopened.events[2].data).text == "hi"


def test_non_surface_types_never_reach_the_messages(log_store: SessionStore) -> None:
    """Turn markers and a plugin's non-surface note leave the model history untouched."""
    with log_store.create(system_prompt="sys") as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", UserMessage(text="hi"), turn=1)
        without = derive_messages(log.events, log_store.registry.surface)
        log.append("test/note", {"text": "a note"}, turn=1)
        log.append("turn/end", {"status": "completed"}, turn=1)
        assert derive_messages(log.events, log_store.registry.surface) == without
        assert log.projection.request_messages() == without
