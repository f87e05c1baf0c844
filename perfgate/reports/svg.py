"""A stall breakdown as a picture: stall shares before and after, as grouped horizontal bars.

The chart carries its own white card, so it reads the same in GitHub's light and dark themes;
baseline and current are blue and orange (told apart with most colour vision), each with 3:1
contrast or more on white and on GitHub's dark page (#0d1117), named in a legend, and every bar
is labelled with its value. The line after the `<svg>` tag marks the file as perfgate's chart
for one markdown report (chart_mark): a later run to the same --markdown path removes only
files that carry its mark, never another report's charts or a file perfgate did not write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from xml.sax.saxutils import escape

from perfgate.common.escape import one_line
from perfgate.reports.format import by_share

# Baseline and current, in every stall chart (the mermaid ones too).
BASELINE_COLOUR = "#2f81f7"
CURRENT_COLOUR = "#d9630c"


def chart_mark(report: str) -> str:
    """The comment that marks a chart as written by perfgate for the markdown file `report`
    (its name, hashed: a name may hold what an XML comment cannot)."""
    digest = hashlib.sha256(report.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"<!-- perfgate stall chart of report {digest} -->"


_BAR = 16
_GAP = 10
_LABEL = 180
_WIDTH = 640
_SCALE = _WIDTH - _LABEL - 64


def _text(text: str) -> str:
    """Character data that is well-formed XML whatever the id holds: controls (which XML 1.0
    forbids), bidi and zero-width characters shown as escapes, then &, < and > escaped."""
    return escape(one_line(text))


def stall_chart(
    title: str,
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    top: int = 8,
    report: str = "",
) -> str:
    """An SVG document; `before`/`after` map a stall reason to its share (%) of all stalls;
    `report` names the markdown file it belongs to (chart_mark)."""
    before, after = before or {}, after or {}
    reasons = by_share(before, after)
    reasons = [r for r in reasons if max(before.get(r, 0.0), after.get(r, 0.0)) >= 0.5][:top]
    row = 2 * _BAR + _GAP
    height = 54 + row * len(reasons) + 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="12">',
        chart_mark(report),
        f'<rect width="{_WIDTH}" height="{height}" rx="6" fill="#ffffff" stroke="#d0d7de"/>',
        f'<text x="10" y="20" font-size="13" font-weight="bold" fill="#1f2328">'
        f"{_text(title)}</text>",
        f'<rect x="10" y="30" width="12" height="12" fill="{BASELINE_COLOUR}"/>'
        '<text x="27" y="40" fill="#1f2328">baseline</text>'
        f'<rect x="92" y="30" width="12" height="12" fill="{CURRENT_COLOUR}"/>'
        '<text x="109" y="40" fill="#1f2328">current</text>'
        f'<text x="{_WIDTH - 10}" y="40" text-anchor="end" fill="#59636e">'
        "share of stalls (%)</text>",
    ]
    y = 54
    for reason in reasons:
        b, a = before.get(reason, 0.0), after.get(reason, 0.0)
        out.append(
            f'<text x="{_LABEL - 8}" y="{y + _BAR + 4}" text-anchor="end" fill="#1f2328">'
            f"{_text(reason)}</text>"
        )
        for i, (value, colour) in enumerate(((b, BASELINE_COLOUR), (a, CURRENT_COLOUR))):
            top_y = y + i * _BAR
            width = max(value / 100 * _SCALE, 1.0)
            out.append(
                f'<rect class="bar" x="{_LABEL}" y="{top_y}" width="{width:.1f}" '
                f'height="{_BAR - 2}" fill="{colour}"/>'
            )
            out.append(
                f'<text x="{_LABEL + width + 4:.1f}" y="{top_y + _BAR - 4}" fill="#1f2328">'
                f"{value:.1f}%</text>"
            )
        y += row
    out.append("</svg>\n")
    return "\n".join(out)
