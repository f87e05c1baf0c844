"""The PostgreSQL store: a history on a server a fleet of runners shares (`--db
postgresql://...`), through psycopg 3, the optional `postgres` extra, imported only here and
only when such a URL is given.

It runs the SQLite store's schema, migrations and statements (sqlstore.py, sql.py) with
psycopg's `%s` placeholders. Each run is stored in one transaction at READ COMMITTED: the
run's row goes in first with ON CONFLICT DO NOTHING, so a second writer of the same run id
waits for the first to commit and then finds it kept. Migrations take a transaction-level
advisory lock, so CI jobs opening a new database at once create its schema once. A database
(PostgreSQL: the URL's current schema) that holds tables but no perfgate history, or one of a
newer schema version, is refused and left unaltered, as a file is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from perfgate.history import sql
from perfgate.history.base import HistoryError
from perfgate.history.sqlstore import Cursor, SqlStore

if TYPE_CHECKING:
    import psycopg

EXTRA = "python3 -m pip install 'perfgate[postgres]'"
CONNECT_TIMEOUT_S = 30  # unless the URL says: a CI job must not hang on an unreachable server
# pg_advisory_xact_lock's key for migrations: any constant; b"perf" as an integer.
SCHEMA_LOCK = 0x70657266


def redacted(url: str) -> str:
    """The URL as messages name it: a password in it (user:password@ or ?password=) hidden."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.split(':', 1)[0]}:***@{host}"
        query = [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, True)]
        return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, safe="/:*")))
    except ValueError:  # not even a URL: show its scheme only
        return url.split("//", 1)[0] + "//..."


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class PostgresStore(SqlStore):
    """One history in a PostgreSQL database. Use as a context manager."""

    marker = "%s"

    def __init__(self, url: str, *, create: bool = True) -> None:
        super().__init__(redacted(url))
        try:
            import psycopg
            import psycopg.conninfo
        except ImportError as exc:
            raise HistoryError(
                f"a PostgreSQL history needs the postgres extra: {EXTRA}", self.where
            ) from exc
        self.driver_error = psycopg.Error
        self._lost: type[Exception] = psycopg.OperationalError
        try:
            options: dict[str, Any] = {}
            if "connect_timeout" not in psycopg.conninfo.conninfo_to_dict(url):
                options["connect_timeout"] = CONNECT_TIMEOUT_S
            # autocommit: the store begins each transaction itself (_write, _snapshot).
            self._db: psycopg.Connection[Any] = psycopg.connect(url, autocommit=True, **options)
        except psycopg.Error as exc:
            raise HistoryError(f"cannot connect: {_one_line(exc)}", self.where) from exc
        try:
            self.migrate(create=create)
        except psycopg.Error as exc:
            self._db.close()
            raise HistoryError(f"cannot use the database: {_one_line(exc)}", self.where) from exc
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        with self._server(), self._db.transaction(), self._db.cursor() as cur:
            yield cur

    @contextmanager
    def _snapshot(self) -> Iterator[Cursor]:
        with self._server(), self._db.transaction(), self._db.cursor() as cur:
            # A load reads four tables: one snapshot, whatever prune runs meanwhile.
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield cur

    @contextmanager
    def _server(self) -> Iterator[None]:
        """A server gone or refusing mid-command is the environment's problem, not a bug:
        one message (exit 2), the transaction rolled back."""
        try:
            yield
        except self._lost as exc:
            raise HistoryError(f"the database failed: {_one_line(exc)}", self.where) from exc

    def _insert_rows(self, cur: Cursor, table: str, rows: list[tuple[Any, ...]]) -> None:
        copying = cast("psycopg.Cursor[Any]", cur)  # the cursor _write gave: psycopg's
        with copying.copy(sql.copy_in(table)) as copy:
            for row in rows:
                copy.write_row(row)

    def _tables(self, cur: Cursor) -> set[str]:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        return {r[0] for r in cur.fetchall()}

    def _lock_schema(self, cur: Cursor) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
