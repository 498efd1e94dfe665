"""The tests' own PostgreSQL (`harness_store_postgres.testing`): a throwaway cluster that
answers, never runs as root, and leaves nothing behind; and no server is a failure, never a
skip."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from harness_store_postgres.testing import CLUSTER, Cluster, server_url


def test_a_throwaway_cluster_answers_and_leaves_nothing_behind() -> None:
    cluster = Cluster.create()
    try:
        url = cluster.url()
        assert Cluster(cluster.directory).url() == url  # every caller shares the one server
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("harness",)
        pid = int((cluster.directory / "data" / "postmaster.pid").read_text().split()[0])
        owner = Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0]
        assert owner != "0", "PostgreSQL refuses to run as root; the cluster must not try"
    finally:
        cluster.remove()
    assert not cluster.directory.exists()
    assert not running(pid), "the server outlived its cluster"


def running(pid: int) -> bool:
    """Whether `pid` lives (a zombie, stopped and waiting for a reaper, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_no_server_is_a_failure_that_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_TEST_POSTGRES", raising=False)
    monkeypatch.delenv(CLUSTER, raising=False)
    with pytest.raises(pytest.fail.Exception, match=r"\./scripts/test"):
        server_url()


def test_a_server_that_does_not_answer_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # held: nothing else listens there meanwhile
        port = unused.getsockname()[1]
        url = f"postgresql://harness:n0t-a-s3cret@127.0.0.1:{port}/nowhere"
        monkeypatch.setenv("HARNESS_TEST_POSTGRES", url)
        with pytest.raises(pytest.fail.Exception, match="no server answers"):
            server_url()
