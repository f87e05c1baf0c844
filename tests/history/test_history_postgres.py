"""The PostgreSQL history (docs/history.md, "Storage") against a real server (tests/pg_server.py:
CI's, or a cluster started from this machine's binaries), each test in a database of its own:
the same rows as the SQLite store, idempotence and immutability, 8 writing processes, schema
version 1 upgraded in place, the refusals, and the commands with --db URL.
Captures: baselines/h100/zoo.yaml against tests/data/h100/zoo-bad-short-run1.csv."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from perfgate.cli import main
from perfgate.history import sql
from perfgate.history.model import RunContext, RunRecord
from perfgate.history.postgres import PostgresStore, redacted
from perfgate.history.queries import series
from perfgate.history.records import from_report
from perfgate.history.store import HistoryError, SqliteStore, open_store
from perfgate.usecases.check import CheckRequest, run_check
from tests.conftest import ROOT
from tests.history.test_history_findings import v1_statements, without_findings
from tests.history.writers import exit_codes
from tests.pg_server import pg_server, pg_url  # noqa: F401 (fixtures)

BASELINE = ROOT / "baselines" / "h100" / "zoo.yaml"
BAD = ROOT / "tests" / "data" / "h100" / "zoo-bad-short-run1.csv"
GOOD = ROOT / "tests" / "data" / "h100" / "zoo-good-short-run2.csv"
CONTEXT = RunContext("zoo-1", "2026-01-01T00:00:00.000000+00:00", "abc", "main", "9", "gpu")


@pytest.fixture(scope="module")
def record() -> RunRecord:
    return from_report(run_check(CheckRequest((str(BASELINE),), (str(BAD),))), CONTEXT)


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _pg_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in sql.TABLES}


def _sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}")) for t in sql.TABLES}


def _tables(url: str) -> list[str]:
    with psycopg.connect(url) as con:
        rows = con.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return sorted(r[0] for r in rows)


def test_a_run_is_the_same_rows_in_both_engines(
    pg_url: str,  # noqa: F811
    record: RunRecord,
    tmp_path: Path,
) -> None:
    with open_store(pg_url) as pg, SqliteStore(tmp_path / "h.db") as lite:
        assert isinstance(pg, PostgresStore)
        assert pg.store(record) and lite.store(record)
        assert pg.load("zoo-1") == record == lite.load("zoo-1")
        assert pg.run_ids() == ["zoo-1"]
        assert series(pg, "zoo_registers") == series(lite, "zoo_registers")
        (found,) = series(pg, "zoo_registers", "duration")
    assert found.points[0].finding == "occupancy-registers"
    assert _pg_rows(pg_url) == _sqlite_rows(tmp_path / "h.db")
    assert len(_pg_rows(pg_url)["metrics"]) == record.metric_count


def test_storing_one_run_twice_changes_nothing_and_another_payload_is_refused(
    pg_url: str,  # noqa: F811
    record: RunRecord,
) -> None:
    with open_store(pg_url) as store:
        assert store.store(record) is True
    before = _pg_rows(pg_url)
    later = replace(record, context=replace(CONTEXT, recorded_at="2027-01-01T00:00:00"))
    other = replace(record, context=replace(CONTEXT, commit="def456"))
    with open_store(pg_url) as store:
        assert store.store(later) is False
        with pytest.raises(HistoryError, match="kept already with other results"):
            store.store(other)
        assert store.load("zoo-1") == record
    assert _pg_rows(pg_url) == before


def _write_runs(url: str, record: RunRecord, worker: int, runs: int) -> None:
    with open_store(url) as store:
        for i in range(runs):
            ctx = replace(record.context, run_id=f"w{worker}-r{i}")
            assert store.store(replace(record, context=ctx))
        store.store(record)  # every worker stores one shared run: kept once


def test_eight_processes_writing_at_once_lose_and_duplicate_nothing(
    pg_url: str,  # noqa: F811
    record: RunRecord,
) -> None:
    runs = 3
    # A new database: the 8 also race to create its schema (the advisory lock's job).
    codes = exit_codes(_write_runs, [(pg_url, record, w, runs) for w in range(8)])
    assert codes == [0] * 8
    with open_store(pg_url) as store:
        ids = store.run_ids()
        assert sorted(ids) == sorted(
            [f"w{w}-r{i}" for w in range(8) for i in range(runs)] + ["zoo-1"]
        )
        assert store.load("w3-r1") == replace(record, context=replace(CONTEXT, run_id="w3-r1"))
    rows = _pg_rows(pg_url)
    assert len(rows["metrics"]) == record.metric_count * (8 * runs + 1)
    with psycopg.connect(pg_url) as con:
        versions = con.execute("SELECT version FROM perfgate_migrations ORDER BY version")
        assert [v for (v,) in versions] == list(range(1, sql.SCHEMA_VERSION + 1))


def test_a_version_1_database_is_upgraded_in_place(
    pg_url: str,  # noqa: F811
    record: RunRecord,
) -> None:
    old = without_findings(record)
    with psycopg.connect(pg_url) as con:
        for statement, params in v1_statements(old):
            con.execute(sql.placeholders(statement, "%s"), params)
    with open_store(pg_url) as store:
        assert store.schema_version == sql.SCHEMA_VERSION
        loaded = store.load("zoo-1")
        assert loaded == old and loaded.digest() == old.digest()
        (found,) = series(store, "zoo_registers", "registers_per_thread")
        assert [p.value for p in found.points] == [40.0]  # its metrics given the kernel's id
        # and its kernels their run's time, commit, branch and fingerprint (migration 4).
        (point,) = found.points
        assert (point.recorded_at, point.commit, point.branch) == (
            CONTEXT.recorded_at, CONTEXT.commit, CONTEXT.branch)  # fmt: skip
        assert found.fingerprint == old.results[0].fingerprint
        assert found.name == "zoo_registers(const float *, float *, int)"
        assert store.store(replace(old, context=replace(CONTEXT, recorded_at="2027"))) is False
        assert store.store(replace(record, context=replace(CONTEXT, run_id="zoo-2")))
        assert store.load("zoo-2") == replace(record, context=replace(CONTEXT, run_id="zoo-2"))


def test_a_failed_upgrade_leaves_the_database_as_it_was(
    pg_url: str,  # noqa: F811
    record: RunRecord,
) -> None:
    with psycopg.connect(pg_url) as con:
        for statement, params in v1_statements(without_findings(record)):
            con.execute(sql.placeholders(statement, "%s"), params)
        con.execute("ALTER TABLE kernels ADD COLUMN finding_title TEXT")
    code, _, err = _invoke("history", "show", "--db", pg_url, "zoo_registers")
    assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith(f"perfgate: error: {pg_url}: cannot upgrade to schema version 2")
    with psycopg.connect(pg_url) as con:
        columns = con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'kernels'"
        ).fetchall()
        assert "finding_mechanism" not in {c for (c,) in columns}
        versions = con.execute("SELECT version FROM perfgate_migrations").fetchall()
        assert versions == [(1,)]


@pytest.mark.parametrize("kind", ["foreign", "newer", "empty"])
def test_a_database_that_is_no_history_of_ours_is_one_clear_message(
    pg_url: str,  # noqa: F811
    kind: str,
) -> None:
    if kind == "foreign":
        with psycopg.connect(pg_url) as con:
            con.execute("CREATE TABLE points (x INTEGER)")
        said = "not a perfgate history: it holds other tables (points)"
    elif kind == "newer":
        open_store(pg_url).close()
        with psycopg.connect(pg_url) as con:
            con.execute(
                sql.placeholders(sql.RECORD_MIGRATION, "%s"), (99, "from the future", "2030")
            )
        said = f"schema version 99; this perfgate reads version {sql.SCHEMA_VERSION} and older"
    else:
        said = "holds no perfgate history (perfgate history add makes one)"
    before = _tables(pg_url)
    for args in (["show", "k"], ["prune", "--keep", "1"]):
        code, _, err = _invoke("history", *args, "--db", pg_url)
        assert code == 2, err
        assert err.startswith(f"perfgate: error: {pg_url}: ") and said in err, err
        assert "Traceback" not in err and len(err.splitlines()) == 1
    assert _tables(pg_url) == before  # refused, not altered


def test_a_server_that_cannot_be_reached_is_one_line_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://someone:s3cret@/perfgate?host={tmp_path}&connect_timeout=5"
    code, _, err = _invoke("history", "show", "--db", url, "k")
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"perfgate: error: postgresql://someone:***@/perfgate?host={tmp_path}")
    assert "cannot connect" in err and "s3cret" not in err
    assert redacted("postgresql://u@h/db?password=x&sslmode=require") == (
        "postgresql://u@h/db?password=***&sslmode=require"
    )


def test_without_psycopg_a_url_names_the_extra(tmp_path: Path) -> None:
    # psycopg made unimportable, as on an install without the postgres extra.
    code = (
        "import sys; sys.modules['psycopg'] = None; from perfgate.cli import run; "
        "sys.argv = ['perfgate'] + sys.argv[1:]; run()"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, "history", "show", "--db", "postgresql://u@h/db", "k"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "perfgate: error: postgresql://u@h/db: a PostgreSQL history needs the postgres extra: "
        "python3 -m pip install 'perfgate[postgres]'\n"
    )


def test_history_commands_end_to_end_on_a_server(
    pg_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    for i, cap in enumerate((GOOD, BAD)):
        code, out, err = _invoke(
            "history", "add", "--db", pg_url, "-b", str(BASELINE), "-c", str(cap),
            "--run-id", f"r{i}", "--commit", f"c{i}", "--branch", "main",
        )  # fmt: skip
        assert code == 0, err
        assert out.startswith(f"stored run r{i}: ")
    code, out, _ = _invoke(
        "history", "add", "--db", pg_url, "-b", str(BASELINE), "-c", str(BAD),
        "--run-id", "r1", "--commit", "c1", "--branch", "main",
    )  # fmt: skip
    assert (code, out) == (0, "run r1 is kept already: nothing changed\n")
    result = tmp_path / "r.json"
    _invoke("check", "-b", str(BASELINE), "-c", str(BAD), "--json", str(result))
    code, out, err = _invoke("history", "import", "--db", pg_url, str(result), str(result))
    assert code == 0, err
    assert out.splitlines()[1].endswith("is kept already: nothing changed")
    code, out, _ = _invoke(
        "history", "show", "--db", pg_url, "zoo_registers", "-m", "registers_per_thread",
        "--format", "json",
    )  # fmt: skip
    doc = json.loads(out)
    points = doc["series"][0]["points"]
    assert [p["commit"] for p in points][:2] == ["c0", "c1"]
    assert [p["value"] for p in points][:2] == [32.0, 40.0]  # the README's 32 -> 40
    assert [p["finding"] for p in points][:2] == [None, "occupancy-registers"]
    code, out, _ = _invoke("history", "prune", "--db", pg_url, "--keep", "1")
    assert (code, out) == (0, "deleted 2 runs\n")
    assert len(_pg_rows(pg_url)["runs"]) == 1


def test_a_schema_named_in_the_url_holds_the_history(
    pg_url: str,  # noqa: F811
    record: RunRecord,
) -> None:
    """docs/history.md: `?options=-csearch_path%3Dname` keeps the tables in that schema."""
    with psycopg.connect(pg_url) as con:
        con.execute("CREATE SCHEMA team_a")
    joiner = "&" if "?" in pg_url else "?"
    with open_store(f"{pg_url}{joiner}options=-csearch_path%3Dteam_a") as store:
        assert store.store(record)
    with psycopg.connect(pg_url) as con:
        rows = con.execute("SELECT schemaname, tablename FROM pg_tables WHERE tablename = 'runs'")
        assert rows.fetchall() == [("team_a", "runs")]
    assert _tables(pg_url) == []  # nothing in public
