"""What a reviewer of a baseline change needs to see, on plain data: one baseline condensed
(`perfgate baseline show`) and what changed between two (`perfgate baseline diff`).

Bounds are shown as the check will apply them (catalog default, then the file's `thresholds:`,
then the metric's own), so a reviewer reads the gate, not the YAML's layering.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.baseline.fingerprint import Fingerprint
from perfgate.baseline.model import Baseline, HistoryEntry, KernelBaseline, MetricBaseline
from perfgate.judge.comparison import State, compare_metric, merged_bounds
from perfgate.lifecycle.plan import threshold_is_perfgates
from perfgate.metrics.thresholds import describe_bound

Value = float | str


@dataclass(frozen=True)
class MetricView:
    name: str
    value: Value
    unit: str
    bound: str  # as the check applies it
    hand_set: bool  # a threshold somebody wrote (not the calibrated or catalog one)


@dataclass(frozen=True)
class KernelView:
    id: str
    name: str | None
    launches: int | None
    metrics: tuple[MetricView, ...]
    history: tuple[HistoryEntry, ...]


@dataclass(frozen=True)
class BaselineView:
    path: str
    fingerprint: Fingerprint
    provenance: dict[str, object]
    kernels: tuple[KernelView, ...]
    total_kernels: int


def bound_text(baseline: Baseline, metric: MetricBaseline) -> str:
    defn = metric.definition
    if defn.categorical:
        return "categorical"
    judged_by = merged_bounds(defn, metric, baseline)
    return describe_bound(judged_by.threshold, judged_by.direction, metric.unit or defn.unit)


def _metric_view(baseline: Baseline, metric: MetricBaseline) -> MetricView:
    return MetricView(
        name=metric.name,
        value=metric.value,
        unit=metric.unit or metric.definition.unit,
        bound=bound_text(baseline, metric),
        hand_set=metric.threshold is not None and not threshold_is_perfgates(metric),
    )


def _selected(kernel: KernelBaseline, patterns: Sequence[str]) -> bool:
    return not patterns or any(
        re.search(p, kernel.id) or re.search(p, kernel.name or "") for p in patterns
    )


def view(baseline: Baseline, patterns: Sequence[str] = ()) -> BaselineView:
    kernels = tuple(
        KernelView(
            id=k.id,
            name=k.name,
            launches=k.launches,
            metrics=tuple(_metric_view(baseline, m) for m in k.metrics),
            history=k.history,
        )
        for k in baseline.kernels
        if _selected(k, patterns)
    )
    return BaselineView(
        baseline.path, baseline.gpu, dict(baseline.provenance), kernels, len(baseline.kernels)
    )


# ------------------------------------------------------------------------------------ diff


@dataclass(frozen=True)
class MetricChange:
    metric: str
    before: Value | None  # None: the metric is new to the kernel
    after: Value | None  # None: no longer gated
    unit: str
    bound_before: str
    bound_after: str
    beyond: bool = True  # moved beyond the old bound (a check would have flagged it)

    @property
    def relative(self) -> float | None:
        if isinstance(self.before, float) and isinstance(self.after, float) and self.before:
            return (self.after - self.before) / abs(self.before)
        return None


@dataclass(frozen=True)
class KernelChange:
    id: str
    kind: str  # "added", "removed", "changed"
    metrics: tuple[MetricChange, ...] = ()
    history: tuple[HistoryEntry, ...] = ()  # entries B has that A had not
    launches: tuple[int | None, int | None] | None = None
    match: tuple[str, str] | None = None  # identity before, after


@dataclass(frozen=True)
class BaselineDiff:
    before: str
    after: str
    fingerprint: tuple[tuple[str, object, object], ...]  # (field, before, after)
    kernels: tuple[KernelChange, ...]
    thresholds: tuple[tuple[str, str, str], ...]  # file-level: (metric, before, after)

    @property
    def identical(self) -> bool:
        return not (self.fingerprint or self.kernels or self.thresholds)


def _pair(a: Baseline, b: Baseline) -> list[tuple[KernelBaseline | None, KernelBaseline | None]]:
    """Kernels of A and B paired by id, then by identity (a re-recorded id can differ)."""
    b_by_id = {k.id: k for k in b.kernels}
    b_by_match = {k.match: k for k in b.kernels}
    used: set[str] = set()
    pairs: list[tuple[KernelBaseline | None, KernelBaseline | None]] = []
    for k in a.kernels:
        other = b_by_id.get(k.id) or b_by_match.get(k.match)
        if other is not None and other.id not in used:
            used.add(other.id)
            pairs.append((k, other))
        else:
            pairs.append((k, None))
    pairs.extend((None, k) for k in b.kernels if k.id not in used)
    return pairs


def _kernel_change(
    a: Baseline, b: Baseline, ka: KernelBaseline, kb: KernelBaseline
) -> KernelChange | None:
    ma = {m.name: m for m in ka.metrics}
    mb = {m.name: m for m in kb.metrics}
    changes = []
    for name in [*ma, *(n for n in mb if n not in ma)]:
        x, y = ma.get(name), mb.get(name)
        before_bound = bound_text(a, x) if x else ""
        after_bound = bound_text(b, y) if y else ""
        if x and y and x.value == y.value and before_bound == after_bound:
            continue
        unit = (y or x).unit or (y or x).definition.unit  # type: ignore[union-attr]
        beyond = True
        if x and y and isinstance(x.value, float) and isinstance(y.value, float):
            defn = x.definition
            moved = compare_metric(ka.id, x, defn, y.value, unit, merged_bounds(defn, x, a))
            beyond = moved.state is not State.PASS or before_bound != after_bound
        changes.append(
            MetricChange(
                name,
                x.value if x else None,
                y.value if y else None,
                unit,
                before_bound,
                after_bound,
                beyond,
            )
        )
    seen = {(h.date, h.reason) for h in ka.history}
    history = tuple(h for h in kb.history if (h.date, h.reason) not in seen)
    launches = (ka.launches, kb.launches) if ka.launches != kb.launches else None
    match = (ka.match.describe(), kb.match.describe()) if ka.match != kb.match else None
    if not (changes or history or launches or match):
        return None
    return KernelChange(kb.id, "changed", tuple(changes), history, launches, match)


def diff(a: Baseline, b: Baseline) -> BaselineDiff:
    fields = ("gpu", "cc", "ncu", "driver", "clock_control", "stall_family")
    fp = tuple(
        (f, getattr(a.gpu, f), getattr(b.gpu, f))
        for f in fields
        if getattr(a.gpu, f) != getattr(b.gpu, f)
    )
    metrics_a, metrics_b = set(a.gpu.metrics), set(b.gpu.metrics)
    if metrics_a != metrics_b:
        fp += (
            (
                "metrics",
                ", ".join(sorted(metrics_a - metrics_b)) or "-",
                ", ".join(sorted(metrics_b - metrics_a)) or "-",
            ),
        )
    kernels: list[KernelChange] = []
    for ka, kb in _pair(a, b):
        if ka is None and kb is not None:
            kernels.append(KernelChange(kb.id, "added", history=kb.history))
        elif kb is None and ka is not None:
            kernels.append(KernelChange(ka.id, "removed"))
        elif ka is not None and kb is not None:
            change = _kernel_change(a, b, ka, kb)
            if change is not None:
                kernels.append(change)
    thresholds = []
    for name in sorted(set(a.thresholds) | set(b.thresholds)):
        x, y = a.thresholds.get(name), b.thresholds.get(name)
        if x != y:
            thresholds.append((name, str(x) if x else "-", str(y) if y else "-"))
    return BaselineDiff(a.path, b.path, fp, tuple(kernels), tuple(thresholds))
