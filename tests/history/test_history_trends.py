"""Trend pictures of a history (docs/history.md "Trend pictures"): the SVG chart of one series
(perfgate/history/svg.py) on series built by hand, whose every coordinate is computed here; the
pull-request report's trends of `perfgate check --history` and the page of `perfgate history
html` on a real history (tests/history_corpus.py); and what both refuse. The page as a browser
draws it: tests/history/test_history_browser.py."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import cast

import pytest

from perfgate.common.errors import UsageError
from perfgate.history.base import HistoryStore
from perfgate.history.model import RunFingerprint, RunRecord
from perfgate.history.queries import Point, Series
from perfgate.history.store import open_store
from perfgate.history.svg import ChartSize, bound_limits, tick_label, trend_chart
from perfgate.history.trends import baseline_trends, change_indexes, page_trends
from tests import history_corpus
from tests.history_corpus import REGRESSED_CHANGE, invoke

SVG = "{http://www.w3.org/2000/svg}"
FP = RunFingerprint(gpu="NVIDIA H100 80GB HBM3", cc="9.0")


def _series(values: list[float | None], states: list[str], **text: str) -> Series:
    points = tuple(
        Point(
            run_id=f"run-{i}",
            recorded_at=f"2026-01-{i + 1:02d}T10:00:00.000000+00:00",
            commit=text.get("commit", f"{i:02d}abcdef0123456789"),
            branch=text.get("branch", "main"),
            state=state,
            value=value,
            baseline=10.0,
            bound="+20%",
        )
        for i, (value, state) in enumerate(zip(values, states))
    )
    return Series(
        text.get("kernel", "gemm_kernel"), "gemm_kernel", "duration", text.get("unit", "ns"),
        FP, points,
    )  # fmt: skip


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _all(root: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if cls is None or e.get("class") == cls]


# ------------------------------------------------------------------------------ the chart


def test_a_bound_is_read_from_its_words() -> None:
    assert bound_limits(200.0, "+5%") == (200.0, 210.0)
    # The check counts a move beyond both allowances: the wider one is the bound.
    assert bound_limits(200.0, "+5% and +40 ns") == (200.0, 240.0)
    assert bound_limits(200.0, "+25% and +40 ns") == (200.0, 250.0)
    assert bound_limits(-50.0, "±10%") == (-55.0, -45.0)
    assert bound_limits(60.0, "-10 points") == (50.0, 60.0)
    assert bound_limits(7.0, "+0 (exact)") == (7.0, 7.0)
    assert bound_limits(7.0, "unchanged") is None
    assert bound_limits(None, "+5%") is None


def test_tick_labels_carry_a_prefix_and_the_decimals_their_step_needs() -> None:
    assert tick_label(52_500.0, 500.0, 60_000.0) == "52.5k"
    assert tick_label(52_000.0, 1000.0, 60_000.0) == "52k"
    assert tick_label(19_600_000.0, 200_000.0, 2e7) == "19.6M"
    assert tick_label(0.0805, 0.0005, 0.09) == "0.0805"
    assert tick_label(7.5, 2.5, 10.0) == "7.5"
    assert tick_label(1e-12, 2500.0, 12_000.0) == "0"


def test_a_chart_draws_each_run_the_baseline_band_failures_and_change_points() -> None:
    size = ChartSize(560, 220)
    series = _series(
        [10.0, 11.0, 10.0, 15.0, None, 16.0],
        ["pass", "pass", "pass", "regressed", "missing metric", "regressed"],
    )
    root = _parse(trend_chart(series, change_points=[3, 0, 9], size=size))
    # The plot spans x 64..546 (margins 64 and 14): six slots of 80.33 px, a run at each
    # slot's middle. Values 10..16 and the baseline 10 with 8% margins: 9.52..16.48 on
    # steps of 2 (8..18); y 48 (18) to 182 (8): 13.4 px a unit.
    slot = (560 - 64 - 14) / 6

    def x(i: int) -> float:
        return 64 + (i + 0.5) * slot

    def y(v: float) -> float:
        return 48 + (182 - 48) * (18 - v) / 10

    lines = _all(root, "polyline", "values")
    assert len(lines) == 2  # broken where run 5 has no value
    got = [[tuple(map(float, xy.split(","))) for xy in e.get("points", "").split()] for e in lines]
    want = [[(x(i), y(v)) for i, v in ((0, 10), (1, 11), (2, 10), (3, 15))], [(x(5), y(16))]]
    assert [[(round(a, 1), round(b, 1)) for a, b in line] for line in got] == [
        [(round(a, 1), round(b, 1)) for a, b in line] for line in want
    ]
    failed = _all(root, "circle", "failed")
    assert [float(c.get("cx", "")) for c in failed] == [round(x(3), 1), round(x(5), 1)]
    assert len(_all(root, "circle", "run")) == 3
    # The baseline as one line over every run; the band from 10 up to 12 (+20%).
    (base,) = _all(root, "line", "baseline")
    assert float(base.get("y1", "")) == round(y(10), 1)
    assert float(base.get("x1", "")) == round(64.0, 1)
    (band,) = _all(root, "rect", "bound")
    assert float(band.get("y", "")) == round(y(12), 1)
    assert float(band.get("height", "")) == pytest.approx(y(10) - y(12), abs=0.11)
    # A change point before run 4; 0 (the first run) and 9 (no such run) draw nothing.
    (change,) = _all(root, "line", "change")
    assert float(change.get("x1", "")) == round(x(3) - slot / 2, 1)
    assert "run 4" in "".join(change.itertext())
    # The tooltip of run 4: its value, state, short commit, branch and time.
    tip = "".join(failed[0].itertext())
    assert tip == "run 4: 15 ns (regressed)\ncommit 03abcdef0123 on main, 2026-01-04 10:00"


def test_the_last_run_is_ringed_as_this_run_only_when_asked() -> None:
    series = _series([10.0, 12.5], ["pass", "regressed"])
    assert not [t for t in _parse(trend_chart(series)).iter(SVG + "text") if t.text == "this run"]
    root = _parse(trend_chart(series, this_run=True))
    (label,) = [t for t in root.iter(SVG + "text") if t.get("class") == "this-run"]
    assert label.text == "this run"


def test_text_from_input_is_escaped_and_on_one_line() -> None:
    hostile = _series(
        [1.0, 2.0],
        ["pass", "regressed"],
        kernel="k<script>alert(1)</script>&\n::error::x",
        commit="<img src=x onerror=alert(1)>",
        branch="]]><b>&amp;",
        unit="<u>",
    )
    svg = trend_chart(hostile, mark="<!-- perfgate stall chart of report 0 -->")
    root = _parse(svg)  # well-formed XML whatever the names hold
    tags = {e.tag.removeprefix(SVG) for e in root.iter()}
    assert tags <= {"svg", "title", "rect", "text", "g", "circle", "line", "polyline"}
    assert "<script" not in svg and "<img" not in svg and "<b>" not in svg
    title = root.find(SVG + "title")
    assert title is not None and title.text is not None
    assert title.text.startswith("k<script>alert(1)</script>&\\x0a::error::x: duration")
    tips = ["".join(c.itertext()) for c in _all(root, "circle") if c.get("class")]
    # The commit cut to 12 characters, as every tooltip shows it.
    assert "commit <img src=x o on ]]><b>&amp;, 2026-01-02" in tips[1]
    with pytest.raises(ValueError):
        trend_chart(hostile, mark="--><script>x</script><!--\n")


def test_a_chart_is_the_same_bytes_for_the_same_series() -> None:
    one = _series([10.0, 11.0, 9.0], ["pass", "noted", "improved"])
    again = _series([10.0, 11.0, 9.0], ["pass", "noted", "improved"])
    assert trend_chart(one, change_points=[2]) == trend_chart(again, change_points=[2])
    moved = _series([10.0, 11.0, 9.5], ["pass", "noted", "improved"])
    assert trend_chart(one) != trend_chart(moved)


def test_change_points_of_a_series_with_a_gap_index_its_runs() -> None:
    series = _series([1.0, None, 1.0, 5.0, 5.0], ["pass"] * 5)

    def finder(metric: str, numbers: list[float]) -> list[int]:
        assert metric == "duration" and numbers == [1.0, 1.0, 5.0, 5.0]
        return [2]  # the third number: run 4

    assert change_indexes(series, finder) == [3]


# ----------------------------------------------------------- a real history: check and page


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return history_corpus.build(tmp_path_factory.mktemp("history"))


def _run_ids(db: Path) -> list[str]:
    with open_store(str(db), create=False) as store:
        return store.run_ids()


def _drawn(comparisons: list[dict[str, object]]) -> list[str]:
    def numeric(c: dict[str, object]) -> bool:
        return isinstance(c["current"], (int, float))

    failing = ("regressed", "error", "unjudged", "missing metric")
    found = [c for c in comparisons if c["state"] in failing and numeric(c)]
    found = found or [c for c in comparisons if c["state"] == "improved" and numeric(c)]
    return [str(c["metric"]) for c in found[:3]]


def test_check_with_a_history_draws_each_changed_kernels_failing_metrics(
    history: tuple[Path, Path], tmp_path: Path
) -> None:
    baseline, db = history
    before = _run_ids(db)
    out = tmp_path / "report"
    code, _, err = invoke(
        "check", "-b", str(baseline), "-c", str(REGRESSED_CHANGE), "--history", str(db),
        "--markdown", str(out / "summary.md"), "--json", str(out / "result.json"),
    )  # fmt: skip
    assert code == 1, err
    assert _run_ids(db) == before  # read, never written
    # What the JSON result says changed: each kernel shown (not passed, skipped, new or
    # unjudged), its failing numeric metrics, else its improved ones, at most three (the
    # history holds every one of them on this fingerprint).
    doc = json.loads((out / "result.json").read_text())
    expected = {
        (k["kernel"], metric)
        for r in doc["results"]
        for k in r["kernels"]
        if k["state"] not in ("pass", "skipped", "new", "unjudged")
        for metric in _drawn(k["comparisons"])
    }
    assert expected, "the change regresses kernels"
    markdown = (out / "summary.md").read_text()
    files = sorted(p.name for p in out.glob("summary.*.svg"))
    trends = [f for f in files if f.split(".")[-2] in {m for _, m in expected}]
    assert markdown.count("**Trend** of ") == len(expected) == len(trends)
    for name in trends:
        assert f"]({name})" in markdown
        root = ET.parse(out / name).getroot()
        (line,) = _all(root, "polyline", "values")
        # The 12 runs kept, then this run: ringed, and failed.
        assert len(line.get("points", "").split()) == len(history_corpus.RUNS) + 1
        dots = [c for c in _all(root, "circle") if c.get("class")]  # a run's, not the legend's
        assert dots[-1].get("class") == "failed"
        assert "this run" in {t.text for t in root.iter(SVG + "text")}
        # The run of the same change kept in the history failed too; the first eight passed.
        assert dots[8].get("class") == "failed"
        assert {d.get("class") for d in dots[:8]} == {"run"}
    # The next report to that path, without a history, leaves no trend of this one behind.
    code, _, err = invoke(
        "check", "-b", str(baseline), "-c", str(REGRESSED_CHANGE),
        "--markdown", str(out / "summary.md"),
    )  # fmt: skip
    assert code == 1, err
    assert not [p for p in out.glob("summary.*.svg") if p.name in trends]
    assert "**Trend**" not in (out / "summary.md").read_text()


def test_a_history_never_changes_the_verdict_nor_is_written_over(
    history: tuple[Path, Path], tmp_path: Path
) -> None:
    baseline, db = history
    check = ("check", "-b", str(baseline), "-c", str(REGRESSED_CHANGE))
    code, _, err = invoke(*check, "--history", str(db))
    assert code == 2 and "--history draws trends beside the markdown report" in err
    # A history that is not there (yet): the report without trends, the verdict as it is.
    code, _, err = invoke(*check, "--history", str(tmp_path / "none.sqlite"),
                          "--markdown", str(tmp_path / "s.md"))  # fmt: skip
    assert code == 1
    assert "perfgate: warning: no trends drawn: " in err and "none.sqlite" in err
    assert "no such history" in err and not (tmp_path / "none.sqlite").exists()
    assert "**Trend**" not in (tmp_path / "s.md").read_text()
    kept = db.read_bytes()
    code, _, err = invoke(*check, "--history", str(db), "--markdown", str(db))
    assert code == 2 and "is also an input" in err, err
    assert db.read_bytes() == kept


def test_the_page_holds_a_chart_per_moving_series_and_refuses_to_replace_its_input(
    history: tuple[Path, Path], tmp_path: Path
) -> None:
    baseline, db = history
    page = tmp_path / "page.html"
    code, out, err = invoke("history", "html", "--db", str(db), "-o", str(page))
    assert code == 0, err
    text = page.read_text()
    kernels, charts, runs = (int(w) for w in out.replace(",", "").split()[2:7:2])
    assert runs == len(history_corpus.RUNS) and charts == text.count('<svg xmlns="')
    assert kernels == text.count('<section class="kernel"') == 45  # the baseline's kernels
    assert "default-src 'none'" in text and "<script" not in text.replace("&lt;script", "")
    assert history_corpus.HOSTILE_BRANCH not in text
    # -b as the checks named it, or the same path written otherwise.
    code, _, err = invoke("history", "html", "--db", str(db), "-b", f"{baseline.parent}/./"
                          f"{baseline.name}", "-o", str(tmp_path / "again.html"))  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "again.html").read_text() == text  # one history, one page
    # The newest runs only: each chart's line holds the last five values.
    code, out, err = invoke("history", "html", "--db", str(db), "--last", "5", "-o",
                            str(tmp_path / "last.html"))  # fmt: skip
    assert code == 0 and out.endswith(" 5 runs\n"), err
    last = (tmp_path / "last.html").read_text()
    assert "(the newest of 12 kept)" in last
    lines = [len(m.split()) for m in re.findall(r'class="values" points="([^"]*)"', last)]
    assert lines and max(lines) == 5
    kept = db.read_bytes()
    code, _, err = invoke("history", "html", "--db", str(db), "-o", str(db))
    assert code == 2 and "is also an input" in err and db.read_bytes() == kept
    code, _, err = invoke("history", "html", "--db", str(db), "-b", "other.yaml", "-o",
                          str(tmp_path / "other.html"))  # fmt: skip
    assert code == 2 and "no run of the history checked baseline other.yaml" in err
    assert str(baseline) in err and not (tmp_path / "other.html").exists()


class _Counting:
    """A store that says which runs were loaded."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store
        self.loaded: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def load(self, run_id: str) -> RunRecord | None:
        self.loaded.append(run_id)
        return self.store.load(run_id)


def test_a_page_of_the_newest_runs_loads_only_those(
    history: tuple[Path, Path], tmp_path: Path
) -> None:
    baseline, db = history
    with open_store(str(db), create=False) as store:
        everything = [r for r in map(store.load, store.run_ids()) if r is not None]
        counting = _Counting(store)
        got = page_trends(cast(HistoryStore, counting), None, 5)
        assert counting.loaded == store.run_ids_of(str(baseline))[-5:]
        # The same page as drawn from every run loaded.
        assert got == baseline_trends(everything, None, 5)
        assert got.runs == 5 and got.kept == len(history_corpus.RUNS)
        counting.loaded.clear()
        assert page_trends(cast(HistoryStore, counting), str(baseline), 0) == baseline_trends(
            everything, str(baseline), 0
        )
        assert len(counting.loaded) == len(history_corpus.RUNS)
        with pytest.raises(UsageError, match="no run of the history checked baseline other"):
            page_trends(store, "other.yaml")
