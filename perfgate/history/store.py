"""The SQLite store, and the choice of store a `--db` value makes (open_store).

SQLite: a history in one file, through the standard library's sqlite3. WAL lets readers go on
while one writer writes; the busy timeout makes a writer wait for another's transaction
instead of failing, and each run is stored in one IMMEDIATE transaction that takes the write
lock before it reads, so N CI jobs storing at once neither lose a run nor store one twice
(tests/history/test_history.py: 8 processes). A file that is not a perfgate history, or one
of a newer schema, is refused with one message naming it rather than altered. What it runs is shared
with the PostgreSQL store (sqlstore.py)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from perfgate.history.base import HistoryError, HistoryStore, now
from perfgate.history.sqlstore import Cursor, SqlStore

__all__ = ["HistoryError", "HistoryStore", "SqliteStore", "is_url", "now", "open_store"]

BUSY_TIMEOUT_S = 60.0  # a CI job waits this long for another's write before giving up
CACHE_KIB = 131072  # the connection's page cache, at most: memory used as pages are read
CHECKPOINT_PAGES = 16384  # WAL pages (4 KiB each) between automatic checkpoints

URL_SCHEMES = ("postgresql://", "postgres://")


class SqliteStore(SqlStore):
    """One history file. Use as a context manager: the connection closes on leaving."""

    driver_error = sqlite3.DatabaseError

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        super().__init__(str(path))
        self.path = str(path)
        target = Path(self.path)
        if target.exists() and not target.is_file():
            raise HistoryError("not a perfgate history: not a regular file", self.path)
        if not create and not target.exists():
            raise HistoryError("no such history (perfgate history add creates one)", self.path)
        try:
            # isolation_level=None: transactions are begun here, explicitly.
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open: {exc}", self.path) from exc
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # A run adds a point to each of its ~2,400 series: the last page of each series in
            # metrics_by_series is written per run, and reached through the index's inner
            # pages. SQLite's 2 MB default cache could not hold them (16,000 points/s stored
            # at 3 million, benchmarks/history_scale.py); and a checkpoint every 64 MB of WAL
            # rather than 4 writes such a page once for several runs (a quarter faster).
            self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            self._db.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
            # Whose file it is, asked before WAL is set: setting it rewrites another's file.
            self.refuse(self._tables(self._db.cursor()), create=create)
            _set_wal(self._db)
            self.migrate(create=create)
        except HistoryError:
            self._db.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise HistoryError(f"not a perfgate history ({exc})", self.path) from exc
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        # IMMEDIATE: the write lock is taken before the first read, not upgraded later.
        cur = self._db.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Cursor]:
        cur = self._db.cursor()
        cur.execute("BEGIN")  # deferred: WAL gives the reads of one transaction one state
        try:
            yield cur
        finally:
            cur.execute("COMMIT")

    def _lock_schema(self, cur: Cursor) -> None:
        """Nothing to take: the IMMEDIATE transaction holds the file's write lock already."""

    def _tables(self, cur: Cursor) -> set[str]:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in cur.fetchall()}


def is_url(db: str) -> bool:
    """A `--db` value naming a PostgreSQL database rather than a file."""
    return db.startswith(URL_SCHEMES)


def open_store(db: str, *, create: bool = True) -> HistoryStore:
    """The history `--db` names: a PostgreSQL database for a postgresql:// URL, else an SQLite
    file. create=False: the history must exist (show, prune)."""
    if is_url(db):
        from perfgate.history.postgres import PostgresStore

        return PostgresStore(db, create=create)
    return SqliteStore(db, create=create)


def _set_wal(db: sqlite3.Connection) -> None:
    """PRAGMA journal_mode = WAL, retried while another process holds the file's lock: the
    change of journal mode answers "database is locked" at once, without waiting out the busy
    timeout, when several processes open a new history together (one of 8 writers did, on a
    loaded 2-CPU machine). Bounded by the same timeout as every other wait."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
