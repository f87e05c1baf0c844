"""Reading a history back: a kernel's series, one per fingerprint and metric.

A kernel's figures are comparable only within one fingerprint (GPU, driver, ncu, clock and
cache control, scope, time basis): a driver update moves durations with no change of code, so
each fingerprint is its own series rather than one line with a step in it."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from perfgate.history.base import HistoryStore
from perfgate.history.model import RunFingerprint, Value


@dataclass(frozen=True)
class Point:
    run_id: str
    recorded_at: str
    commit: str | None
    branch: str | None
    state: str  # the metric's state as judged in that run
    value: Value
    baseline: float | None
    bound: str
    # The kernel's first finding in that run (its mechanism and title); None when it passed.
    finding: str | None = None
    finding_title: str | None = None
    # The machine start of that run (model.ResultRecord.machine_start); None when unknown.
    machine_start: str | None = None


@dataclass(frozen=True)
class Series:
    kernel: str
    name: str  # the kernel's name in the newest point
    metric: str
    unit: str
    fingerprint: RunFingerprint
    points: tuple[Point, ...]  # oldest first

    @property
    def numbers(self) -> list[float]:
        return [p.value for p in self.points if isinstance(p.value, float)]


def series(store: HistoryStore, kernel: str, metric: str | None = None) -> list[Series]:
    """The kernel's series, by fingerprint then metric, each oldest first."""
    grouped: dict[tuple[str, str], list[Point]] = {}
    last: dict[tuple[str, str], tuple[Any, ...]] = {}
    # Positional and unconverted: both drivers give str, float or None already, and a series
    # of one metric over 10 million points' history is 4,223 of these (docs/history.md).
    for r in store.series_rows(kernel, metric):
        key = (r[4], r[6])
        value = r[9] if r[9] is not None else r[8]
        point = Point(r[0], r[1], r[2], r[3], r[7], value, r[10], r[12], r[13], r[14], r[15])
        grouped.setdefault(key, []).append(point)
        last[key] = r
    out = [
        Series(kernel, last[key][5], key[1], last[key][11], _fingerprint(key[0]), tuple(points))
        for key, points in grouped.items()
    ]
    return sorted(out, key=lambda s: (s.fingerprint.key(), s.metric))


_FIELDS = {f.name for f in fields(RunFingerprint)}


def _fingerprint(key: str) -> RunFingerprint:
    """The fingerprint its key (RunFingerprint.key) names; a field this perfgate does not
    know (a newer one wrote it) is left out."""
    doc = json.loads(key)
    return RunFingerprint(**{k: v for k, v in doc.items() if k in _FIELDS})
