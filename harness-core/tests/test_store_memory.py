"""The in-memory store `harness_core.testing` ships passes the conformance suite every store
runs: a third store written against the public store interface alone."""

from __future__ import annotations

import pytest
from harness_core.log import Store
from harness_core.testing.memory_store import MemoryStore
from harness_core.testing.store_conformance import StoreConformance, conformance_registry


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self) -> Store:
        return MemoryStore(conformance_registry())
