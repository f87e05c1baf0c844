"""perfgate history (docs/history.md): run records from real checks, the SQLite store's
idempotence, immutability and schema guard, 8 writing processes at once, and the commands.
Captures: tests/data/field/families/fam-a and fam-b (the same workloads on two H100 starts)
and tests/data/field/h100."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfgate.cli import main
from perfgate.history import sql
from perfgate.history.model import RunContext, RunRecord
from perfgate.history.queries import series
from perfgate.history.records import from_json, from_report
from perfgate.history.render import sparkline
from perfgate.history.store import HistoryError, SqliteStore
from perfgate.reports.json_report import to_dict
from perfgate.usecases.check import CheckRequest, run_check
from tests.conftest import ROOT
from tests.history.writers import exit_codes

FAMILIES = ROOT / "tests" / "data" / "field" / "families"
FAM_A, FAM_B = FAMILIES / "fam-a", FAMILIES / "fam-b"
H100 = ROOT / "tests" / "data" / "field" / "h100"
CONTEXT = RunContext("run-1", "2026-01-01T00:00:00.000000+00:00", "abc123", "main", "7", "gpu")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def cub_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fam-a's cub workload recorded from its three runs of one machine start."""
    out = tmp_path_factory.mktemp("baseline") / "cub.yaml"
    caps = [a for i in (1, 2, 3) for a in ("-c", str(FAM_A / f"cub-run{i}.csv.gz"))]
    code, _, err = _invoke("baseline", "record", *caps, "-o", str(out))
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def fam_b_record(cub_baseline: Path) -> RunRecord:
    """fam-b's cub capture (another machine start) checked against fam-a's baseline."""
    report = run_check(CheckRequest((str(cub_baseline),), (str(FAM_B / "cub-run1.csv.gz"),)))
    return from_report(report, CONTEXT)


def _rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(db) as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}")) for t in sql.TABLES}


def test_a_record_holds_each_kernel_and_metric_as_judged(fam_b_record: RunRecord) -> None:
    (result,) = fam_b_record.results
    assert result.fingerprint.gpu == "NVIDIA H100 80GB HBM3"
    assert fam_b_record.kernel_count >= 3 and fam_b_record.metric_count > 50
    durations = [m for k in result.kernels for m in k.metrics if m.metric == "duration"]
    assert durations and all(isinstance(m.value, float) and m.value > 0 for m in durations)
    assert all(isinstance(m.baseline, float) and m.bound for m in durations)
    assert {m.state for m in durations} <= {"pass", "regressed", "improved", "noted"}


def test_import_and_direct_store_give_the_same_rows(
    cub_baseline: Path, tmp_path: Path, fam_b_record: RunRecord
) -> None:
    report = run_check(CheckRequest((str(cub_baseline),), (str(FAM_B / "cub-run1.csv.gz"),)))
    # Through a file, as CI writes it: NaN as null, counts as integers, kernels by severity.
    doc = json.loads(json.dumps(to_dict(report), allow_nan=False))
    imported = from_json(doc, CONTEXT)
    assert imported == fam_b_record
    with SqliteStore(tmp_path / "direct.db") as direct, SqliteStore(tmp_path / "json.db") as via:
        assert direct.store(fam_b_record) and via.store(imported)
        assert direct.load("run-1") == fam_b_record
    assert _rows(tmp_path / "direct.db") == _rows(tmp_path / "json.db")


def test_storing_one_run_twice_changes_nothing(fam_b_record: RunRecord, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with SqliteStore(db) as store:
        assert store.store(fam_b_record) is True
    before = _rows(db)
    later = replace(fam_b_record, context=replace(CONTEXT, recorded_at="2027-01-01T00:00:00"))
    with SqliteStore(db) as store:
        assert store.store(later) is False  # a retried step: the same run, later
    assert _rows(db) == before


def test_another_payload_under_a_kept_run_id_is_refused(
    fam_b_record: RunRecord, tmp_path: Path
) -> None:
    db = tmp_path / "h.db"
    other = replace(fam_b_record, context=replace(CONTEXT, commit="def456"))
    with SqliteStore(db) as store:
        store.store(fam_b_record)
        with pytest.raises(HistoryError, match="kept already with other results"):
            store.store(other)
        assert store.load("run-1") == fam_b_record


def _write_runs(db: str, record: RunRecord, worker: int, runs: int) -> None:
    with SqliteStore(db) as store:
        for i in range(runs):
            ctx = replace(record.context, run_id=f"w{worker}-r{i}")
            assert store.store(replace(record, context=ctx))
        store.store(record)  # every worker stores one shared run: kept once


def test_eight_processes_writing_at_once_lose_and_duplicate_nothing(
    fam_b_record: RunRecord, tmp_path: Path
) -> None:
    db = str(tmp_path / "h.db")
    runs = 4
    codes = exit_codes(_write_runs, [(db, fam_b_record, w, runs) for w in range(8)])
    assert codes == [0] * 8
    with SqliteStore(db) as store:
        ids = store.run_ids()
        assert sorted(ids) == sorted(
            [f"w{w}-r{i}" for w in range(8) for i in range(runs)] + ["run-1"]
        )
        assert all(
            store.load(i) == replace(fam_b_record, context=replace(CONTEXT, run_id=i))
            for i in ids[:3]
        )
    rows = _rows(tmp_path / "h.db")
    assert len(rows["metrics"]) == fam_b_record.metric_count * (8 * runs + 1)


def test_the_schema_is_versioned_and_plain(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "h.db") as store:
        assert store.schema_version == sql.SCHEMA_VERSION
    with sqlite3.connect(tmp_path / "h.db") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert list(con.execute("SELECT version, name FROM perfgate_migrations")) == [
            (v + 1, name) for v, (name, _) in enumerate(sql.MIGRATIONS)
        ]
    # What a PostgreSQL store could not run: SQLite's own words in the schema.
    schema = " ".join(s for _, statements in sql.MIGRATIONS for s in statements).upper()
    for word in ("AUTOINCREMENT", "WITHOUT ROWID", "PRAGMA", "INSERT OR", "STRICT", " REAL"):
        assert word not in schema
    assert "%s" in sql.placeholders(sql.INSERT_RUN, "%s") and "?" not in sql.placeholders(
        sql.INSERT_RUN, "%s"
    )


@pytest.mark.parametrize("kind", ["garbage", "foreign", "newer"])
def test_a_file_that_is_no_history_of_ours_is_one_clear_message(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "h.db"
    if kind == "garbage":
        db.write_text("not a database at all, but long enough to look like one\n" * 20)
        said = "not a perfgate history"
    elif kind == "foreign":
        with sqlite3.connect(db) as con:
            con.execute("CREATE TABLE points (x INTEGER)")
        said = "not a perfgate history: it holds other tables (points)"
    else:
        SqliteStore(db).close()
        with sqlite3.connect(db) as con:
            con.execute(sql.RECORD_MIGRATION, (99, "from the future", "2030-01-01"))
        said = f"schema version 99; this perfgate reads version {sql.SCHEMA_VERSION} and older"
    before = db.read_bytes()
    for args in (["show", "k"], ["prune", "--keep", "1"]):
        code, _, err = _invoke("history", *args, "--db", str(db))
        assert code == 2, err
        assert err.startswith(f"perfgate: error: {db}: ") and said in err, err
        assert "Traceback" not in err and len(err.splitlines()) == 1
    assert db.read_bytes() == before  # refused, not altered


def test_history_commands_end_to_end(cub_baseline: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    captures = [FAM_A / "cub-run1.csv.gz", FAM_A / "cub-run2.csv.gz", FAM_B / "cub-run1.csv.gz"]
    for i, cap in enumerate(captures):
        code, out, err = _invoke(
            "history", "add", "--db", db, "-b", str(cub_baseline), "-c", str(cap),
            "--run-id", f"r{i}", "--commit", f"c{i}", "--branch", "main",
        )  # fmt: skip
        assert code == 0, err
        assert out.startswith(f"stored run r{i}: ")
    # The same run again: nothing changes; another payload under its id: a usage error.
    args = ["history", "add", "--db", db, "-b", str(cub_baseline), "--run-id", "r0"]
    code, out, _ = _invoke(*args, "--commit", "c0", "--branch", "main", "-c", str(captures[0]))
    assert (code, out) == (0, "run r0 is kept already: nothing changed\n")
    code, _, err = _invoke(*args, "--commit", "c9", "-c", str(captures[0]))
    assert code == 2 and "kept already with other results" in err
    # A JSON result written by check, imported twice: kept once.
    result = tmp_path / "r.json"
    code, _, _ = _invoke(
        "check", "-b", str(cub_baseline), "-c", str(H100 / "h100-a" / "gemms-run1.csv.gz"),
        "--allow-other-gpu", "--json", str(result), "--fail-on", "never",
    )  # fmt: skip
    code, out, err = _invoke("history", "import", "--db", db, str(result), str(result))
    assert code == 0, err
    assert out.splitlines()[1].endswith("is kept already: nothing changed")
    with SqliteStore(db) as store:
        assert len(store.run_ids()) == 4
        kernel = store.load("r2").results[0].kernels[0].kernel  # type: ignore[union-attr]
        found = series(store, kernel, "duration")
    assert len(found) == 1 and [p.run_id for p in found[0].points][:3] == ["r0", "r1", "r2"]
    code, out, _ = _invoke("history", "show", "--db", db, kernel, "-m", "duration")
    assert code == 0 and "NVIDIA H100 80GB HBM3" in out
    assert sparkline(found[0].numbers) in out and "duration" in out
    code, out, _ = _invoke("history", "show", "--db", db, kernel, "--format", "json")
    doc = json.loads(out)
    assert doc["kernel"] == kernel
    assert [p["commit"] for p in doc["series"][0]["points"]][:3] == ["c0", "c1", "c2"]
    # Retention: by count, then by age.
    code, out, _ = _invoke("history", "prune", "--db", db, "--keep", "2")
    assert (code, out) == (0, "deleted 2 runs\n")
    with SqliteStore(db) as store:
        assert len(store.run_ids()) == 2
    code, out, _ = _invoke("history", "prune", "--db", db, "--older-than", "0")
    assert (code, out) == (0, "deleted 2 runs\n")
    assert all(not rows for rows in _rows(Path(db)).values())
    code, _, err = _invoke("history", "prune", "--db", db)
    assert code == 2 and "--older-than DAYS, --keep N" in err


def test_import_of_a_file_that_is_no_check_result(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"results": [{"baseline": 3}], "exit_code": 0}')
    code, _, err = _invoke("history", "import", "--db", str(tmp_path / "h.db"), str(bad))
    assert code == 2 and f"{bad}: not a perfgate check result" in err and "Traceback" not in err


def test_sparkline_scales_to_the_series() -> None:
    assert sparkline([]) == ""
    assert sparkline([5.0, 5.0, 5.0]) == "▁▁▁"
    assert sparkline([1.0, 2.0, 3.0, 8.0]) == "▁▂▃█"


def test_a_kernels_series_of_one_metric_is_read_through_its_index(
    fam_b_record: RunRecord, tmp_path: Path
) -> None:
    """Schema version 3's and 4's indexes serve `history show --metric` (docs/history.md,
    "Scale"): the metric's points are one range of metrics_by_series, the kernel's runs one
    range of kernels_by_series, with no join to `runs` or `results`; neither reads the
    metrics of other kernels or runs."""
    with SqliteStore(tmp_path / "h.db") as store:
        store.store(fam_b_record)
    with sqlite3.connect(tmp_path / "h.db") as con:
        plans = [
            [str(row[3]) for row in con.execute(f"EXPLAIN QUERY PLAN {q}", args)]
            for q, args in (
                (sql.SERIES_OF_METRIC, ("duration", "k")),
                (sql.SERIES_POINTS, ("k",)),
                (sql.SERIES_KERNELS, ("k",)),
            )
        ]
    # COVERING: the index holds every column read; the tables' pages are not visited. One
    # metric: the kernel's runs in order, each run's point one seek of the points' index.
    covering = "USING COVERING INDEX"
    assert plans[0] == [
        f"SEARCH k {covering} kernels_by_series (kernel=?)",
        f"SEARCH m {covering} metrics_by_series (kernel=? AND metric=? AND run_id=? AND "
        "result_index=? AND kernel_index=?)",
    ]
    assert plans[1] == [f"SEARCH metrics {covering} metrics_by_series (kernel=?)"]
    assert plans[2] == [f"SEARCH kernels {covering} kernels_by_series (kernel=?)"]
    assert "SCAN" not in repr(plans)


def test_one_metrics_series_is_the_same_read_alone_or_with_every_metric(
    fam_b_record: RunRecord, tmp_path: Path
) -> None:
    """A metric's series is read by a join (sql.SERIES_OF_METRIC), every metric's by two
    ranges paired in Python: the same points, named by the newest run."""
    kernel = fam_b_record.results[0].kernels[0]
    renamed = replace(kernel, name=kernel.name + " (renamed)")
    newest = replace(fam_b_record.results[0], kernels=(renamed,))
    with SqliteStore(tmp_path / "h.db") as store:
        for i in range(3):
            ctx = replace(CONTEXT, run_id=f"r{i}", recorded_at=f"2026-01-0{i + 1}T00:00:00")
            store.store(replace(fam_b_record, context=ctx))
        ctx = replace(CONTEXT, run_id="r3", recorded_at="2026-01-04T00:00:00")
        store.store(replace(fam_b_record, context=ctx, results=(newest,)))
        every = series(store, kernel.kernel)
        assert len(every) == len(kernel.metrics) and all(len(s.points) == 4 for s in every)
        for s in every:
            assert series(store, kernel.kernel, s.metric) == [s]
            assert s.name == renamed.name
            assert [p.run_id for p in s.points] == ["r0", "r1", "r2", "r3"]


def test_reading_a_current_history_waits_for_no_writer(
    fam_b_record: RunRecord, tmp_path: Path
) -> None:
    """`show` on a history of this schema version only reads: a writer holding the write
    lock (a CI job storing its run) does not hold it up."""
    db = tmp_path / "h.db"
    with SqliteStore(db) as store:
        store.store(fam_b_record)
    kernel = fam_b_record.results[0].kernels[0].kernel
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        began = time.monotonic()
        code, out, err = _invoke("history", "show", "--db", str(db), kernel, "-m", "duration")
        assert code == 0, err
        assert kernel in out and time.monotonic() - began < 10
    finally:
        writer.execute("ROLLBACK")
        writer.close()
