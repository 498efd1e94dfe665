"""A real PostgreSQL for tests, never a mock, and a fresh schema of it for each test.

The server is the one HARNESS_TEST_POSTGRES names or, without it, a throwaway cluster of the
test run's own: the suite's conftest gives the run an empty directory (`Cluster.create`, its
path in HARNESS_TEST_POSTGRES_CLUSTER, which pytest-xdist's workers inherit) and the first
test that needs a server starts one there, under a lock the workers share: `initdb`, then
`postgres` on a free loopback port, with a random password. PostgreSQL refuses to run as
root, so as root both run as the `postgres` user (or `nobody`). `Cluster.remove` stops the
server and deletes the directory when the run ends.

A test that cannot have a server fails with one line saying why; it never skips. pytest-
postgresql and testing.postgresql start a cluster the same way but neither can run one as
root, which is how CI runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

__all__ = ["CLUSTER", "Cluster", "fresh_schema", "initialised", "server_url"]

CLUSTER = "HARNESS_TEST_POSTGRES_CLUSTER"
INSTALL = "./scripts/test installs it (Debian/Ubuntu: apt-get install postgresql)"
# The test role is the superuser; the tests check that its password never shows.
INITDB = "-U harness -A scram-sha-256 -E UTF8 --locale=C --no-sync"
# Nothing here outlives the run: durability would only slow every commit down.
SETTINGS = """
listen_addresses = '127.0.0.1'
unix_socket_directories = '{directory}'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
"""


def server_url() -> str:
    """HARNESS_TEST_POSTGRES once a server answers there, else the run's own cluster (started
    on first use); the test fails with one line when there is neither."""
    import pytest

    url = os.environ.get("HARNESS_TEST_POSTGRES")
    if url:
        import psycopg

        try:
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.Error as exc:
            pytest.fail(f"no server answers at HARNESS_TEST_POSTGRES: {str(exc).strip()}")
        return url
    directory = os.environ.get(CLUSTER)
    if not directory:
        pytest.fail(
            "no PostgreSQL for this test: run it through ./scripts/test or `uv run pytest` "
            "from the workspace root (they start one), or set HARNESS_TEST_POSTGRES="
            "postgresql://USER:PASSWORD@HOST:PORT/DB"
        )
    try:
        return Cluster(Path(directory)).url()
    except ClusterError as exc:
        pytest.fail(str(exc))


class ClusterError(Exception):
    """The throwaway cluster could not start; the message is the one line to show."""


@dataclass(frozen=True)
class Cluster:
    """A throwaway PostgreSQL cluster in `directory`, started by whichever process asks for
    its URL first; every later caller, in any process, gets the same URL."""

    directory: Path

    @classmethod
    def create(cls) -> Cluster:
        """An empty directory for a cluster, owned by the user that will run it."""
        directory = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        if os.geteuid() == 0:
            owner = pwd.getpwnam(_owner())
            os.chown(directory, owner.pw_uid, owner.pw_gid)
        return cls(directory)

    def url(self) -> str:
        """The cluster's URL, starting it if no process has yet; ClusterError if it cannot
        start (remembered, so that the other tests fail at once with the same line)."""
        with self._locked():
            known, failed = self.directory / "url", self.directory / "error"
            if known.exists():
                return known.read_text()
            if failed.exists():
                raise ClusterError(failed.read_text())
            try:
                url = self._start()
            except ClusterError as exc:
                failed.write_text(str(exc))
                raise
            known.write_text(url)
            return url

    def remove(self) -> None:
        """Stop the server, if one started, and delete the directory."""
        pidfile = self.directory / "data" / "postmaster.pid"
        if pidfile.exists():
            stop = [str(_bindir() / "pg_ctl"), "stop", "-D", str(pidfile.parent), "-m", "immediate"]
            stopped = subprocess.run(_as_owner(stop), capture_output=True, check=False)
            if stopped.returncode != 0 and pidfile.exists():
                # What -m immediate sends, sent directly: the directory goes in any case.
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pidfile.read_text().split()[0]), signal.SIGQUIT)
        shutil.rmtree(self.directory, ignore_errors=True)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.directory / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _start(self) -> str:
        bindir, data = _bindir(), self.directory / "data"
        password = f"pg-{secrets.token_hex(12)}"
        secret = self.directory / "password"  # a file: runuser's user cannot reopen our stdin
        secret.write_text(password)
        shutil.chown(secret, self.directory.stat().st_uid)
        initdb = [str(bindir / "initdb"), "-D", str(data), f"--pwfile={secret}", *INITDB.split()]
        try:
            _run(_as_owner(initdb), "initdb")
        finally:
            secret.unlink()
        with open(data / "postgresql.conf", "a") as conf:
            conf.write(SETTINGS.format(directory=self.directory))
        for _attempt in range(3):  # another process may take the free port before postgres
            port = _free_port()
            log = self.directory / "log"
            start = [str(bindir / "pg_ctl"), "start", "-D", str(data), "-l", str(log), "-w", "-s"]
            start += ["-o", f"-p {port}"]
            if subprocess.run(_as_owner(start), capture_output=True, check=False).returncode == 0:
                return f"postgresql://harness:{password}@127.0.0.1:{port}/postgres"
        raise ClusterError(f"postgres did not start: {_last_line(self.directory / 'log')}")


def _bindir() -> Path:
    """Where initdb and pg_ctl are: on PATH, else the newest of Debian's versioned
    /usr/lib/postgresql/NN/bin, which is not on PATH."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_version)
    if not debian:
        raise ClusterError(f"PostgreSQL's initdb is not installed: {INSTALL}")
    return debian[-1].parent


def _version(initdb: Path) -> int:
    name = initdb.parent.parent.name
    return int(name) if name.isdigit() else 0


def _owner() -> str:
    """The unprivileged user a root run starts the cluster as."""
    try:
        return pwd.getpwnam("postgres").pw_name
    except KeyError:
        return "nobody"


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", _owner(), "--", *argv] if os.geteuid() == 0 else argv


def _run(argv: list[str], name: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = (done.stderr.strip() or f"exit status {done.returncode}").splitlines()[-1]
        raise ClusterError(f"{name} failed for the test cluster: {why}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1] if lines else "no log"


@contextmanager
def fresh_schema(server: str) -> Iterator[str]:
    """A URL of `server` whose tables land in a new, empty schema (`search_path`), dropped
    on exit: tests share one database and never see each other's sessions."""
    import psycopg
    from psycopg import sql

    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    separator = "&" if "?" in server else "?"
    try:
        yield f"{server}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def initialised(url: str) -> str:
    """`url` with the store's tables created (`harness store init`)."""
    from ._connect import connect
    from ._schema import init

    with connect(url) as conn:
        init(conn, "test")
    return url
