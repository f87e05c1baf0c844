"""The comparisons of a kernel whose every metric passes, worked out with the least work per
metric: the common case of a check, where 1,000 kernels pass (docs/scale.md).

The route to each metric's statistics (perfgate.metrics.measure.column_route) is found once
per metric, formula group, reason set and compute capability, the statistics once for every
kernel, and no Measured values are kept (a kernel that passes is not diagnosed). Anything else
(a metric that moved, a label, a bound of its own, a value the column table cannot give)
gives None, and the kernel is compared metric by metric (perfgate.verdicts.metric.compare_one),
whose comparisons these equal (tests/metrics/test_columns.py). Either way the comparisons go
on to the same judgement (perfgate.judge.rules)."""

from __future__ import annotations

from typing import Any, NamedTuple

from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.comparison import Bounds, Comparison, State, compare_metric
from perfgate.metrics.catalog import MetricDef
from perfgate.metrics.columns import KernelRows, LaunchTable, Stats
from perfgate.metrics.measure import ColumnRoute, column_route
from perfgate.metrics.thresholds import describe_bound
from perfgate.verdicts.metric import BoundsMemo, bounds_of, compare_one


class _Route(NamedTuple):
    route: ColumnRoute
    stats: list[Stats]  # per group of the table
    defn: MetricDef
    bounds: Bounds
    bound: str  # describe_bound() of the bounds in the route's unit


_UNSEEN = object()


class Passing:
    """The all-pass comparisons of the kernels of one check's LaunchTable."""

    def __init__(
        self, table: LaunchTable, baseline: Baseline, columns: frozenset[str], memo: BoundsMemo
    ) -> None:
        self.table = table
        self.baseline = baseline
        self.columns = columns
        self.memo = memo
        self.routes: dict[tuple[str, str | None, tuple[str, ...] | None, str | None], Any] = {}

    def _route(self, metric: MetricBaseline, cc: str | None) -> _Route | None:
        # The recorded group (None: the catalog's first formula's), not formula_group: a
        # property call saved 35,000 times.
        key = (metric.name, metric.group, metric.reasons, cc)
        hit = self.routes.get(key, _UNSEEN)
        if hit is _UNSEEN:
            defn = metric.definition
            route = column_route(defn, self.columns, cc, metric.formula_group, metric.reasons)
            stats = route.stats(self.table) if route is not None else None
            hit = None
            if route is not None and stats is not None:
                # Only metrics without bounds of their own come here: the bounds of the name.
                judged_by = bounds_of(defn, metric, self.baseline, self.memo)
                text = describe_bound(judged_by.threshold, judged_by.direction, route.unit)
                hit = _Route(route, stats, defn, judged_by, text)
            self.routes[key] = hit
        return hit  # type: ignore[no-any-return]

    def comparisons(
        self,
        kernel: KernelBaseline,
        launches: list[Launch],
        capture: Capture,
        rows: KernelRows,
    ) -> list[Comparison] | None:
        """`kernel`'s comparisons when every one passes; None as soon as one does not."""
        out: list[Comparison] = []
        index, cc = rows.group, rows.cc
        for metric in kernel.metrics:
            value = metric.value
            hit = None
            if metric.threshold is None and metric.check is None and value.__class__ is not str:
                hit = self._route(metric, cc)
            stats = hit.stats[index] if hit is not None else None
            if hit is None or stats is None or not stats[0]:
                # A label, a bound of its own, a count per capture file: the plain way.
                comparison, _ = compare_one(
                    kernel, metric, launches, capture, self.baseline, self.memo, rows
                )
                if comparison.state is not State.PASS:
                    return None
                out.append(comparison)
                continue
            # The same judgement as the plain way's, from the column statistics.
            comparison = compare_metric(
                kernel.id, metric, hit.defn, hit.route.value(stats), hit.route.unit,
                hit.bounds, hit.bound,
            )  # fmt: skip
            if comparison.state is not State.PASS:
                return None
            out.append(comparison)
        return out
