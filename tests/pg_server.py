"""A real PostgreSQL server for the history's tests and benchmarks/history_scale.py.

CI starts one (.ci/postgres.sh) and says where in PERFGATE_TEST_PG_URL; with CI=true and no
URL the tests that need it fail, they never skip. Elsewhere, without the variable, a temporary
cluster is started here from the PostgreSQL binaries on this machine (initdb, pg_ctl; on PATH
or under /usr/lib/postgresql/*/bin), listening on a unix socket only, and stopped at the end.
PostgreSQL refuses to run as root: as root, the cluster is owned by `nobody`.

Each test gets a database of its own (pg_url), dropped after it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

URL_VARIABLE = "PERFGATE_TEST_PG_URL"
RUN_AS = "nobody"  # the cluster's owner when the tests run as root


def binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, else Debian's newest install."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", RUN_AS, "--", *argv]


@dataclass
class Cluster:
    """A temporary cluster: its data in `home`, its socket there too."""

    home: Path
    bin: Path

    @property
    def url(self) -> str:
        return f"postgresql://perfgate@/postgres?host={self.home}"

    @classmethod
    def start(cls, *, durable: bool = False) -> Cluster:
        """durable: fsync on, as a real server (benchmarks/history_scale.py); the tests'
        cluster turns it off, being thrown away."""
        where = binaries()
        if where is None:
            raise RuntimeError(
                "no PostgreSQL binaries (initdb, pg_ctl) on this machine: install PostgreSQL "
                f"(Debian: apt-get install postgresql) or set {URL_VARIABLE} to a server's URL"
            )
        # Short: a unix socket's path must fit 107 bytes. Not under pytest's 0700 folders:
        # the owner (nobody, as root) must reach it.
        home = Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp"))
        if os.geteuid() == 0:
            shutil.chown(home, RUN_AS)
        cluster = cls(home, where)
        data = str(home / "data")
        subprocess.run(
            _as_owner([str(where / "initdb"), "-D", data, "-U", "perfgate", "--auth=trust",
                       "--no-sync", "-E", "UTF8", "--locale=C"]),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        # No TCP (no port to collide on).
        options = f"-k {home} -c listen_addresses='' -c max_connections=50"
        if not durable:
            options += " -c fsync=off"
        subprocess.run(
            _as_owner([str(where / "pg_ctl"), "-D", data, "-l", str(home / "log"), "-w",
                       "-t", "60", "-o", options, "start"]),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        return cluster

    def stop(self) -> None:
        subprocess.run(
            _as_owner([str(self.bin / "pg_ctl"), "-D", str(self.home / "data"), "-m", "fast",
                       "-w", "stop"]),
            check=False, capture_output=True, timeout=120,
        )  # fmt: skip
        shutil.rmtree(self.home, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    """The server's URL naming another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def create_database(server: str) -> str:
    """A new, empty database on the server: its URL."""
    import psycopg

    name = f"perfgate_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return with_database(server, name)


def drop_database(server: str, url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server's URL (its maintenance database)."""
    given = os.environ.get(URL_VARIABLE)
    if given:
        yield given
        return
    if os.environ.get("CI") == "true":
        pytest.fail(
            f"CI=true but {URL_VARIABLE} is unset: CI runs the PostgreSQL history's tests "
            "against a real server (.ci/postgres.sh starts one)"
        )
    try:
        cluster = Cluster.start()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        said = (
            exc.stderr.decode(errors="replace")
            if isinstance(exc, subprocess.CalledProcessError)
            else exc
        )
        pytest.fail(f"cannot start a PostgreSQL cluster for the tests: {said}")
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A database of this test's own, dropped after it."""
    url = create_database(pg_server)
    try:
        yield url
    finally:
        drop_database(pg_server, url)
