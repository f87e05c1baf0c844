"""What the SQLite and the PostgreSQL stores share: the schema's migrations, storing a run,
loading it back, a kernel's points and retention, all through sql.py's statements. A store
gives its connection's transactions, its placeholder and how it lists its tables; the rows it
writes and reads are the same in both, so one record is the same rows in either engine.

Storing is idempotent without a lock of its own: the run's row goes in first with
`ON CONFLICT (run_id) DO NOTHING` (both engines' syntax), so of two writers storing one run id
at once, one inserts it and the other finds it kept (PostgreSQL makes the second wait for the
first's commit) and compares digests."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import astuple
from types import TracebackType
from typing import Any, Protocol

from perfgate.history import sql
from perfgate.history.base import HistoryError, now
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

MIGRATIONS_TABLE = "perfgate_migrations"
# A point of a kernel's series as series_rows gives it (queries.series reads it); "name" is
# given on each series' newest point only.
SERIES_ROW = (
    "run_id", "recorded_at", "commit", "branch", "fingerprint", "name", "metric", "state",
    "value_number", "value_text", "baseline", "unit", "bound", "finding", "finding_title",
    "machine_start",
)  # fmt: skip


class Cursor(Protocol):
    """The part of a DB-API cursor the shared code runs (sqlite3's and psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, statement: str, params: Sequence[Any] = ..., /) -> object: ...

    def executemany(self, statement: str, params: Iterable[Sequence[Any]], /) -> object: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def split(v: Value) -> tuple[float | None, str | None]:
    """A value as the two columns that keep it: a number or a label."""
    if isinstance(v, str):
        return None, v
    return v, None


def joined(number: float | None, text: str | None) -> Value:
    return text if text is not None else (None if number is None else float(number))


def finding_columns(f: Finding | None) -> tuple[str | None, str | None, str | None]:
    return (None, None, None) if f is None else (f.mechanism, f.title, f.lever)


def finding(mechanism: str | None, title: str | None, lever: str | None) -> Finding | None:
    if mechanism is None or title is None:
        return None
    return Finding(mechanism, title, lever or "")


def _run_row(record: RunRecord, digest: str) -> tuple[Any, ...]:
    ctx = record.context
    return (
        ctx.run_id, digest, ctx.recorded_at, ctx.commit, ctx.branch, ctx.pull_request,
        ctx.ci_job, record.status, record.exit_code, record.perfgate_version,
    )  # fmt: skip


def child_rows(
    record: RunRecord,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The results, kernels and metrics rows of a run, in sql.CHILD_COLUMNS' order."""
    rid = record.context.run_id
    results: list[tuple[Any, ...]] = []
    kernels: list[tuple[Any, ...]] = []
    metrics: list[tuple[Any, ...]] = []
    ctx = record.context
    for ri, result in enumerate(record.results):
        fp = result.fingerprint
        key = fp.key()
        start = result.machine_start
        results.append((rid, ri, result.baseline, key, *astuple(fp), start))
        for ki, k in enumerate(result.kernels):
            kernels.append(
                (rid, ri, ki, k.kernel, k.name, k.state, k.family, k.nvtx, k.matched_by,
                 *finding_columns(k.finding), ctx.recorded_at, ctx.commit, ctx.branch, key,
                 start)
            )  # fmt: skip
            metrics.extend(
                (rid, ri, ki, mi, m.metric, m.state, *split(m.value), *split(m.baseline),
                 m.unit, m.bound, k.kernel)
                for mi, m in enumerate(k.metrics)
            )  # fmt: skip
    return results, kernels, metrics


class SqlStore(abc.ABC):
    """A history over a DB-API connection; subclasses give the engine's own parts."""

    marker = "?"  # the driver's placeholder
    # The driver's error: a migration statement that fails with it is reported, rolled back.
    driver_error: type[Exception] = Exception

    def __init__(self, where: str) -> None:
        self._where = where

    @property
    def where(self) -> str:
        return self._where

    # ------------------------------------------------------------ what an engine gives

    @abc.abstractmethod
    def _write(self) -> AbstractContextManager[Cursor]:
        """A transaction that writes: committed on leaving, rolled back on an exception."""

    @abc.abstractmethod
    def _snapshot(self) -> AbstractContextManager[Cursor]:
        """A transaction that reads one consistent state of the history."""

    @abc.abstractmethod
    def _tables(self, cur: Cursor) -> set[str]:
        """The tables of the database (PostgreSQL: of the current schema)."""

    @abc.abstractmethod
    def _lock_schema(self, cur: Cursor) -> None:
        """Serialise migrations between connections, within the transaction given."""

    @abc.abstractmethod
    def close(self) -> None: ...

    # ------------------------------------------------------------ shared

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def q(self, statement: str) -> str:
        return sql.placeholders(statement, self.marker) if self.marker != "?" else statement

    def refuse(self, tables: set[str], *, create: bool) -> None:
        """Refuse a database that holds another's tables, or none when it must exist."""
        if tables and MIGRATIONS_TABLE not in tables:
            raise HistoryError(
                f"not a perfgate history: it holds other tables ({', '.join(sorted(tables)[:5])})",
                self.where,
            )
        if not tables and not create:
            raise HistoryError(
                "holds no perfgate history (perfgate history add makes one)", self.where
            )

    def migrate(self, *, create: bool) -> None:
        """Bring the schema to this perfgate's version: every migration missing, in one
        transaction, so an upgrade that fails leaves the history as it was. A history of
        this version is only read (no write lock: `show` never waits for a writer)."""
        with self._snapshot() as cur:
            tables = self._tables(cur)
            self.refuse(tables, create=create)
            if MIGRATIONS_TABLE in tables:
                cur.execute(sql.CURRENT_VERSION)
                if self._current(cur) == sql.SCHEMA_VERSION:
                    return
        with self._write() as cur:
            self._lock_schema(cur)
            self.refuse(self._tables(cur), create=create)
            cur.execute(sql.MIGRATIONS_TABLE)
            cur.execute(sql.CURRENT_VERSION)
            current = self._current(cur)
            stamp = now()
            for version in range(current + 1, sql.SCHEMA_VERSION + 1):
                name, statements = sql.MIGRATIONS[version - 1]
                try:
                    for statement in statements:
                        cur.execute(statement)
                except self.driver_error as exc:
                    raise HistoryError(
                        f"cannot upgrade to schema version {version} ({name}): "
                        f"{' '.join(str(exc).split())}; the history is left as it was",
                        self.where,
                    ) from exc
                cur.execute(self.q(sql.RECORD_MIGRATION), (version, name, stamp))

    def _current(self, cur: Cursor) -> int:
        """The version CURRENT_VERSION just read; a newer one than this perfgate's refused."""
        current = int(cur.fetchone()[0] or 0)
        if current > sql.SCHEMA_VERSION:
            raise HistoryError(
                f"a perfgate history of schema version {current}; this perfgate reads "
                f"version {sql.SCHEMA_VERSION} and older: upgrade perfgate",
                self.where,
            )
        return current

    @property
    def schema_version(self) -> int:
        with self._snapshot() as cur:
            cur.execute(sql.CURRENT_VERSION)
            return int(cur.fetchone()[0])

    def store(self, record: RunRecord) -> bool:
        """Keep a run: True when stored, False when this very run was kept already. Another
        payload under a run id already kept is an error: records are immutable."""
        digest = record.digest()
        run_id = record.context.run_id
        with self._write() as cur:
            cur.execute(self.q(sql.INSERT_RUN), _run_row(record, digest))
            if cur.rowcount == 0:  # kept already (or by a writer that committed meanwhile)
                cur.execute(self.q(sql.RUN_DIGEST), (run_id,))
                if cur.fetchone()[0] == digest:
                    return False
                raise HistoryError(
                    f"run {run_id!r} is kept already with other results; a run is stored "
                    "once (give this one another --run-id)",
                    self.where,
                )
            for table, rows in zip(sql.CHILD_COLUMNS, child_rows(record), strict=True):
                if rows:
                    self._insert_rows(cur, table, rows)
        return True

    def _insert_rows(self, cur: Cursor, table: str, rows: list[tuple[Any, ...]]) -> None:
        """A run's rows of one table (sql.CHILD_COLUMNS), within its transaction."""
        cur.executemany(self.q(sql.insert(table)), rows)

    def run_ids(self) -> list[str]:
        with self._snapshot() as cur:
            cur.execute(sql.RUN_IDS)
            return [r[0] for r in cur.fetchall()]

    def baselines(self) -> list[str]:
        """The baselines the kept runs checked, as the checks named them, sorted."""
        with self._snapshot() as cur:
            cur.execute(sql.BASELINES)
            return sorted(r[0] for r in cur.fetchall())

    def run_ids_of(self, baseline: str) -> list[str]:
        """The runs that checked `baseline` (as the checks named it), oldest first."""
        with self._snapshot() as cur:
            cur.execute(self.q(sql.RUN_IDS_OF_BASELINE), (baseline,))
            return [r[0] for r in cur.fetchall()]

    def load(self, run_id: str) -> RunRecord | None:
        """A kept run as it was stored; None when there is none of that id."""
        with self._snapshot() as cur:
            cur.execute(self.q(sql.SELECT_RUN), (run_id,))
            run = cur.fetchone()
            if run is None:
                return None
            rows = []
            for statement in (sql.SELECT_RESULTS, sql.SELECT_KERNELS, sql.SELECT_METRICS):
                cur.execute(self.q(statement), (run_id,))
                rows.append(cur.fetchall())
        return _record(run, *rows)

    def series_rows(self, kernel: str, metric: str | None) -> list[tuple[Any, ...]]:
        """A kernel's points, oldest first (then by metric), each as SERIES_ROW names; the
        kernel's name is given on each series' newest point only (None on the others): a
        series is named as its newest run named the kernel."""
        with self._snapshot() as cur:
            if metric is not None:
                cur.execute(self.q(sql.SERIES_OF_METRIC), (metric, kernel))
                found = cur.fetchall()
            else:
                found = self._all_metrics(cur, kernel)
            # Each row as SERIES_ROW, the kernel's key in the name's place until names are read.
            rows = [
                [rid, at, commit, branch, fp, (rid, ri, ki), name_of_metric, state, number, text,
                 baseline, unit, bound, mechanism, title, start]
                for (rid, at, commit, branch, fp, ri, ki, name_of_metric, state, number, text,
                     baseline, unit, bound, mechanism, title, start) in found
            ]  # fmt: skip
            rows.sort(key=lambda r: (r[1], r[0], r[6]))
            # Each series' (fingerprint, metric) newest row is its last. Its kernel's name is
            # read by key, once per run: the indexes that gave the rows hold no names.
            newest = {(r[4], r[6]): r for r in rows}
            names: dict[tuple[Any, ...], str] = {}
            for r in newest.values():
                if r[5] not in names:
                    cur.execute(self.q(sql.KERNEL_NAME), r[5])
                    names[r[5]] = cur.fetchone()[0]
        named = [(r, names[r[5]]) for r in newest.values()]
        for r in rows:
            r[5] = None
        for r, name in named:
            r[5] = name
        return [tuple(r) for r in rows]

    def _all_metrics(self, cur: Cursor, kernel: str) -> list[tuple[Any, ...]]:
        """Every metric's points of a kernel, as sql.SERIES_COLUMNS: the kernel's runs and
        its points read apart (two ranges) and paired here."""
        cur.execute(self.q(sql.SERIES_KERNELS), (kernel,))
        where = {(r[0], r[1], r[2]): r for r in cur.fetchall()}
        cur.execute(self.q(sql.SERIES_POINTS), (kernel,))
        out = []
        for (
            rid,
            ri,
            ki,
            name_of_metric,
            state,
            number,
            text,
            baseline,
            unit,
            bound,
        ) in cur.fetchall():
            k = where.get((rid, ri, ki))
            if k is not None:  # always: one snapshot
                out.append(
                    (rid, k[3], k[4], k[5], k[6], ri, ki, name_of_metric, state, number, text,
                     baseline, unit, bound, k[7], k[8], k[9])
                )  # fmt: skip
        return out

    def prune(self, *, before: str | None = None, keep: int | None = None) -> list[str]:
        """Delete the runs recorded before `before` (ISO 8601) and those beyond the newest
        `keep`; returns the run ids deleted."""
        with self._write() as cur:
            doomed: set[str] = set()
            if before is not None:
                cur.execute(self.q(sql.OLD_RUNS), (before,))
                doomed |= {r[0] for r in cur.fetchall()}
            if keep is not None:
                cur.execute(sql.KEPT_NEWEST)
                doomed |= {r[0] for r in cur.fetchall()[keep:]}
            for statement in sql.DELETE_RUN:
                cur.executemany(self.q(statement), [(run_id,) for run_id in sorted(doomed)])
        return sorted(doomed)


def _record(
    run: Sequence[Any],
    results: Iterable[Sequence[Any]],
    kernels: Iterable[Sequence[Any]],
    metrics: Iterable[Sequence[Any]],
) -> RunRecord:
    """A run record from its rows as sql.SELECT_* give them."""
    by_kernel: dict[tuple[int, int], list[MetricRecord]] = {}
    for ri, ki, metric, state, vn, vt, bn, bt, unit, bound in metrics:
        by_kernel.setdefault((ri, ki), []).append(
            MetricRecord(metric, state, joined(vn, vt), joined(bn, bt), unit, bound)
        )
    by_result: dict[int, list[KernelRecord]] = {}
    for ri, ki, kernel, name, state, family, nvtx, matched_by, *found in kernels:
        by_result.setdefault(ri, []).append(
            KernelRecord(
                kernel, name, state, family, nvtx, matched_by,
                tuple(by_kernel.get((ri, ki), ())), finding(*found),
            )
        )  # fmt: skip
    kept = tuple(
        ResultRecord(baseline, RunFingerprint(*fp), tuple(by_result.get(ri, ())), start)
        for ri, baseline, start, *fp in results
    )
    rid, at, commit, branch, pr, job, status, code, version = run
    return RunRecord(RunContext(rid, at, commit, branch, pr, job), status, code, version, kept)
