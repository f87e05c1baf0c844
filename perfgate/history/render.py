"""A kernel's series as text (a sparkline per metric and fingerprint) or as JSON. Here rather
than in reports/: the formatters never import the history (docs/architecture.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Protocol

from perfgate.common.escape import one_line
from perfgate.history.queries import Series

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """One bar per value, scaled between the series' own lowest and highest: a flat series
    is a flat line, not noise blown up to the full height."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return BARS[0] * len(values)
    top = len(BARS) - 1
    return "".join(BARS[round((v - low) / (high - low) * top)] for v in values)


def _number(v: float) -> str:
    return f"{v:,.6g}"


def text(kernel: str, found: Sequence[Series]) -> str:
    if not found:
        return f"no runs of kernel {one_line(kernel)} in this history\n"
    lines: list[str] = []
    fingerprint = None
    for s in found:
        if s.fingerprint != fingerprint:
            fingerprint = s.fingerprint
            lines.append(f"{one_line(s.kernel)} on {one_line(s.fingerprint.describe())}:")
        numbers = s.numbers
        runs = len(s.points)
        if numbers:
            last = s.points[-1]
            shown = f"{_number(numbers[-1])} {s.unit}".rstrip()
            span = f"min {_number(min(numbers))}, max {_number(max(numbers))}"
            lines.append(
                f"  {one_line(s.metric):<28} {sparkline(numbers)}  last {shown} "
                f"({last.state}), {span}, {runs} run{'s' if runs != 1 else ''}"
            )
        else:
            labels = " ".join(one_line(str(p.value)) for p in s.points[-5:])
            lines.append(f"  {one_line(s.metric):<28} {labels}  ({runs} runs)")
    return "\n".join(lines) + "\n"


def to_json(kernel: str, found: Sequence[Series]) -> str:
    doc: dict[str, Any] = {
        "kernel": kernel,
        "series": [
            {
                "metric": s.metric,
                "name": s.name,
                "unit": s.unit,
                "fingerprint": asdict(s.fingerprint),
                "points": [asdict(p) for p in s.points],
            }
            for s in found
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


class StoredRun(Protocol):
    """What storing one run came to (perfgate.gate.HistoryStored)."""

    @property
    def run_id(self) -> str: ...
    @property
    def stored(self) -> bool: ...
    @property
    def kernels(self) -> int: ...
    @property
    def metrics(self) -> int: ...
    @property
    def status(self) -> str: ...


def stored_json(*runs: StoredRun) -> str:
    """`history add` and `history import --format json`: each run, stored or kept already
    (stored false: nothing changed), in the order given."""
    doc = {
        "runs": [
            {
                "run_id": r.run_id,
                "stored": r.stored,
                "kernels": r.kernels,
                "metrics": r.metrics,
                "status": r.status,
            }
            for r in runs
        ]
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def pruned_json(run_ids: Sequence[str]) -> str:
    """`history prune --format json`: the runs deleted."""
    doc = {"deleted": len(run_ids), "run_ids": list(run_ids)}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


class WrittenPage(Protocol):
    """A page `history html` wrote (perfgate.gate.HistoryPage)."""

    @property
    def path(self) -> str: ...
    @property
    def runs(self) -> int: ...
    @property
    def kernels(self) -> int: ...
    @property
    def charts(self) -> int: ...


def page_json(page: WrittenPage) -> str:
    """`history html --format json`: the page written and what it holds."""
    doc = {"path": page.path, "runs": page.runs, "kernels": page.kernels, "charts": page.charts}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
