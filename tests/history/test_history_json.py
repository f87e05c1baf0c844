"""`--format json` on every history subcommand (docs/history.md, "JSON output"): each document
parses, and says what the history itself holds afterwards (read back through the store, not
from the document). On an SQLite file and on a PostgreSQL database (tests/pg_server.py).
Captures: baselines/h100/zoo.yaml against zoo-good-short-run2 (passes) and zoo-bad-short-run1
(eight kernels regressed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from perfgate.cli import main
from perfgate.history.store import open_store
from tests.conftest import ROOT
from tests.pg_server import pg_server, pg_url  # noqa: F401 (fixtures)

BASELINE = ROOT / "baselines" / "h100" / "zoo.yaml"
H100 = ROOT / "tests" / "data" / "h100"
GOOD, BAD = H100 / "zoo-good-short-run2.csv", H100 / "zoo-bad-short-run1.csv"


def _json(*args: str) -> Any:
    result = CliRunner().invoke(main, ["history", *args, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _check(capture: Path, out: Path) -> dict[str, Any]:
    """`perfgate check --json` of a capture: the verdict the history must report."""
    CliRunner().invoke(main, ["check", "-b", str(BASELINE), "-c", str(capture), "--json", str(out)])
    doc = json.loads(out.read_text())
    assert isinstance(doc, dict)
    return doc


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "h.db")
    url = request.getfixturevalue("pg_url")
    assert isinstance(url, str)
    return url


def test_add_and_import_say_each_run_as_kept(db: str, tmp_path: Path) -> None:
    checked = {c: _check(c, tmp_path / f"{c.stem}.json") for c in (GOOD, BAD)}
    doc = _json("add", "--db", db, "-b", str(BASELINE), "-c", str(BAD), "--run-id", "bad")
    (run,) = doc["runs"]
    with open_store(db, create=False) as store:
        kept = store.load("bad")
    assert kept is not None
    assert run == {
        "run_id": "bad",
        "stored": True,
        "kernels": kept.kernel_count,
        "metrics": kept.metric_count,
        "status": checked[BAD]["status"],
    }
    assert run["status"] != checked[GOOD]["status"]  # the document tells the two apart
    again = _json("add", "--db", db, "-b", str(BASELINE), "-c", str(BAD), "--run-id", "bad")
    assert again["runs"][0]["stored"] is False
    files = [str(tmp_path / "zoo-good-short-run2.json"), str(tmp_path / "zoo-bad-short-run1.json")]
    doc = _json("import", "--db", db, *files, files[0])
    assert [r["stored"] for r in doc["runs"]] == [True, True, False]
    good, bad = checked[GOOD]["status"], checked[BAD]["status"]
    assert [r["status"] for r in doc["runs"]] == [good, bad, good]
    with open_store(db, create=False) as store:
        ids = set(store.run_ids())
    assert ids == {"bad", doc["runs"][0]["run_id"], doc["runs"][1]["run_id"]}
    assert doc["runs"][2]["run_id"] == doc["runs"][0]["run_id"]


def test_show_gives_the_points_and_prune_the_runs_deleted(db: str) -> None:
    for i, capture in enumerate((GOOD, BAD, GOOD)):
        _json(
            "add", "--db", db, "-b", str(BASELINE), "-c", str(capture), "--run-id", f"r{i}",
            "--commit", f"c{i}",
        )  # fmt: skip
    doc = _json("show", "--db", db, "zoo_registers", "-m", "registers_per_thread")
    (series,) = doc["series"]
    assert doc["kernel"] == "zoo_registers" and series["metric"] == "registers_per_thread"
    assert [p["run_id"] for p in series["points"]] == ["r0", "r1", "r2"]
    with open_store(db, create=False) as store:
        expected = []
        for run_id in ("r0", "r1", "r2"):
            record = store.load(run_id)
            assert record is not None
            (kernel,) = [k for k in record.results[0].kernels if k.kernel == "zoo_registers"]
            (metric,) = [m for m in kernel.metrics if m.metric == "registers_per_thread"]
            expected.append(
                (metric.value, metric.state, kernel.finding and kernel.finding.mechanism)
            )
    assert [(p["value"], p["state"], p["finding"]) for p in series["points"]] == expected
    assert expected[1][2] is not None and expected[0][2] is None
    before = _ids(db)
    doc = _json("prune", "--db", db, "--keep", "1")
    after = _ids(db)
    assert doc == {"deleted": len(before - after), "run_ids": sorted(before - after)}
    assert len(after) == 1 and doc["deleted"] == 2
    assert _json("prune", "--db", db, "--keep", "1") == {"deleted": 0, "run_ids": []}


def _ids(db: str) -> set[str]:
    with open_store(db, create=False) as store:
        return set(store.run_ids())


def test_an_error_with_json_asked_is_one_line_on_stderr_and_nothing_on_stdout(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        main, ["history", "show", "--db", str(tmp_path / "none.db"), "k", "--format", "json"]
    )
    assert result.exit_code == 2 and result.stdout == ""
    assert (
        result.stderr
        == f"perfgate: error: {tmp_path / 'none.db'}: no such history (perfgate history add creates one)\n"
    )


def test_html_says_the_page_it_wrote(db: str, tmp_path: Path) -> None:
    for i, capture in enumerate((GOOD, BAD, GOOD)):
        _json("add", "--db", db, "-b", str(BASELINE), "-c", str(capture), "--run-id", f"r{i}")
    page = tmp_path / "trends.html"
    doc = _json("html", "--db", db, "-o", str(page))
    assert set(doc) == {"path", "runs", "kernels", "charts"} and doc["path"] == str(page)
    with open_store(db, create=False) as store:
        records = [store.load(i) for i in store.run_ids()]
    kernels = {k.kernel for r in records if r for res in r.results for k in res.kernels}
    assert doc["runs"] == len(records) == 3
    assert doc["kernels"] == len(kernels)
    assert doc["charts"] == page.read_text().count("<svg") > 0
