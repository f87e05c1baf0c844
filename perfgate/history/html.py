"""One baseline's history as a static HTML page: every kernel's charts per fingerprint and
metric (svg.py, inline), grouped by kernel, with a table of contents.

Self-contained: no script, no stylesheet or font fetched, nothing linked outside the page; its
Content-Security-Policy forbids loading anything, so a page opened from CI artifacts reaches
no network. A metric whose value never moved and never failed gets a row in a table instead of
a flat chart, and a label metric (the dominant stall) a row with the values it took; charts
lead with the metrics that failed in some run. Deterministic: the page holds no time of its
own making, so one history renders to the same bytes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from perfgate.common.escape import one_line
from perfgate.history.queries import Series
from perfgate.history.svg import FAILED_STATES, ChartSize, trend_chart
from perfgate.history.trends import (
    BaselineTrends,
    ChangePointFinder,
    KernelTrends,
    change_indexes,
    no_change_points,
)

CHART = ChartSize(460, 200)

_STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1480px; color: #1f2328;
       padding: 0 1em; }
code { font-size: 0.92em; word-break: break-all; }
nav ol { columns: 2 28em; font-size: 0.92em; }
nav li { margin: 0.15em 0; break-inside: avoid; }
.flag { color: #cf222e; font-weight: bold; }
section.kernel { border-top: 1px solid #d0d7de; margin-top: 2em; }
.charts { display: flex; flex-wrap: wrap; gap: 10px; }
figure { margin: 0; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #d0d7de; padding: 2px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #59636e; }
"""


def _h(text: str) -> str:
    """Text from input as HTML character data: one line, markup escaped."""
    return escape(one_line(text), quote=True)


def _number(v: float) -> str:
    return f"{v:,.6g}"


def _charted(s: Series, changes: Sequence[int]) -> bool:
    """Whether a series is worth a chart: its value moved, a run did not pass, or a change
    point was found; a number that held still is a table row."""
    numbers = s.numbers
    if not numbers:
        return False
    moved = min(numbers) != max(numbers)
    judged = any(p.state != "pass" for p in s.points)
    return moved or judged or bool(changes)


def _failed(s: Series) -> bool:
    return any(p.state in FAILED_STATES for p in s.points)


@dataclass(frozen=True)
class _Counts:
    charts: int = 0
    failed: bool = False


def _fingerprint_block(group: Sequence[Series], finder: ChangePointFinder) -> tuple[str, _Counts]:
    fp = group[0].fingerprint
    charts, still, labels = [], [], []
    for s in sorted(group, key=lambda s: (not _failed(s), s.metric)):
        changes = change_indexes(s, finder)
        if _charted(s, changes):
            charts.append(
                "<figure>"
                + trend_chart(s, title=s.metric, change_points=changes, size=CHART)
                + "</figure>"
            )
        elif s.numbers:
            still.append(
                f"<tr><td><code>{_h(s.metric)}</code></td>"
                f'<td class="num">{_h(_number(s.numbers[-1]))}</td><td>{_h(s.unit)}</td></tr>'
            )
        else:
            seen = Counter(str(p.value) for p in s.points)
            shown = ", ".join(f"{_h(v)} ({n})" for v, n in seen.most_common())
            newest = s.points[-1]
            labels.append(
                f"<tr><td><code>{_h(s.metric)}</code></td><td>{_h(str(newest.value))} "
                f'<span class="muted">({_h(newest.state)})</span></td><td>{shown}</td></tr>'
            )
    runs = len({p.run_id for s in group for p in s.points})
    out = [f"<h3>{_h(fp.describe())} <span class='muted'>({runs} runs)</span></h3>\n"]
    if charts:
        out.append('<div class="charts">\n' + "\n".join(charts) + "</div>\n")
    if labels:
        out.append(
            "<table><tr><th>label metric</th><th>newest</th><th>values seen (runs)</th></tr>"
            + "".join(labels)
            + "</table>\n"
        )
    if still:
        out.append(
            f"<details><summary>{len(still)} metrics held one value in every run</summary>"
            "<table><tr><th>metric</th><th>value</th><th>unit</th></tr>"
            + "".join(still)
            + "</table></details>\n"
        )
    return "".join(out), _Counts(len(charts), any(_failed(s) for s in group))


def _kernel_section(index: int, k: KernelTrends, finder: ChangePointFinder) -> tuple[str, _Counts]:
    groups: dict[str, list[Series]] = {}
    for s in k.series:
        groups.setdefault(s.fingerprint.key(), []).append(s)
    blocks, counts = [], _Counts()
    for key in sorted(groups):
        block, got = _fingerprint_block(groups[key], finder)
        blocks.append(block)
        counts = _Counts(counts.charts + got.charts, counts.failed or got.failed)
    name = "" if k.name == k.kernel else f'<p class="muted"><code>{_h(k.name)}</code></p>\n'
    return (
        f'<section class="kernel" id="k{index}">\n<h2><code>{_h(k.kernel)}</code></h2>\n'
        + name
        + "".join(blocks)
        + '<p><a href="#contents">contents</a></p>\n</section>\n',
        counts,
    )


@dataclass(frozen=True)
class Page:
    text: str
    kernels: int
    charts: int


def page(
    trends: BaselineTrends,
    *,
    source: str,
    change_points: ChangePointFinder = no_change_points,
) -> Page:
    """The HTML page of one baseline's history; `source` names the history it was read from."""
    sections, entries = [], []
    charts = 0
    for i, k in enumerate(trends.kernels, 1):
        block, counts = _kernel_section(i, k, change_points)
        sections.append(block)
        charts += counts.charts
        flag = ' <span class="flag">failed in some run</span>' if counts.failed else ""
        entries.append(
            f'<li><a href="#k{i}"><code>{_h(k.kernel)}</code></a>{flag} '
            f'<span class="muted">({counts.charts} charts)</span></li>'
        )
    title = f"perfgate history: {trends.baseline}"
    span = f"{trends.first[:19].replace('T', ' ')} to {trends.last[:19].replace('T', ' ')} UTC"
    if trends.kept > trends.runs:
        span += f" (the newest of {trends.kept} kept)"
    text = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_h(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>perfgate history: <code>{_h(trends.baseline)}</code></h1>\n"
        f"<p>{trends.runs} runs, {span}; {len(trends.kernels)} kernels, {charts} charts; "
        f"from <code>{_h(source)}</code>.</p>\n"
        '<p class="muted">Each chart is one metric of one kernel on one fingerprint (GPU, '
        "driver, ncu, clock and cache control, scope, time basis), oldest run first. The "
        "dashed line is the baseline's value and the band its bound; a red dot is a run the "
        "check failed, a green one improved, an amber one noted; a purple dashed line marks "
        "a change point, the first run of a new level. Point at a dot for its run, commit "
        "and value.</p>\n"
        '<nav id="contents">\n<h2>Kernels</h2>\n<ol>\n'
        + "\n".join(entries)
        + "\n</ol>\n</nav>\n"
        + "".join(sections)
        + "</body>\n</html>\n"
    )
    return Page(text, len(trends.kernels), charts)
