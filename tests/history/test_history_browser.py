"""The history's pictures in a real browser: headless Chromium loads the page `perfgate history
html` writes from a real history (tests/history_corpus.py: the field corpus' decoder, twelve
checks kept with `perfgate history add`) and a pull-request trend of `perfgate check
--history`; the tests read what it rendered.

- The DOM Chromium built (`--dump-dom`): a chart per series, and in each the points and the
  failed runs the history's own rows say (read here with sqlite3, not through perfgate), no
  script element, the hostile branch name as text.
- Screenshots (`--screenshot`): a PNG of the window's size whose pixels hold the values' blue
  and, on the trend of a regressed kernel, the failed runs' red (decoded here with zlib).

Chromium: /usr/bin/chromium or on PATH; CI installs Debian's `chromium` (.ci/browser.sh).
Without it the tests are skipped, except under CI=true, where they fail."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from perfgate.history.svg import FAILED_COLOUR, VALUE_COLOUR
from tests import history_corpus
from tests.history_corpus import REGRESSED_CHANGE, invoke

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
FAILED_STATES = ("regressed", "error", "unjudged")


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/browser.sh installs Debian's package)")
        pytest.skip("chromium is not installed (CI installs it: .ci/browser.sh)")
    return found


def _browse(page: Path, profile: Path, *args: str) -> str:
    """Chromium's stdout for `page` with a fresh profile: no network, nothing of another run."""
    profile.mkdir(parents=True)
    proc = subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Dom(HTMLParser):
    """Per kernel section and chart (its metric): the values' points and the failed dots."""

    def __init__(self) -> None:
        super().__init__()
        self.kernel = ""
        self.in_heading = False
        self.charts: list[tuple[str, str]] = []  # (kernel, metric)
        self.points: Counter[tuple[str, str]] = Counter()
        self.failed: Counter[tuple[str, str]] = Counter()
        self.tags: Counter[str] = Counter()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags[tag] += 1
        if tag == "h2" and self.tags["section"]:
            self.in_heading, self.kernel = True, ""
        elif tag == "svg" and a.get("class") == "trend":
            label = a.get("aria-label") or ""
            self.charts.append((self.kernel, label.rsplit(" over ", 1)[0]))
        elif tag == "polyline" and a.get("class") == "values":
            self.points[self.charts[-1]] += len((a.get("points") or "").split())
        elif tag == "circle" and a.get("class") == "failed":
            self.failed[self.charts[-1]] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self.in_heading = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.in_heading:
            self.kernel += data


def _rows(db: Path) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """Numbers and failed numbers per (kernel, metric), from the history's tables."""
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT k.kernel, m.metric, m.state FROM metrics m JOIN kernels k ON "
            "k.run_id = m.run_id AND k.result_index = m.result_index AND "
            "k.kernel_index = m.kernel_index WHERE m.value_number IS NOT NULL"
        ).fetchall()
    numbers = Counter((k, m) for k, m, _ in rows)
    failed = Counter((k, m) for k, m, state in rows if state in FAILED_STATES)
    return numbers, failed


def _pixels(png: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, data, header = 8, b"", b""
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        header = body if kind == b"IHDR" else header
        data += body if kind == b"IDAT" else b""
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    step = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(data), width * step
    out: list[tuple[int, int, int]] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - step] if i >= step else 0
            b, c = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                near = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + near) & 0xFF
        out += [tuple(line[i : i + 3]) for i in range(0, stride, step)]  # type: ignore[misc]
        previous = line
    return width, height, out


def _near(pixels: list[tuple[int, int, int]], colour: str) -> int:
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return sum(1 for p in pixels if all(abs(p[i] - want[i]) <= 8 for i in range(3)))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    _chromium()  # skipped or failed before the history is built
    return history_corpus.build(tmp_path_factory.mktemp("history"))


def test_the_page_renders_a_chart_per_series_with_its_runs(
    history: tuple[Path, Path], tmp_path: Path
) -> None:
    _, db = history
    page = tmp_path / "history.html"
    code, out, err = invoke("history", "html", "--db", str(db), "-o", str(page))
    assert code == 0, err
    dom = _Dom()
    dom.feed(_browse(page, tmp_path / "profile", "--dump-dom"))
    numbers, failed = _rows(db)
    charts = int(out.split(" charts")[0].rsplit(" ", 1)[1])
    assert len(dom.charts) == charts == len(set(dom.charts)) > 100
    assert dom.tags["section"] == 45 and dom.tags["script"] == 0
    for chart in dom.charts:
        assert dom.points[chart] == numbers[chart], chart  # every run's value, in order
        assert dom.failed[chart] == failed[chart], chart
    # Every series that failed in some run has a chart; the regressions of both changes.
    assert {c for c, n in failed.items() if n} <= set(dom.charts)
    assert sum(dom.failed.values()) >= 4
    # The hostile branch is a tooltip's text, not markup.
    assert history_corpus.HOSTILE_BRANCH in "".join(dom.text)


def test_the_page_and_a_trend_draw_their_colours_on_screen(
    history: tuple[Path, Path], tmp_path: Path
) -> None:
    baseline, db = history
    page = tmp_path / "history.html"
    assert invoke("history", "html", "--db", str(db), "-o", str(page))[0] == 0
    shot = tmp_path / "page.png"
    _browse(page, tmp_path / "p1", f"--screenshot={shot}", "--window-size=1200,1600")
    width, height, pixels = _pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    # The first kernel's charts: value lines and dots in blue, on white cards.
    assert _near(pixels, VALUE_COLOUR) > 2000
    assert _near(pixels, "#ffffff") > width * height // 2
    # A regressed kernel's trend in the pull-request report: its failed runs in red.
    report = tmp_path / "report"
    code, _, err = invoke(
        "check", "-b", str(baseline), "-c", str(REGRESSED_CHANGE), "--history", str(db),
        "--markdown", str(report / "summary.md"),
    )  # fmt: skip
    assert code == 1, err
    trend = next(p for p in sorted(report.glob("summary.*.svg")) if "total_time" in p.name)
    shot = tmp_path / "trend.png"
    _browse(trend, tmp_path / "p2", f"--screenshot={shot}", "--window-size=660,260")
    width, height, pixels = _pixels(shot.read_bytes())
    assert (width, height) == (660, 260)
    assert _near(pixels, FAILED_COLOUR) > 100  # two failed runs: the history's and this one
    assert _near(pixels, VALUE_COLOUR) > 300
