"""What a results history costs at scale: SQLite and PostgreSQL side by side in one run.

Ingests --points metric points (default 10 million) into each engine through the stores'
own `store()` (one transaction per run, its digest computed: what `perfgate history add`
does), then times reading one kernel's series for one metric as `perfgate history show
--metric` does (a fresh connection, `queries.series`, the points assembled), and reports the
ingest rate and the database's size per million points (docs/history.md, "Scale").

The runs are shaped on a real check: tests/data/h100/zoo-bad-short-run1.csv against
baselines/h100/zoo.yaml gives 10 kernels of 37 metrics each (their names, units, bounds and
labels as the check wrote them). Each synthetic run holds --kernels kernels made from those
ten (renamed, values moved a little run to run), on one of --fingerprints fingerprints (two
GPUs, two drivers each), with one kernel in twenty regressed and carrying the real check's
first finding. Run ids, commits and times look like a CI's.

PostgreSQL: the server PERFGATE_TEST_PG_URL names (a database is created on it and dropped
after), else a throwaway cluster from this machine's binaries (tests/pg_server.py) with its
default durability (fsync on), since SQLite's store syncs its commits too.

    python benchmarks/history_scale.py                    # the figures in docs/history.md
    python benchmarks/history_scale.py --points 200000    # a quick run
    python benchmarks/history_scale.py --engines sqlite --points 1000000 --keep /tmp/h.db
    python benchmarks/history_scale.py --engines postgres --versus-v3    # version 3's read too
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.history.model import (  # noqa: E402
    KernelRecord,
    MetricRecord,
    ResultRecord,
    RunContext,
    RunFingerprint,
    RunRecord,
)
from perfgate.history.queries import series  # noqa: E402
from perfgate.history.records import from_report  # noqa: E402
from perfgate.history.store import open_store  # noqa: E402
from perfgate.usecases.check import CheckRequest, run_check  # noqa: E402

BASELINE = ROOT / "baselines" / "h100" / "zoo.yaml"
CAPTURE = ROOT / "tests" / "data" / "h100" / "zoo-bad-short-run1.csv"
FINGERPRINTS = (
    RunFingerprint("NVIDIA H100 80GB HBM3", "9.0", "2025.3.1", "570.172.08", "none", "flush_all", "kernel", "gpu__time_duration"),
    RunFingerprint("NVIDIA H100 80GB HBM3", "9.0", "2025.3.1", "575.57.08", "none", "flush_all", "kernel", "gpu__time_duration"),
    RunFingerprint("NVIDIA H200", "9.0", "2025.3.1", "570.172.08", "none", "flush_all", "kernel", "gpu__time_duration"),
    RunFingerprint("NVIDIA H200", "9.0", "2025.3.1", "575.57.08", "none", "flush_all", "kernel", "gpu__time_duration"),
)  # fmt: skip
QUERIES = 25  # series read per engine: the median and the slowest are reported
INDEX = "metrics_by_series"  # schema version 3's index of a kernel's series: its size is told


def template() -> list[KernelRecord]:
    """The real check's kernels: names, metrics, units, bounds, labels and findings."""
    report = run_check(CheckRequest((str(BASELINE),), (str(CAPTURE),)))
    record = from_report(report, RunContext("template", "2026-01-01T00:00:00+00:00"))
    return list(record.results[0].kernels)


def _moved(m: MetricRecord, rng: random.Random, regressed: bool) -> MetricRecord:
    if not isinstance(m.value, float):
        return replace(m, state="pass") if not regressed else m
    value = m.value * (1.0 + rng.gauss(0.0, 0.01))
    return replace(m, value=value, state=m.state if regressed else "pass")


def runs(kernels: int, count: int, seed: int) -> Iterator[RunRecord]:
    """`count` synthetic runs of `kernels` kernels each, oldest first."""
    rng = random.Random(seed)
    base = template()
    start = 1_767_225_600.0  # 2026-01-01, UTC
    for i in range(count):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * 600))
        context = RunContext(
            run_id=f"github:{14_000_000_000 + i}:1:gpu-check",
            recorded_at=f"{stamp}.{rng.randrange(1_000_000):06d}+00:00",
            commit=f"{rng.getrandbits(160):040x}",
            branch="main" if i % 3 else f"feature/change-{i % 97}",
            pull_request=None if i % 3 else str(1000 + i % 97),
            ci_job="gpu-check",
        )
        made = []
        for k in range(kernels):
            real = base[k % len(base)]
            regressed = rng.random() < 0.05
            made.append(
                KernelRecord(
                    kernel=f"{real.kernel}_{k:03d}",
                    name=real.name.replace("(", f"_{k:03d}(", 1),
                    state=real.state if regressed else "pass",
                    family=real.family,
                    nvtx=real.nvtx,
                    matched_by=real.matched_by,
                    metrics=tuple(_moved(m, rng, regressed) for m in real.metrics),
                    finding=real.finding if regressed else None,
                )
            )
        fp = FINGERPRINTS[(i // 50) % len(FINGERPRINTS)]  # runs come in stretches per machine
        result = ResultRecord("baselines/h100/zoo.yaml", fp, tuple(made))
        yield RunRecord(context, "failed", 1, "0.2.0", (result,))


@dataclass(frozen=True)
class Figures:
    engine: str
    runs: int
    points: int
    ingest_s: float
    bytes: int
    index_bytes: int | None  # metrics_by_metric's share of `bytes`
    read_ms: list[float]  # connect and read a series, as `history show --metric` does
    query_ms: list[float]  # the series alone, on an open connection
    series_points: int

    def row(self) -> dict[str, Any]:
        per_million = self.points / 1e6
        row = {
            "engine": self.engine,
            "runs": self.runs,
            "points": self.points,
            "ingest_s": round(self.ingest_s, 1),
            "points_per_s": round(self.points / self.ingest_s),
            "mb_per_million_points": round(self.bytes / 1e6 / per_million, 1),
            "index_mb_per_million_points": None
            if self.index_bytes is None
            else round(self.index_bytes / 1e6 / per_million, 1),
            "series_points": self.series_points,
            "read_ms_median": round(statistics.median(self.read_ms), 1),
            "read_ms_max": round(max(self.read_ms), 1),
            "query_ms_median": round(statistics.median(self.query_ms), 1),
        }
        return row


def _size(engine: str, db: str) -> int:
    """The database's bytes: PostgreSQL's pg_database_size, SQLite's file once checkpointed."""
    if engine == "postgres":
        import psycopg

        with psycopg.connect(db) as con:
            return int(con.execute("SELECT pg_database_size(current_database())").fetchone()[0])  # type: ignore[index]
    import sqlite3

    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(os.path.getsize(p) for p in (db, f"{db}-wal") if os.path.exists(p))


def _raw(engine: str, db: str, statement: str) -> Any:
    """One statement on a connection of the benchmark's own (not the store's)."""
    if engine == "postgres":
        import psycopg

        with psycopg.connect(db, autocommit=True) as con:
            cur = con.execute(statement)
            return cur.fetchone() if cur.description else None
    import sqlite3

    con = sqlite3.connect(db, isolation_level=None)
    try:
        return con.execute(statement).fetchone()
    finally:
        con.close()


def _index_bytes(engine: str, db: str) -> int | None:
    if engine == "postgres":
        return int(_raw(engine, db, f"SELECT pg_relation_size('{INDEX}')")[0])
    try:
        return int(_raw(engine, db, f"SELECT SUM(pgsize) FROM dbstat WHERE name = '{INDEX}'")[0])
    except Exception:  # an SQLite built without the dbstat table
        return None


def _ingest(engine: str, db: str, args: argparse.Namespace, count: int) -> tuple[int, float]:
    points, ingest = 0, 0.0
    with open_store(db) as store:
        # Only store() is timed: making the synthetic runs is the benchmark's, not the store's.
        for n, record in enumerate(runs(args.kernels, count, args.seed), 1):
            began = time.perf_counter()
            store.store(record)
            ingest += time.perf_counter() - began
            points += record.metric_count
            if n % max(1, count // 10) == 0:
                rate = points / ingest
                print(
                    f"  {engine}: {n}/{count} runs, {points:,} points, {rate:,.0f}/s",
                    file=sys.stderr,
                )
    return points, ingest


def _reads(db: str, args: argparse.Namespace, count: int) -> tuple[list[float], list[float]]:
    """QUERIES series of one kernel and metric each: (connect and read, the read alone) ms."""
    rng = random.Random(args.seed + 1)
    base = template()
    reads, queries = [], []
    for _ in range(QUERIES):
        k = rng.randrange(args.kernels)
        real = base[k % len(base)]
        kernel = f"{real.kernel}_{k:03d}"
        metric = rng.choice([m.metric for m in real.metrics])
        began = time.perf_counter()
        with open_store(db, create=False) as store:  # as `history show` does: connect, read
            opened = time.perf_counter()
            found = series(store, kernel, metric)
        done = time.perf_counter()
        reads.append((done - began) * 1000)
        queries.append((done - opened) * 1000)
        points = sum(len(s.points) for s in found)
        assert points == count, (kernel, metric, points, count)
    return reads, queries


# --versus-v3: schema version 3's read of a series, for a comparison on one database: the
# kernel's runs joined to `runs` and `results` (their time, commit, branch, fingerprint)
# through version 3's index of the kernels, and the points read apart.
V3_INDEX = """CREATE INDEX IF NOT EXISTS kernels_by_series_v3 ON kernels (kernel, run_id,
    result_index, kernel_index, name, finding_mechanism, finding_title)"""
V3_KERNELS = """SELECT k.run_id, k.result_index, k.kernel_index, r.recorded_at, r.commit_sha,
    r.branch, s.fingerprint, k.name, k.finding_mechanism, k.finding_title FROM kernels k
    JOIN results s ON s.run_id = k.run_id AND s.result_index = k.result_index
    JOIN runs r ON r.run_id = k.run_id WHERE k.kernel = ?"""
V3_POINTS = """SELECT run_id, result_index, kernel_index, metric, state, value_number,
    value_text, baseline_number, unit, bound FROM metrics WHERE kernel = ? AND metric = ?"""


def _v3_series_rows(store: Any, kernel: str, metric: str | None) -> list[tuple[Any, ...]]:
    """Version 3's SqlStore.series_rows (commit 300e6b7), one metric's series."""
    with store._snapshot() as cur:
        cur.execute(store.q(V3_KERNELS), (kernel,))
        where = {(r[0], r[1], r[2]): r for r in cur.fetchall()}
        cur.execute(store.q(V3_POINTS), (kernel, metric))
        points = cur.fetchall()
    rows = []
    for rid, ri, ki, name_of_metric, state, number, text, baseline, unit, bound in points:
        k = where.get((rid, ri, ki))
        if k is not None:
            rows.append(
                (rid, k[3], k[4], k[5], k[6], k[7], name_of_metric, state, number, text,
                 baseline, unit, bound, k[8], k[9])
            )  # fmt: skip
    rows.sort(key=lambda r: (r[1], r[0], r[6]))
    return rows


def versus_v3(engine: str, db: str, args: argparse.Namespace, count: int) -> dict[str, Any]:
    """Version 3's read and this one's alternated on the same database, 2 x QUERIES each
    (the same kernels and metrics, the order flipped every other pair): median ms,
    connecting included and the read alone."""
    from perfgate.history.sqlstore import SqlStore

    _raw(engine, db, V3_INDEX)
    _raw(engine, db, "VACUUM ANALYZE kernels" if engine == "postgres" else "ANALYZE")
    rng = random.Random(args.seed + 2)
    base = template()
    own = SqlStore.series_rows
    got: dict[str, tuple[list[float], list[float]]] = {"v3": ([], []), "v4": ([], [])}
    try:
        for i in range(2 * QUERIES):
            k = rng.randrange(args.kernels)
            real = base[k % len(base)]
            kernel = f"{real.kernel}_{k:03d}"
            metric = rng.choice([m.metric for m in real.metrics])
            for version in ("v3", "v4") if i % 2 else ("v4", "v3"):
                SqlStore.series_rows = own if version == "v4" else _v3_series_rows  # type: ignore[method-assign]
                began = time.perf_counter()
                with open_store(db, create=False) as store:
                    opened = time.perf_counter()
                    found = series(store, kernel, metric)
                done = time.perf_counter()
                got[version][0].append((done - began) * 1000)
                got[version][1].append((done - opened) * 1000)
                assert sum(len(s.points) for s in found) == count
    finally:
        SqlStore.series_rows = own  # type: ignore[method-assign]
    return {
        f"{version}_{what}_ms_median": round(statistics.median(values), 1)
        for version, pair in got.items()
        for what, values in zip(("read", "query"), pair, strict=True)
    }


def measure(engine: str, db: str, args: argparse.Namespace, count: int) -> Figures:
    open_store(db).close()
    empty = _size(engine, db)
    points, ingest = _ingest(engine, db, args, count)
    if engine == "postgres":
        # What autovacuum does on its own after an ingest: statistics, and the visibility
        # map that lets a series be read from its index alone.
        _raw(engine, db, "VACUUM ANALYZE")
    used = _size(engine, db) - empty
    index = _index_bytes(engine, db)
    reads, queries = _reads(db, args, count)
    figures = Figures(engine, count, points, ingest, used, index, reads, queries, count)
    if args.versus_v3:
        print(f"  {engine}, schema version 3 against 4: {versus_v3(engine, db, args, count)}")
    return figures


def _postgres(url: str | None) -> Iterator[str]:
    from tests.pg_server import Cluster, create_database, drop_database

    cluster = None
    if url is None:
        cluster = Cluster.start(durable=True)
        url = cluster.url
    db = create_database(url)
    try:
        yield db
    finally:
        drop_database(url, db)
        if cluster is not None:
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=10_000_000, help="metric points to ingest")
    parser.add_argument("--kernels", type=int, default=64, help="kernels per run")
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--pg-url", default=os.environ.get("PERFGATE_TEST_PG_URL"))
    parser.add_argument(
        "--keep", default=None, help="the SQLite file to write (default: a temporary one)"
    )
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument(
        "--versus-v3",
        action="store_true",
        help="then time schema version 3's series read against this one's, alternated",
    )
    args = parser.parse_args()
    per_run = sum(len(template()[k % 10].metrics) for k in range(args.kernels))
    count = max(1, round(args.points / per_run))
    load_before = os.getloadavg()[0]
    rows = []
    for engine in args.engines.split(","):
        if engine == "sqlite":
            with tempfile.TemporaryDirectory(prefix="perfgate-history-") as tmp:
                path = args.keep or str(Path(tmp) / "history.sqlite")
                rows.append(measure("sqlite", path, args, count).row())
        elif engine == "postgres":
            for db in _postgres(args.pg_url):
                rows.append(measure("postgres", db, args, count).row())
        else:
            parser.error(f"no such engine: {engine}")
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print(
            "| "
            + " | ".join(
                f"{row[c]:,}" if isinstance(row[c], (int, float)) else str(row[c]) for c in columns
            )
            + " |"
        )
    print(
        f"({args.kernels} kernels x {per_run // args.kernels}-ish metrics per run, {count:,} runs, "
        f"{len(FINGERPRINTS)} fingerprints; {QUERIES} series reads of {count:,} points each)"
    )
    print(
        f"(load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
