"""A stall breakdown as a picture: stall shares before and after, as grouped horizontal bars."""

from __future__ import annotations

from collections.abc import Mapping
from xml.sax.saxutils import escape

from perfgate.common.escape import one_line
from perfgate.reports.format import by_share

_BAR = 14
_GAP = 8
_LABEL = 170
_WIDTH = 640
_SCALE = _WIDTH - _LABEL - 60


def _text(text: str) -> str:
    """Character data that is well-formed XML whatever the id holds: controls (which XML 1.0
    forbids), bidi and zero-width characters shown as escapes, then &, < and > escaped."""
    return escape(one_line(text))


def stall_chart(
    title: str,
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    top: int = 8,
) -> str:
    """An SVG document; `before`/`after` map a stall reason to its share (%) of all stalls."""
    before, after = before or {}, after or {}
    reasons = by_share(before, after)
    reasons = [r for r in reasons if max(before.get(r, 0.0), after.get(r, 0.0)) >= 0.5][:top]
    row = 2 * _BAR + _GAP
    height = 60 + row * len(reasons) + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{_WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="8" y="18" font-size="13" font-weight="bold">{_text(title)}</text>',
        '<rect x="8" y="28" width="12" height="10" fill="#9e9e9e"/>'
        '<text x="24" y="37">baseline</text>'
        '<rect x="90" y="28" width="12" height="10" fill="#d73a49"/>'
        '<text x="106" y="37">current</text>'
        f'<text x="{_WIDTH - 8}" y="37" text-anchor="end" fill="#555">share of stalls (%)</text>',
    ]
    y = 50
    for reason in reasons:
        b, a = before.get(reason, 0.0), after.get(reason, 0.0)
        out.append(
            f'<text x="{_LABEL - 6}" y="{y + _BAR + 4}" text-anchor="end">{_text(reason)}</text>'
        )
        for i, (value, color) in enumerate(((b, "#9e9e9e"), (a, "#d73a49"))):
            top_y = y + i * _BAR
            width = max(value / 100 * _SCALE, 0.5)
            out.append(
                f'<rect x="{_LABEL}" y="{top_y}" width="{width:.1f}" height="{_BAR - 2}" '
                f'fill="{color}"/>'
            )
            out.append(
                f'<text x="{_LABEL + width + 4:.1f}" y="{top_y + _BAR - 3}" fill="#333">'
                f"{value:.1f}</text>"
            )
        y += row
    out.append("</svg>\n")
    return "\n".join(out)
