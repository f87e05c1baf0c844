"""The SQLite store: a history in one file, through the standard library's sqlite3.

WAL lets readers go on while one writer writes; the busy timeout makes a writer wait for
another's transaction instead of failing, and each run is stored in one IMMEDIATE transaction
that takes the write lock before it reads, so N CI jobs storing at once neither lose a run
nor store one twice (tests/test_history.py: 8 processes). The schema is versioned by the
migrations table (sql.py); a file that is not a perfgate history, or one of a newer schema,
is refused with one message naming it rather than altered."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from perfgate.common.errors import PerfgateError
from perfgate.history import sql
from perfgate.history.model import (
    Finding,
    KernelRecord,
    MetricRecord,
    ResultRecord,
    RunContext,
    RunFingerprint,
    RunRecord,
    Value,
)

BUSY_TIMEOUT_S = 60.0  # a CI job waits this long for another's write before giving up


class HistoryError(PerfgateError):
    """A history database that cannot be used, or a run that contradicts one kept."""


def _split(v: Value) -> tuple[float | None, str | None]:
    """A value as the two columns that keep it: a number or a label."""
    if isinstance(v, str):
        return None, v
    return v, None


def _joined(number: float | None, text: str | None) -> Value:
    return text if text is not None else number


def _finding_columns(f: Finding | None) -> tuple[str | None, str | None, str | None]:
    return (None, None, None) if f is None else (f.mechanism, f.title, f.lever)


def _finding(mechanism: str | None, title: str | None, lever: str | None) -> Finding | None:
    if mechanism is None or title is None:
        return None
    return Finding(mechanism, title, lever or "")


class SqliteStore:
    """One history file. Use as a context manager: the connection closes on leaving."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = str(path)
        target = Path(self.path)
        if target.exists() and not target.is_file():
            raise HistoryError("not a perfgate history: not a regular file", self.path)
        if not create and not target.exists():
            raise HistoryError("no such history (perfgate history add creates one)", self.path)
        try:
            # isolation_level=None: transactions are begun here, explicitly, as IMMEDIATE.
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open: {exc}", self.path) from exc
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # Whose file it is, asked before WAL is set: setting it rewrites another's file.
            self._refuse_foreign(self._tables())
            self._db.execute("PRAGMA journal_mode = WAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise HistoryError(f"not a perfgate history ({exc})", self.path) from exc
        except BaseException:
            self._db.close()
            raise

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _tables(self) -> set[str]:
        rows = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in rows}

    def _refuse_foreign(self, tables: set[str]) -> None:
        if tables and "perfgate_migrations" not in tables:
            raise HistoryError(
                f"not a perfgate history: it holds other tables ({', '.join(sorted(tables)[:5])})",
                self.path,
            )

    def _migrate(self) -> None:
        with self._write() as db:
            self._refuse_foreign(self._tables())
            db.execute(sql.MIGRATIONS_TABLE)
            current = db.execute(sql.CURRENT_VERSION).fetchone()[0] or 0
            if current > sql.SCHEMA_VERSION:
                raise HistoryError(
                    f"a perfgate history of schema version {current}; this perfgate reads "
                    f"version {sql.SCHEMA_VERSION} and older: upgrade perfgate",
                    self.path,
                )
            now = _now()
            for version in range(current + 1, sql.SCHEMA_VERSION + 1):
                name, statements = sql.MIGRATIONS[version - 1]
                try:
                    for statement in statements:
                        db.execute(statement)
                except sqlite3.DatabaseError as exc:
                    # The whole upgrade is one transaction: it rolls back, nothing half-done.
                    raise HistoryError(
                        f"cannot upgrade to schema version {version} ({name}): {exc}; the "
                        "history is left as it was",
                        self.path,
                    ) from exc
                db.execute(sql.RECORD_MIGRATION, (version, name, now))

    @property
    def schema_version(self) -> int:
        return int(self._db.execute(sql.CURRENT_VERSION).fetchone()[0])

    def store(self, record: RunRecord) -> bool:
        """Keep a run: True when stored, False when this very run was kept already. Another
        payload under a run id already kept is an error: records are immutable."""
        digest = record.digest()
        ctx = record.context
        with self._write() as db:
            kept = db.execute(sql.RUN_DIGEST, (ctx.run_id,)).fetchone()
            if kept is not None:
                if kept[0] == digest:
                    return False
                raise HistoryError(
                    f"run {ctx.run_id!r} is kept already with other results; a run is stored "
                    "once (give this one another --run-id)",
                    self.path,
                )
            db.execute(
                sql.INSERT_RUN,
                (
                    ctx.run_id,
                    digest,
                    ctx.recorded_at,
                    ctx.commit,
                    ctx.branch,
                    ctx.pull_request,
                    ctx.ci_job,
                    record.status,
                    record.exit_code,
                    record.perfgate_version,
                ),
            )
            for ri, result in enumerate(record.results):
                fp = result.fingerprint
                db.execute(
                    sql.INSERT_RESULT,
                    (ctx.run_id, ri, result.baseline, fp.key(), *astuple(fp)),
                )
                for ki, k in enumerate(result.kernels):
                    db.execute(
                        sql.INSERT_KERNEL,
                        (
                            ctx.run_id,
                            ri,
                            ki,
                            k.kernel,
                            k.name,
                            k.state,
                            k.family,
                            k.nvtx,
                            k.matched_by,
                            *_finding_columns(k.finding),
                        ),
                    )
                    db.executemany(
                        sql.INSERT_METRIC,
                        [
                            (
                                ctx.run_id,
                                ri,
                                ki,
                                mi,
                                m.metric,
                                m.state,
                                *_split(m.value),
                                *_split(m.baseline),
                                m.unit,
                                m.bound,
                            )
                            for mi, m in enumerate(k.metrics)
                        ],
                    )
        return True

    def run_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute(sql.RUN_IDS)]

    def load(self, run_id: str) -> RunRecord | None:
        """A kept run as it was stored; None when there is none of that id."""
        run = self._db.execute(sql.SELECT_RUN, (run_id,)).fetchone()
        if run is None:
            return None
        metrics: dict[tuple[int, int], list[MetricRecord]] = {}
        for ri, ki, metric, state, vn, vt, bn, bt, unit, bound in self._db.execute(
            sql.SELECT_METRICS, (run_id,)
        ):
            metrics.setdefault((ri, ki), []).append(
                MetricRecord(metric, state, _joined(vn, vt), _joined(bn, bt), unit, bound)
            )
        kernels: dict[int, list[KernelRecord]] = {}
        for ri, ki, kernel, name, state, family, nvtx, matched_by, *found in self._db.execute(
            sql.SELECT_KERNELS, (run_id,)
        ):
            kernels.setdefault(ri, []).append(
                KernelRecord(
                    kernel,
                    name,
                    state,
                    family,
                    nvtx,
                    matched_by,
                    tuple(metrics.get((ri, ki), ())),
                    _finding(*found),
                )
            )
        results = tuple(
            ResultRecord(baseline, RunFingerprint(*fp), tuple(kernels.get(ri, ())))
            for ri, baseline, *fp in self._db.execute(sql.SELECT_RESULTS, (run_id,))
        )
        rid, at, commit, branch, pr, job, status, code, version = run
        return RunRecord(
            RunContext(rid, at, commit, branch, pr, job), status, code, version, results
        )

    def series_rows(self, kernel: str, metric: str | None) -> list[tuple[Any, ...]]:
        """A kernel's points as sql.SERIES selects them, oldest first."""
        if metric is None:
            return list(self._db.execute(sql.SERIES, (kernel,)))
        return list(self._db.execute(sql.SERIES_OF_METRIC, (kernel, metric)))

    def prune(self, *, before: str | None = None, keep: int | None = None) -> list[str]:
        """Delete the runs recorded before `before` (ISO 8601) and those beyond the newest
        `keep`; returns the run ids deleted."""
        with self._write() as db:
            doomed: set[str] = set()
            if before is not None:
                doomed |= {r[0] for r in db.execute(sql.OLD_RUNS, (before,))}
            if keep is not None:
                doomed |= {r[0] for r in list(db.execute(sql.KEPT_NEWEST))[keep:]}
            for run_id in sorted(doomed):
                for statement in sql.DELETE_RUN:
                    db.execute(statement, (run_id,))
        return sorted(doomed)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def now() -> str:
    """The time a record is made: ISO 8601 in UTC, which sorts as text in any store."""
    return _now()


def open_store(path: str, *, create: bool = True) -> SqliteStore:
    return SqliteStore(path, create=create)
