"""The file store passes the store conformance suite every store runs
(`harness_core.testing.store_conformance`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_core.log import SessionStore, Store
from harness_core.testing.store_conformance import StoreConformance, conformance_registry


class TestFileStore(StoreConformance):
    @pytest.fixture
    def store(self, harness_home: Path) -> Store:
        return SessionStore(harness_home, conformance_registry())

    @pytest.fixture
    def other_process_url(self, harness_home: Path) -> str:
        return f"file://{harness_home}"


def test_harness_session_store_serves_the_schemes_a_plugin_knows(
    harness_home: Path, tmp_path: Path
) -> None:
    """A store plugin answers for its scheme; the first answer wins; a scheme nobody serves
    is a one-line error naming the store, its password redacted."""
    from harness_core.log import EventSink, EventTypeRegistry
    from harness_core.plugins import hookimpl
    from harness_core.runtime import Runtime, SetupError

    class Elsewhere:
        name, inject = "elsewhere", ()

        @hookimpl
        def harness_session_store(
            self, url: str, registry: EventTypeRegistry, on_append: EventSink | None
        ) -> Store | None:
            if not url.startswith("elsewhere://"):
                return None
            return SessionStore(tmp_path / url.removeprefix("elsewhere://"), registry)

    runtime = Runtime(harness_home)
    assert runtime.host.add(Elsewhere()).status == "loaded"
    store = runtime.open_store("elsewhere://b")
    assert isinstance(store, SessionStore) and store.home == tmp_path / "b"
    with store.create() as log:
        assert (tmp_path / "b" / "sessions" / f"{log.session_id}.jsonl").exists()
    with pytest.raises(SetupError, match=r"other://u:\[redacted\]@h \(other://\)"):
        runtime.open_store("other://u:password1234@h")


@pytest.mark.parametrize("session_id", ["../escaped", "/tmp/abs", ".hidden", "a/b"])
def test_adopting_an_id_that_is_not_one_writes_nothing(tmp_path: Path, session_id: str) -> None:
    """`harness store copy` hands the file store ids from another store: one that would name
    a path outside its sessions directory is refused before anything is written."""
    from harness_core.log import SessionNotFound

    store = SessionStore(tmp_path / "home", conformance_registry())
    with pytest.raises(SessionNotFound, match="is not a session id"):
        store.adopt(session_id, [b'{"seq":0}'])
    assert not list(tmp_path.rglob("*escaped*")) and not (tmp_path / "home").exists()
