"""Stall charts (issue 25): read at a glance in GitHub's light and dark themes, and a re-run to
the same --markdown path leaves no chart of an earlier run behind."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from perfgate.baseline.load import load_baseline
from perfgate.ingest import read_capture
from perfgate.reports import markdown
from perfgate.reports.markdown import _mermaid
from perfgate.reports.svg import stall_chart
from perfgate.usecases.outputs import ReportOutputs, write_reports
from perfgate.verdicts.check import check
from perfgate.verdicts.model import Report
from tests.conftest import ROOT, data

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
SVG = "{http://www.w3.org/2000/svg}"
LIGHT, DARK = "#ffffff", "#0d1117"  # GitHub's page backgrounds
BEFORE = {"long_scoreboard": 12.5, "wait": 40.0, "math_pipe_throttle": 30.0}
AFTER = {"long_scoreboard": 61.0, "wait": 20.0, "math_pipe_throttle": 9.0}


def _luminance(colour: str) -> float:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def _contrast(a: str, b: str) -> float:
    lo, hi = sorted((_luminance(a), _luminance(b)))
    return (hi + 0.05) / (lo + 0.05)


def _report(capture: str) -> Report:
    return Report((check(load_baseline(ZOO), read_capture(data(capture))),))


@pytest.fixture(scope="module")
def bad() -> Report:
    return _report("zoo-bad-short-run1.csv")


# ------------------------------------------------------------------------------- mermaid


def test_mermaid_chart_is_grouped_bars_with_no_line_across_stall_reasons() -> None:
    chart = _mermaid("k", BEFORE, AFTER)
    assert not re.search(r"^\s*line\b", chart, re.M)  # a line joins unrelated categories
    series = re.findall(r'^\s*bar "(\w+)" \[([^\]]*)\]', chart, re.M)
    assert [name for name, _ in series] == ["baseline", "current"]
    # One row per reason and side: the baseline's row holds only the baseline's value.
    labels = re.search(r"x-axis \[([^\]]*)\]", chart)
    assert labels is not None
    rows = re.findall(r'"([^"]*)"', labels.group(1))
    assert rows[:2] == ["long_scoreboard baseline 12.5", "long_scoreboard current 61.0"]
    base = [float(v) for v in series[0][1].split(",")]
    now = [float(v) for v in series[1][1].split(",")]
    assert base[:2] == [12.5, 0.0] and now[:2] == [0.0, 61.0]
    assert len(rows) == len(base) == len(now) == 6


def test_mermaid_chart_colours_read_on_light_and_dark_pages() -> None:
    chart = _mermaid("k", BEFORE, AFTER)
    palette = re.search(r'"plotColorPalette":\s*"([^"]*)"', chart)
    assert palette is not None
    colours = [c.strip() for c in palette.group(1).split(",")]
    assert len(colours) == 2 and colours[0] != colours[1]
    for colour in colours:
        assert _contrast(colour, LIGHT) >= 3 and _contrast(colour, DARK) >= 3, colour


def test_stall_section_has_a_legend_naming_baseline_and_current(bad: Report) -> None:
    out = markdown.render(bad)
    block = out[out.index("**Stalls**") :]
    block = block[: block.index("```\n", block.index("```mermaid")) + 4]
    assert "🟦 baseline" in block and "🟧 current" in block
    assert block.index("🟦 baseline") < block.index("```mermaid")
    assert '"showLegend": true' in block  # mermaid's own legend, where GitHub's version has it


# ----------------------------------------------------------------------------------- SVG


def _bars(svg: ET.Element) -> list[ET.Element]:
    return [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "bar"]


def test_svg_bars_are_two_colours_that_stand_out_from_the_chart() -> None:
    svg = ET.fromstring(stall_chart("k: stall shares", BEFORE, AFTER))
    background = next(svg.iter(f"{SVG}rect")).get("fill")
    assert background is not None
    fills = {r.get("fill") for r in _bars(svg)}
    assert len(fills) == 2
    for fill in fills:
        assert fill is not None and _contrast(fill, background) >= 3, fill  # not pale grey
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    assert "baseline" in texts and "current" in texts  # the legend
    assert "61.0%" in texts and "12.5%" in texts  # values labelled


# ---------------------------------------------------------------------- stale charts


def test_a_rerun_to_the_same_markdown_removes_the_earlier_runs_charts(
    tmp_path: Path, bad: Report
) -> None:
    target = tmp_path / "report.md"
    write_reports(bad, ReportOutputs(markdown=str(target)))
    first = sorted(p.name for p in tmp_path.glob("report.*.svg"))
    assert len(first) >= 3
    # Files perfgate did not write, some named like its charts, all left alone.
    foreign = {
        "report.1.mine.svg": "<svg/>",  # the chart pattern, not perfgate's content
        "report.svg": "<svg/>",
        "other.1.k.svg": (tmp_path / first[0]).read_text(),  # another report's chart
        "report.notes.txt": "notes",
    }
    for name, text in foreign.items():
        (tmp_path / name).write_text(text)
    other = tmp_path / "report.2.md"  # another report, whose charts match report.md's pattern
    write_reports(bad, ReportOutputs(markdown=str(other)))
    others = sorted(p.name for p in tmp_path.glob("report.2.[0-9]*.svg"))
    assert others and not set(others) & set(first)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.svg").write_text((tmp_path / first[0]).read_text())
    (tmp_path / "report.9.link.svg").symlink_to(outside / "kept.svg")

    write_reports(_report("zoo-good-short-run1.csv"), ReportOutputs(markdown=str(target)))
    assert "![stall shares" not in target.read_text()
    left = {p.name for p in tmp_path.iterdir() if p.is_file() or p.is_symlink()}
    assert not (set(first) & left), left  # the earlier run's charts are gone
    assert set(others) <= left  # report.2.md's charts are not report.md's
    for name, text in foreign.items():
        assert (tmp_path / name).read_text() == text
    assert (outside / "kept.svg").exists() and (tmp_path / "report.9.link.svg").is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_rerun_keeps_the_charts_it_writes_again(tmp_path: Path, bad: Report) -> None:
    target = tmp_path / "report.md"
    write_reports(bad, ReportOutputs(markdown=str(target)))
    first = sorted(p.name for p in tmp_path.glob("report.*.svg"))
    write_reports(bad, ReportOutputs(markdown=str(target)))
    assert sorted(p.name for p in tmp_path.glob("report.*.svg")) == first
    for name in re.findall(r"\]\(([^)]+\.svg)\)", target.read_text()):
        assert (tmp_path / name).is_file()


def test_mermaid_rows_stay_apart_when_reasons_filter_to_one_name() -> None:
    """Mermaid draws categories of one name in one row: reasons that differ only in characters
    the chart leaves out still get a row each."""
    chart = _mermaid("k", {"a<b": 10.0, "ab": 10.0, "a>b": 10.0}, {"a<b": 5.0, "ab": 5.0})
    labels = re.search(r"x-axis \[([^\]]*)\]", chart)
    assert labels is not None
    rows = re.findall(r'"([^"]*)"', labels.group(1))
    assert len(rows) == 6 and len(set(rows)) == 6, rows


def test_a_check_that_fails_on_its_input_leaves_no_chart_of_the_earlier_run(
    tmp_path: Path,
) -> None:
    """The CLI: a re-run whose capture is unusable writes a markdown that says so, and the
    earlier run's charts, which would read as this run's, are gone."""
    import subprocess
    import sys

    target = tmp_path / "report.md"

    def run(capture: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "perfgate", "check", "-b", str(ZOO), "-c", str(capture),
             "--markdown", str(target)],
            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
        )  # fmt: skip

    assert run(data("zoo-bad-short-run1.csv")).returncode == 1
    assert len(list(tmp_path.glob("report.*.svg"))) >= 3
    broken = tmp_path / "broken.csv"
    broken.write_text("not a capture\n")
    proc = run(broken)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("report.*.svg"))
    assert "broken.csv" in target.read_text()
