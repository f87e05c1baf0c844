"""One series as a picture: a small SVG line chart of a metric over the runs a history kept.

The values are a line with a dot per run; the baseline value is a line and the bound around it
a band (each drawn per run, so a baseline accepted midway shows as a step); a point whose
metric the check did not pass is a larger dot in red (regressed, error, unjudged), green
(improved) or amber (noted); a change point is a vertical dashed line before the first run of
the new level. Each dot's <title> is its tooltip: run number, commit, branch, date, value and
state. The band is drawn from the bound's words (`+5% and +0.1 ms` of the baseline's value):
the check judged from the edge of the baseline's launch range, which the history does not
keep, so a point can pass just outside the band; its dot's colour is the check's own verdict.

Every text that came from input (kernel names, metric names, units, commits, branches, run
ids) is escaped and put on one line. The output is a pure function of its arguments: no
clock, no random ids, numbers in fixed formats, so one series draws to the same bytes."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from perfgate.common.escape import one_line
from perfgate.history.queries import Point, Series

# The card is white in GitHub's light and dark themes alike, as the stall charts are; the
# colours keep 3:1 contrast or more on it.
VALUE_COLOUR = "#0969da"
BASELINE_COLOUR = "#57606a"
BAND_COLOUR = "#8c959f"
FAILED_COLOUR = "#cf222e"
IMPROVED_COLOUR = "#1a7f37"
NOTED_COLOUR = "#9a6700"
CHANGE_COLOUR = "#8250df"
TEXT_COLOUR = "#1f2328"
MUTED_COLOUR = "#59636e"

# Metric states (perfgate.judge.comparison.State's values) a chart marks, and how.
FAILED_STATES = frozenset({"regressed", "error", "unjudged"})
_STATE_COLOUR = {"improved": IMPROVED_COLOUR, "noted": NOTED_COLOUR}

_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 14, 48, 38
_CHAR_WIDTH = 7.0  # an average character of the 12px sans-serif, for cutting a long title


@dataclass(frozen=True)
class ChartSize:
    width: int = 560
    height: int = 220


def text(value: str) -> str:
    """Character data from input: on one line (controls shown as escapes), &, < and > escaped."""
    return escape(one_line(value))


def attr(value: str) -> str:
    """An attribute value from input, quoted."""
    return quoteattr(one_line(value))


_BOUND_PART = re.compile(r"^([+±-])(\d+(?:\.\d*)?(?:e[+-]?\d+)?)(%)?(?: .*)?$")


def bound_limits(baseline: float | None, bound: str) -> tuple[float, float] | None:
    """The values between which a metric stays within its bound, from the bound's words and
    the baseline's value: `+5% and +100 ns` allows max(5% of |baseline|, 100) above it (the
    check counts a move only beyond both), `-` below, `±` either side. None when the bound is
    not a numeric one (a label's `unchanged`) or there is no baseline value."""
    if baseline is None or not bound:
        return None
    allowance, sign = 0.0, ""
    for part in bound.replace(" (exact)", "").split(" and "):
        m = _BOUND_PART.match(part.strip())
        if m is None:
            return None
        amount = float(m.group(2))
        allowance = max(allowance, amount / 100 * abs(baseline) if m.group(3) else amount)
        sign = m.group(1)
    below = allowance if sign in ("-", "±") else 0.0
    above = allowance if sign in ("+", "±") else 0.0
    return baseline - below, baseline + above


def _number(v: float) -> str:
    return f"{v:,.6g}"


def short_commit(commit: str | None) -> str:
    return (commit or "")[:12]


def tooltip(index: int, point: Point, unit: str) -> list[str]:
    """What a run's dot says when pointed at: one line per fact."""
    shown = _number(point.value) if isinstance(point.value, float) else str(point.value)
    return [
        f"run {index + 1}: {shown} {unit}".rstrip() + f" ({point.state})",
        f"commit {short_commit(point.commit) or 'unknown'}"
        + (f" on {point.branch}" if point.branch else "")
        + f", {point.recorded_at[:16].replace('T', ' ')}",
    ]


def _step(span: float) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about four ticks."""
    raw = span / 4
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude * 1.0000001)


def _range(numbers: Sequence[float]) -> tuple[float, float, float]:
    """The value axis' ends and tick step: the numbers with a margin, on whole steps; never
    below zero for numbers that are not (a count has no negative ticks)."""
    low, high = min(numbers), max(numbers)
    pad = (high - low) * 0.08 if high > low else abs(low) * 0.05 or 1.0
    step = _step(high - low + 2 * pad)
    start = math.floor((low - pad) / step) * step
    if low >= 0 > start:
        start = 0.0
    return start, math.ceil((high + pad) / step) * step, step


_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def tick_label(value: float, step: float, largest: float) -> str:
    """A tick's value with an SI prefix chosen by the axis' largest value, and as many
    decimals as the step needs (52.5k, 0.0805, 19.60M)."""
    scale, prefix = next(((s, p) for s, p in _PREFIXES if largest >= s), (1.0, ""))
    scaled_step = step / scale
    decimals = max(0, -math.floor(math.log10(scaled_step) + 1e-9))
    if round(scaled_step * 10**decimals, 6) % 1:
        decimals += 1  # a step of 2.5
    shown = value / scale
    if abs(shown) < scaled_step / 1e6:
        return "0"
    return f"{shown:.{decimals}f}{prefix}"


def _cut(title: str, width: int) -> str:
    room = max(int((width - 20) / _CHAR_WIDTH), 8)
    return title if len(title) <= room else title[: room - 1] + "…"


@dataclass(frozen=True)
class _Frame:
    """The plot area and its scales."""

    size: ChartSize
    runs: int
    low: float
    high: float

    @property
    def slot(self) -> float:
        return (self.size.width - _LEFT - _RIGHT) / max(self.runs, 1)

    def x(self, index: int) -> float:
        return _LEFT + (index + 0.5) * self.slot

    def y(self, value: float) -> float:
        plot = self.size.height - _TOP - _BOTTOM
        return _TOP + plot * (self.high - value) / (self.high - self.low)

    @property
    def bottom(self) -> float:
        return float(self.size.height - _BOTTOM)


def _segments(keys: Sequence[object]) -> list[tuple[int, int]]:
    """Runs of equal consecutive keys as (first, last) indexes, None keys left out."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            if keys[start] is not None:
                out.append((start, i - 1))
            start = i
    return out


def _reference(series: Series, frame: _Frame) -> list[str]:
    """The bound's band and the baseline's line, one shape per stretch of runs they held."""
    out = []
    limits = [bound_limits(p.baseline, p.bound) for p in series.points]
    for first, last in _segments(limits):
        low, high = limits[first] or (0.0, 0.0)
        low, high = max(low, frame.low), min(high, frame.high)
        if high > low:
            x0, x1 = frame.x(first) - frame.slot / 2, frame.x(last) + frame.slot / 2
            top, bottom = frame.y(high), frame.y(low)
            out.append(
                f'<rect class="bound" x="{x0:.1f}" y="{top:.1f}" width="{x1 - x0:.1f}" '
                f'height="{bottom - top:.1f}" fill="{BAND_COLOUR}" fill-opacity="0.18"/>'
            )
    baselines = [p.baseline for p in series.points]
    for first, last in _segments(baselines):
        value = baselines[first]
        assert value is not None  # _segments leaves the runs without one out
        x0, x1 = frame.x(first) - frame.slot / 2, frame.x(last) + frame.slot / 2
        y = frame.y(value)
        out.append(
            f'<line class="baseline" x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" '
            f'stroke="{BASELINE_COLOUR}" stroke-width="1.5" stroke-dasharray="6 3"/>'
        )
    return out


def _axes(series: Series, frame: _Frame, step: float) -> list[str]:
    width = frame.size.width
    largest = max(abs(frame.low), abs(frame.high))
    out = []
    tick = frame.low
    while tick <= frame.high + step / 1e6:
        y = frame.y(tick)
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{width - _RIGHT}" y2="{y:.1f}" '
            'stroke="#d8dee4" stroke-width="1"/>'
            f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{MUTED_COLOUR}">'
            f"{tick_label(tick, step, largest)}</text>"
        )
        tick += step
    every = max(1, math.ceil(frame.runs / 10))
    for i in range(0, frame.runs, every):
        out.append(
            f'<text x="{frame.x(i):.1f}" y="{frame.bottom + 14:.1f}" text-anchor="middle" '
            f'fill="{MUTED_COLOUR}">{i + 1}</text>'
        )
    first, last = series.points[0].recorded_at[:10], series.points[-1].recorded_at[:10]
    runs = f"{frame.runs} run{'s' if frame.runs != 1 else ''}"
    span = f", {first} to {last}" if first != last else f", {first}"
    out.append(
        f'<text class="x-axis" x="{(width + _LEFT - _RIGHT) / 2:.1f}" y="{frame.bottom + 30:.1f}" '
        f'text-anchor="middle" fill="{MUTED_COLOUR}">{text(runs + span)}, oldest first</text>'
        f'<text class="y-axis" x="{_LEFT - 6}" y="{_TOP - 8}" text-anchor="end" '
        f'fill="{MUTED_COLOUR}">{text(series.unit or "value")}</text>'
    )
    return out


def _values(series: Series, frame: _Frame) -> list[str]:
    """The line through the values, broken where a run has no number."""
    out = []
    numbers = [p.value if isinstance(p.value, float) else None for p in series.points]
    for first, last in _segments([v is not None or None for v in numbers]):
        coords = " ".join(
            f"{frame.x(i):.1f},{frame.y(v):.1f}"
            for i in range(first, last + 1)
            if (v := numbers[i]) is not None
        )
        out.append(
            f'<polyline class="values" points="{coords}" fill="none" '
            f'stroke="{VALUE_COLOUR}" stroke-width="2" stroke-linejoin="round"/>'
        )
    return out


def _dots(series: Series, frame: _Frame, this_run: bool) -> list[str]:
    # The group gives the common look: a page holds hundreds of charts of dozens of dots.
    out = [f'<g class="dots" fill="{VALUE_COLOUR}" stroke="#ffffff" stroke-width="1">']
    last = len(series.points) - 1
    for i, p in enumerate(series.points):
        if not isinstance(p.value, float):
            continue
        x, y = frame.x(i), frame.y(p.value)
        if p.state in FAILED_STATES:
            kind, colour, radius = "failed", FAILED_COLOUR, 5.0
        elif p.state in _STATE_COLOUR:
            kind, colour, radius = p.state, _STATE_COLOUR[p.state], 4.5
        else:
            kind, colour, radius = "run", VALUE_COLOUR, 3.0
        if this_run and i == last:
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius + 3:.1f}" fill="none" '
                f'stroke="{TEXT_COLOUR}" stroke-width="1.5"/>'
                f'<text class="this-run" x="{x - radius - 5:.1f}" y="{y - radius - 5:.1f}" '
                f'text-anchor="end" fill="{TEXT_COLOUR}" stroke="none">this run</text>'
            )
        fill = "" if colour == VALUE_COLOUR else f' fill="{colour}"'
        out.append(
            f'<circle class="{kind}" cx="{x:.1f}" cy="{y:.1f}" r="{radius:g}"{fill}>'
            f"<title>{'&#10;'.join(text(line) for line in tooltip(i, p, series.unit))}</title>"
            "</circle>"
        )
    out.append("</g>")
    return out


def _changes(series: Series, frame: _Frame, change_points: Sequence[int]) -> list[str]:
    out = []
    for index in sorted(set(change_points)):
        if not 0 < index < len(series.points):
            continue  # a level starting at the first run is no change
        x = frame.x(index) - frame.slot / 2
        p = series.points[index]
        what = f"change point: a new level from run {index + 1}"
        what += f" (commit {short_commit(p.commit)})" if p.commit else ""
        out.append(
            f'<line class="change" x1="{x:.1f}" y1="{_TOP - 2}" x2="{x:.1f}" '
            f'y2="{frame.bottom:.1f}" stroke="{CHANGE_COLOUR}" stroke-width="2" '
            f'stroke-dasharray="4 3"><title>{text(what)}</title></line>'
        )
    return out


def _legend(series: Series, change_points: Sequence[int]) -> str:
    states = {p.state for p in series.points if isinstance(p.value, float)}
    items = [("values", f'<circle cx="5" cy="-4" r="3" fill="{VALUE_COLOUR}"/>')]
    if any(p.baseline is not None for p in series.points):
        items.append(
            (
                "baseline and bound",
                f'<rect x="0" y="-10" width="12" height="12" fill="{BAND_COLOUR}" '
                f'fill-opacity="0.3"/><line x1="0" y1="-4" x2="12" y2="-4" '
                f'stroke="{BASELINE_COLOUR}" stroke-dasharray="4 2"/>',
            )
        )
    if states & FAILED_STATES:
        items.append(("failed", f'<circle cx="5" cy="-4" r="5" fill="{FAILED_COLOUR}"/>'))
    for state, colour in _STATE_COLOUR.items():
        if state in states:
            items.append((state, f'<circle cx="5" cy="-4" r="4.5" fill="{colour}"/>'))
    if any(0 < i < len(series.points) for i in change_points):
        items.append(
            (
                "change point",
                f'<line x1="5" y1="-11" x2="5" y2="3" stroke="{CHANGE_COLOUR}" '
                'stroke-width="2" stroke-dasharray="4 3"/>',
            )
        )
    out, x = [], float(_LEFT)
    for label, swatch in items:
        out.append(
            f'<g transform="translate({x:.1f},38)">{swatch}'
            f'<text x="16" y="0" fill="{TEXT_COLOUR}">{label}</text></g>'
        )
        x += 24 + len(label) * 6.2
    return "".join(out)


def trend_chart(
    series: Series,
    *,
    title: str | None = None,
    change_points: Sequence[int] = (),
    this_run: bool = False,
    size: ChartSize = ChartSize(),
    mark: str = "",
) -> str:
    """An SVG document of `series` (oldest run first). `change_points`: indexes into its
    points of the first run of each new level; `this_run`: the last point is the run being
    checked, ringed and labelled; `mark`: a comment line put after the `<svg>` tag (the
    markdown report's chart mark, by which a later run removes only its own charts)."""
    if mark and not (mark.startswith("<!--") and mark.endswith("-->") and "\n" not in mark):
        raise ValueError("a chart's mark is one XML comment")
    heading = title if title is not None else f"{series.kernel}: {series.metric}"
    # The scale fits the values and the baseline, not the bound: a wide bound would flatten
    # the line the chart is for; the band is cut at the plot's edge.
    numbers = [p.value for p in series.points if isinstance(p.value, float)]
    numbers += [p.baseline for p in series.points if p.baseline is not None]
    low, high, step = _range(numbers or [0.0])
    frame = _Frame(size, len(series.points), low, high)
    label = f"{heading} over {len(series.points)} runs"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="trend" width="{size.width}" '
        f'height="{size.height}" viewBox="0 0 {size.width} {size.height}" role="img" '
        f'aria-label={attr(label)} font-family="sans-serif" font-size="12">',
        *([mark] if mark else []),
        f"<title>{text(label)}</title>",
        f'<rect width="{size.width}" height="{size.height}" rx="6" fill="#ffffff" '
        'stroke="#d0d7de"/>',
        f'<text x="10" y="20" font-size="13" font-weight="bold" fill="{TEXT_COLOUR}">'
        f"{text(_cut(heading, size.width))}</text>",
        _legend(series, change_points),
        *_axes(series, frame, step),
        *_reference(series, frame),
        *_changes(series, frame, change_points),
        *_values(series, frame),
        *_dots(series, frame, this_run),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"
