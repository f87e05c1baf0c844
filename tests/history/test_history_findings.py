"""A kernel's first finding in the history (docs/history.md, "What is stored"), and schema
version 1 files upgraded in place: a v1 file is built here with the SQL version 1 released
(written out below, as it was), then opened by this perfgate.
Captures: baselines/h100/zoo.yaml against tests/data/h100/zoo-bad-short-run1.csv (eight
kernels regressed, each for its own cause; two passed)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfgate.cli import main
from perfgate.history import sql
from perfgate.history.model import KernelRecord, RunContext, RunRecord
from perfgate.history.queries import series
from perfgate.history.records import from_json, from_report
from perfgate.history.store import HistoryError, SqliteStore
from perfgate.judge.states import KernelState
from perfgate.usecases.check import CheckRequest, run_check
from perfgate.verdicts.model import Report
from tests.conftest import ROOT

BASELINE = ROOT / "baselines" / "h100" / "zoo.yaml"
BAD = ROOT / "tests" / "data" / "h100" / "zoo-bad-short-run1.csv"
CONTEXT = RunContext("zoo-1", "2026-01-01T00:00:00.000000+00:00", "abc", "main", None, None)

# Schema version 1 as released: its inserts (the migration itself is sql.MIGRATIONS[0],
# which is never edited).
V1_INSERTS = {
    "runs": "INSERT INTO runs (run_id, digest, recorded_at, commit_sha, branch, pull_request, "
    "ci_job, status, exit_code, perfgate_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "results": "INSERT INTO results (run_id, result_index, baseline, fingerprint, gpu, cc, ncu, "
    "driver, clock_control, cache_control, scope, time_basis) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "kernels": "INSERT INTO kernels (run_id, result_index, kernel_index, kernel, name, state, "
    "family, nvtx, matched_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "metrics": "INSERT INTO metrics (run_id, result_index, kernel_index, metric_index, metric, "
    "state, value_number, value_text, baseline_number, baseline_text, unit, bound) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
}


@pytest.fixture(scope="module")
def report() -> Report:
    return run_check(CheckRequest((str(BASELINE),), (str(BAD),)))


@pytest.fixture(scope="module")
def record(report: Report) -> RunRecord:
    return from_report(report, CONTEXT)


def _kernels(record: RunRecord) -> dict[str, KernelRecord]:
    return {k.kernel: k for r in record.results for k in r.kernels}


def test_each_kernel_keeps_its_first_finding_as_the_check_gave_it(
    report: Report, record: RunRecord
) -> None:
    kept = _kernels(record)
    verdicts = {v.kernel: v for r in report.results for v in r.verdicts}
    assert kept.keys() == verdicts.keys() and len(kept) == 10
    for name, v in verdicts.items():
        finding = kept[name].finding
        if v.state is KernelState.PASS:
            assert finding is None, name
            continue
        assert finding is not None, name
        first = v.causes[0]
        assert (finding.mechanism, finding.title, finding.lever) == (
            first.mechanism,
            first.title,
            first.lever,
        )
    # The README's example: the registers build regressed for register pressure.
    registers = kept["zoo_registers"].finding
    assert registers is not None and registers.title == "Register pressure cut occupancy"
    assert "__launch_bounds__" in registers.lever
    # Two causes: the first one is kept, not the second.
    atomics = verdicts["zoo_atomics"]
    assert len(atomics.causes) >= 2
    assert kept["zoo_atomics"].finding.mechanism == atomics.causes[0].mechanism  # type: ignore[union-attr]
    assert atomics.causes[1].mechanism != atomics.causes[0].mechanism
    assert sum(k.finding is None for k in kept.values()) == 2


def _check_json(tmp_path: Path) -> dict[str, object]:
    result = CliRunner().invoke(
        main, ["check", "-b", str(BASELINE), "-c", str(BAD), "--format", "json"]
    )
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_json_import_reads_the_finding_from_the_check_output(
    tmp_path: Path, record: RunRecord
) -> None:
    doc = _check_json(tmp_path)
    assert from_json(doc, CONTEXT) == record
    # A report without causes (written before they were reported) imports without findings.
    for result in doc["results"]:  # type: ignore[attr-defined]
        for kernel in result["kernels"]:
            del kernel["causes"]
    bare = from_json(doc, CONTEXT)
    assert all(k.finding is None for k in _kernels(bare).values())
    assert _kernels(bare)["zoo_registers"].state == "regressed"


def test_a_malformed_cause_in_json_is_one_clear_message(tmp_path: Path) -> None:
    doc = _check_json(tmp_path)
    kernel = doc["results"][0]["kernels"][0]  # type: ignore[index]
    kernel["causes"] = [{"title": "no mechanism"}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    result = CliRunner().invoke(
        main, ["history", "import", "--db", str(tmp_path / "h.db"), str(bad)]
    )
    assert result.exit_code == 2
    assert f"{bad}: not a perfgate check result: results[0].kernels[0].causes[0].mechanism" in (
        result.stderr
    )


def test_findings_survive_the_store(tmp_path: Path, record: RunRecord) -> None:
    with SqliteStore(tmp_path / "h.db") as store:
        assert store.store(record)
        assert store.load("zoo-1") == record
        (registers,) = series(store, "zoo_registers", "duration")
        (init,) = series(store, "init_half", "duration")
    assert registers.points[0].finding == "occupancy-registers"
    assert registers.points[0].finding_title == "Register pressure cut occupancy"
    assert init.points[0].finding is None
    with sqlite3.connect(tmp_path / "h.db") as con:
        rows = dict(con.execute("SELECT kernel, finding_mechanism FROM kernels"))
    assert rows["zoo_registers"] == "occupancy-registers" and rows["init_half"] is None


def v1_statements(record: RunRecord) -> list[tuple[str, tuple[object, ...]]]:
    """What schema version 1 ran to create a history and keep `record` in it: (statement,
    parameters) in SQLite's placeholders (the PostgreSQL tests run them too)."""
    ctx = record.context
    done: list[tuple[str, tuple[object, ...]]] = [(sql.MIGRATIONS_TABLE, ())]
    done += [(statement, ()) for statement in sql.MIGRATIONS[0][1]]
    done.append((sql.RECORD_MIGRATION, (1, sql.MIGRATIONS[0][0], "2026-01-01")))
    done.append(
        (V1_INSERTS["runs"],
         (ctx.run_id, record.digest(), ctx.recorded_at, ctx.commit, ctx.branch,
          ctx.pull_request, ctx.ci_job, record.status, record.exit_code, record.perfgate_version))
    )  # fmt: skip
    for ri, result in enumerate(record.results):
        fp = result.fingerprint
        done.append(
            (V1_INSERTS["results"],
             (ctx.run_id, ri, result.baseline, fp.key(), fp.gpu, fp.cc, fp.ncu, fp.driver,
              fp.clock_control, fp.cache_control, fp.scope, fp.time_basis))
        )  # fmt: skip
        for ki, k in enumerate(result.kernels):
            done.append(
                (V1_INSERTS["kernels"],
                 (ctx.run_id, ri, ki, k.kernel, k.name, k.state, k.family, k.nvtx, k.matched_by))
            )  # fmt: skip
            for mi, m in enumerate(k.metrics):
                v, b = m.value, m.baseline
                done.append(
                    (V1_INSERTS["metrics"],
                     (ctx.run_id, ri, ki, mi, m.metric, m.state,
                      None if isinstance(v, str) else v, v if isinstance(v, str) else None,
                      None if isinstance(b, str) else b, b if isinstance(b, str) else None,
                      m.unit, m.bound))
                )  # fmt: skip
    return done


def _v1_file(path: Path, record: RunRecord) -> str:
    """A history file written by perfgate's schema version 1, holding `record`; its digest."""
    with sqlite3.connect(path) as con:
        for statement, params in v1_statements(record):
            con.execute(statement, params)
    return record.digest()


def without_findings(record: RunRecord) -> RunRecord:
    """What schema version 1 could keep of a run."""
    results = tuple(
        replace(r, kernels=tuple(replace(k, finding=None) for k in r.kernels))
        for r in record.results
    )
    return replace(record, results=results)


def test_a_version_1_file_is_upgraded_in_place(tmp_path: Path, record: RunRecord) -> None:
    db = tmp_path / "v1.db"
    old = without_findings(record)  # what version 1 could keep of this run
    digest = _v1_file(db, old)
    with SqliteStore(db) as store:
        assert store.schema_version == sql.SCHEMA_VERSION >= 2
        loaded = store.load("zoo-1")
        assert loaded == old
        # Its digest is still the one it was stored under: storing it again changes nothing,
        assert loaded is not None and loaded.digest() == digest
        # Its metrics were given their kernel's id: its series reads through the new index.
        (found,) = series(store, "zoo_registers", "registers_per_thread")
        assert [p.value for p in found.points] == [40.0]  # the README's 32 -> 40
        assert store.store(replace(old, context=replace(CONTEXT, recorded_at="2027"))) is False
        # and a run with findings is kept beside it.
        assert store.store(replace(record, context=replace(CONTEXT, run_id="zoo-2")))
        assert store.load("zoo-2") == replace(record, context=replace(CONTEXT, run_id="zoo-2"))
    with sqlite3.connect(db) as con:
        versions = [v for (v,) in con.execute("SELECT version FROM perfgate_migrations")]
        columns = [r[1] for r in con.execute("PRAGMA table_info(kernels)")]
    assert versions == list(range(1, sql.SCHEMA_VERSION + 1))
    assert {"finding_mechanism", "finding_title", "finding_lever"} <= set(columns)


def test_an_upgraded_history_reads_the_series_a_new_one_does(
    tmp_path: Path, record: RunRecord
) -> None:
    """Migration 4 copies each run's time, commit, branch and fingerprint onto its kernels:
    series read from an upgraded file are those of a history that stored the same runs new."""
    old = without_findings(record)
    fp = old.results[0].fingerprint
    runs = [
        replace(old, context=RunContext(f"r{i}", f"2026-01-0{i + 1}T00:00:00+00:00", f"c{i}",
                                        "main" if i % 2 else "pr-3", None, None),
                results=(replace(old.results[0],
                                 fingerprint=replace(fp, driver=f"57{i % 2}.0")),))
        for i in range(4)
    ]  # fmt: skip
    with sqlite3.connect(tmp_path / "v1.db") as con:
        for i, run in enumerate(runs):
            done = v1_statements(run)
            # The schema once: the first run's statements make it, the others only insert.
            for statement, params in done if i == 0 else done[len(sql.MIGRATIONS[0][1]) + 2 :]:
                con.execute(statement, params)
    with SqliteStore(tmp_path / "new.db") as new:
        for run in runs:
            new.store(run)
        expected = series(new, "zoo_registers") + series(new, "init_half", "duration")
    with SqliteStore(tmp_path / "v1.db") as upgraded:
        got = series(upgraded, "zoo_registers") + series(upgraded, "init_half", "duration")
    assert got == expected
    assert {s.fingerprint.driver for s in got} == {"570.0", "571.0"}
    assert [p.commit for p in got[0].points] == ["c0", "c2"]


def test_a_failed_upgrade_leaves_the_file_as_it_was(tmp_path: Path, record: RunRecord) -> None:
    db = tmp_path / "v1.db"
    _v1_file(db, without_findings(record))
    # A hand-made column in the way of migration 2's second statement: its first one
    # (finding_mechanism) runs, then the upgrade fails and must roll back whole.
    with sqlite3.connect(db) as con:
        con.execute("ALTER TABLE kernels ADD COLUMN finding_title TEXT")
        before = [r[1] for r in con.execute("PRAGMA table_info(kernels)")]
    with pytest.raises(HistoryError, match=r"cannot upgrade to schema version 2 .*finding_title"):
        SqliteStore(db)
    with sqlite3.connect(db) as con:
        assert [r[1] for r in con.execute("PRAGMA table_info(kernels)")] == before
        assert [v for (v,) in con.execute("SELECT version FROM perfgate_migrations")] == [1]
    result = CliRunner().invoke(main, ["history", "show", "--db", str(db), "zoo_registers"])
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"perfgate: error: {db}: cannot upgrade to schema version 2")


def _asdict_digest(record: RunRecord) -> str:
    """The digest as schema version 1 defined it (dataclasses.asdict), a kernel without a
    finding as version 1 had no such field, and a result without a machine start as version 4
    had none: the oracle of RunRecord.digest's faster walk."""
    doc = asdict(record)
    del doc["context"]["recorded_at"]
    for result in doc["results"]:
        if result["machine_start"] is None:
            del result["machine_start"]
        for kernel in result["kernels"]:
            if kernel["finding"] is None:
                del kernel["finding"]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_digest_is_the_one_version_1_defined(record: RunRecord) -> None:
    old = without_findings(record)
    assert record.digest() == _asdict_digest(record) != old.digest()
    assert old.digest() == _asdict_digest(old)
    later = replace(record, context=replace(CONTEXT, recorded_at="2030-01-01"))
    assert later.digest() == record.digest()  # the time is not part of it
    moved = replace(record, context=replace(CONTEXT, branch="other"))
    assert moved.digest() != record.digest()
    assert record.context.recorded_at == CONTEXT.recorded_at  # the walk altered nothing
    started = replace(record, results=(replace(record.results[0], machine_start="405352b3"),))
    assert started.digest() == _asdict_digest(started) != record.digest()
