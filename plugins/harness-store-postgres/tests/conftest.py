"""Every test here runs on a real PostgreSQL, in a schema of its own
(`harness_store_postgres.testing`): skipped with one line where there is none, failed in CI."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness_store_postgres.testing import fresh_schema, initialised, server_url


@pytest.fixture(scope="session")
def postgres_server() -> str:
    return server_url()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh schema, not initialised."""
    with fresh_schema(postgres_server) as url:
        yield url


@pytest.fixture
def store_url(postgres_url: str) -> str:
    """A fresh schema with the store's tables."""
    return initialised(postgres_url)
