"""Reading a history back: a kernel's series, one per fingerprint and metric.

A kernel's figures are comparable only within one fingerprint (GPU, driver, ncu, clock and
cache control, scope, time basis): a driver update moves durations with no change of code, so
each fingerprint is its own series rather than one line with a step in it."""

from __future__ import annotations

from dataclasses import dataclass

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
    grouped: dict[tuple[str, str], list[tuple[object, ...]]] = {}
    for row in store.series_rows(kernel, metric):
        grouped.setdefault((row[4], row[15]), []).append(row)
    out = []
    for (_, name_of_metric), rows in grouped.items():
        last = rows[-1]
        points = tuple(
            Point(
                run_id=str(r[0]),
                recorded_at=str(r[1]),
                commit=_text(r[2]),
                branch=_text(r[3]),
                state=str(r[16]),
                value=_value(r[17], r[18]),
                baseline=r[19] if isinstance(r[19], float) else None,
                bound=str(r[21]),
                finding=_text(r[22]),
                finding_title=_text(r[23]),
            )
            for r in rows
        )
        fp = RunFingerprint(*(_text(v) for v in last[5:13]))
        out.append(Series(kernel, str(last[14]), name_of_metric, str(last[20]), fp, points))
    return sorted(out, key=lambda s: (s.fingerprint.key(), s.metric))


def _text(v: object) -> str | None:
    return None if v is None else str(v)


def _value(number: object, text: object) -> Value:
    if text is not None:
        return str(text)
    return float(number) if isinstance(number, (int, float)) else None
