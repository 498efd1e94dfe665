"""The in-memory store `harness_core.testing` ships passes the conformance suite every store
runs: a third store written against the public store interface alone."""

from __future__ import annotations

import pytest
from harness_core.log import Store
from harness_core.testing.memory_store import MemoryStore
from harness_core.testing.store_conformance import StoreConformance, conformance_registry


class TestMemoryStore(StoreConformance):
    # A store that lives in one process has no writer in another one to refuse: the case is
    # not collected here (the suite's other stores run it), rather than skipped.
    test_a_writer_in_another_process_is_named_and_its_death_frees_the_session = None  # type: ignore[assignment]

    @pytest.fixture
    def store(self) -> Store:
        return MemoryStore(conformance_registry())
