"""The Postgres store passes the conformance suite every store runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness_core.log import Store
from harness_core.testing.store_conformance import StoreConformance, conformance_registry
from harness_store_postgres._store import PostgresStore


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store(self, store_url: str) -> Iterator[Store]:
        store = PostgresStore(store_url, conformance_registry())
        yield store
        store.close()

    @pytest.fixture
    def other_process_url(self, store_url: str) -> str:
        return store_url
