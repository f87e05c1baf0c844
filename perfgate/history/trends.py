"""Series gathered for pictures: every kernel's series of one baseline from the runs a store
keeps (the HTML page, html.py), and the series of the metrics a check just failed, from the
history on the same fingerprint plus this run (the pull-request report's trends).

Change points are plain data here: a finder maps a metric's numbers to the indexes of the
first number of each new level (`detected`: perfgate.history.changepoints), and
`change_indexes` turns those into indexes of the series' points (a run whose value is a label
or unknown has no number)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from perfgate.common.errors import PerfgateError, UsageError
from perfgate.history.base import HistoryStore
from perfgate.history.model import MetricRecord, RunContext, RunFingerprint, RunRecord
from perfgate.history.queries import Point, Series, series
from perfgate.history.records import fingerprint, value
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.policy import passes_quietly
from perfgate.metrics.catalog import lookup
from perfgate.metrics.thresholds import Noise
from perfgate.verdicts.model import Report

# (metric, a series' numbers) -> the indexes among them where a new level starts.
ChangePointFinder = Callable[[str, Sequence[float]], list[int]]

TREND_RUNS = 30  # earlier runs a pull request's trend shows before this run
TRENDS_PER_KERNEL = 3  # a kernel's failing metrics drawn, in its comparisons' order


def no_change_points(metric: str, numbers: Sequence[float]) -> list[int]:
    """The finder used when none is given: no change points marked."""
    del metric, numbers
    return []


def detected(metric: str, numbers: Sequence[float]) -> list[int]:
    """The change points perfgate.history.changepoints finds (`history detect`'s): for an
    exact counter (registers, sectors) every change of value is a new level."""
    from perfgate.history.changepoints import change_points

    try:
        exact = lookup(metric).noise is Noise.EXACT
    except PerfgateError:  # a name the catalog does not know: judged as a noisy metric
        exact = False
    return change_points(numbers, exact=exact)


def change_indexes(s: Series, finder: ChangePointFinder) -> list[int]:
    """Indexes into `s.points` of the runs where the finder sees a new level begin."""
    numbered = [i for i, p in enumerate(s.points) if isinstance(p.value, float)]
    found = finder(s.metric, [p.value for p in s.points if isinstance(p.value, float)])
    return [numbered[i] for i in found if 0 <= i < len(numbered)]


@dataclass(frozen=True)
class KernelTrends:
    kernel: str
    name: str  # as ncu printed it in the newest run
    series: tuple[Series, ...]  # by fingerprint, then metric


@dataclass(frozen=True)
class BaselineTrends:
    baseline: str  # the baseline's path as the checks named it
    runs: int  # runs drawn: the newest that checked it
    kept: int  # runs the history keeps that checked it
    first: str  # when the oldest and the newest drawn were recorded
    last: str
    kernels: tuple[KernelTrends, ...]  # by kernel id


PAGE_RUNS = 60  # the newest runs a page draws: a 460-pixel chart shows each run apart


def _point(record: RunRecord, m: MetricRecord) -> Point:
    ctx = record.context
    baseline = m.baseline if isinstance(m.baseline, float) else None
    return Point(ctx.run_id, ctx.recorded_at, ctx.commit, ctx.branch, m.state, m.value,
                 baseline, m.bound)  # fmt: skip


def baselines_kept(records: Iterable[RunRecord]) -> list[str]:
    return sorted({r.baseline for record in records for r in record.results})


def _same_baseline(kept: str, asked: str) -> bool:
    return kept == asked or os.path.normpath(kept) == os.path.normpath(asked)


def _chosen(kept: Sequence[str], baseline: str | None) -> str:
    """The baseline a page draws, as the checks named it, among those `kept`."""
    if baseline is None:
        if len(kept) != 1:
            held = f"{len(kept)} baselines: {', '.join(kept)}" if kept else "no runs"
            raise UsageError(f"the history holds {held}; name one with -b")
        return kept[0]
    chosen = next((b for b in kept if _same_baseline(b, baseline)), None)
    if chosen is None:
        raise UsageError(
            f"no run of the history checked baseline {baseline} (it holds "
            f"{', '.join(kept) or 'no runs'})"
        )
    return chosen


def baseline_trends(
    records: Sequence[RunRecord], baseline: str | None, last: int = PAGE_RUNS
) -> BaselineTrends:
    """Every kernel's series of one baseline over the newest `last` of `records` (oldest
    first; 0: all) that checked it. Without a baseline named, the history must hold exactly
    one."""
    chosen = _chosen(baselines_kept(records), baseline)
    checked = [r for r in records if any(x.baseline == chosen for x in r.results)]
    runs = checked[-last:] if last > 0 else checked
    return _trends(runs, chosen, len(checked))


def page_trends(store: HistoryStore, baseline: str | None, last: int = PAGE_RUNS) -> BaselineTrends:
    """baseline_trends over a store, loading only the newest `last` runs that checked the
    baseline (0: all): a history of a year of merges is thousands of runs, and a page draws
    60 (`perfgate history html --last`)."""
    chosen = _chosen(store.baselines(), baseline)
    ids = store.run_ids_of(chosen)
    wanted = ids[-last:] if last > 0 else ids
    # A run pruned between the two reads loads as None: the page draws the others.
    runs = [r for r in map(store.load, wanted) if r is not None]
    if not runs:
        raise UsageError(f"no run of the history checked baseline {chosen} (pruned meanwhile)")
    return _trends(runs, chosen, len(ids))


def _trends(runs: Sequence[RunRecord], chosen: str, kept: int) -> BaselineTrends:
    """The series of baseline `chosen` in `runs` (oldest first), of `kept` that checked it."""
    points: dict[tuple[str, str, str], list[Point]] = {}
    about: dict[tuple[str, str, str], tuple[str, str, RunFingerprint]] = {}
    for record in runs:
        for result in (r for r in record.results if r.baseline == chosen):
            fp_key = result.fingerprint.key()
            for k in result.kernels:
                for m in k.metrics:
                    key = (k.kernel, fp_key, m.metric)
                    points.setdefault(key, []).append(_point(record, m))
                    about[key] = (k.name, m.unit, result.fingerprint)
    by_kernel: dict[str, list[Series]] = {}
    for key in sorted(points):
        kernel, _, metric = key
        name, unit, fp = about[key]
        by_kernel.setdefault(kernel, []).append(
            Series(kernel, name, metric, unit, fp, tuple(points[key]))
        )
    kernels = tuple(KernelTrends(k, s[-1].name, tuple(s)) for k, s in by_kernel.items())
    first, newest = runs[0].context.recorded_at, runs[-1].context.recorded_at
    return BaselineTrends(chosen, len(runs), kept, first, newest, kernels)


@dataclass(frozen=True)
class Trend:
    """A metric a check failed, over the history's runs on this run's fingerprint and then
    this run (the last point)."""

    baseline: str
    kernel: str
    metric: str
    series: Series


def _drawn(comparisons: Sequence[Comparison], failing: Sequence[Comparison]) -> list[Comparison]:
    """The metrics a kernel's trend draws: those that failed, else those that improved; only
    numbers (a label has no line)."""
    numeric = [c for c in failing if isinstance(value(c.current), float)]
    if not numeric:
        numeric = [
            c
            for c in comparisons
            if c.state is State.IMPROVED and isinstance(value(c.current), float)
        ]
    return numeric[:TRENDS_PER_KERNEL]


def check_trends(
    report: Report,
    store: HistoryStore,
    context: RunContext,
    *,
    runs: int = TREND_RUNS,
) -> list[Trend]:
    """For each kernel of `report` that did not pass quietly, its failing metrics over the
    newest `runs` runs the history keeps on the same fingerprint, then this run. A metric with
    no earlier run there has no trend."""
    out = []
    for result in report.results:
        fp = fingerprint(result.baseline_gpu, result.devices, result.capture_paths)
        for v in result.verdicts:
            if passes_quietly(v.state):
                continue
            for c in _drawn(v.comparisons, v.failing):
                found = [s for s in series(store, v.kernel, c.metric) if s.fingerprint == fp]
                earlier = [p for s in found for p in s.points if p.run_id != context.run_id]
                if not earlier:
                    continue
                now = Point(
                    context.run_id, context.recorded_at, context.commit, context.branch,
                    c.state.value, value(c.current), _number(c.baseline), c.bound,
                )  # fmt: skip
                points = (*earlier[-runs:], now)
                out.append(
                    Trend(result.baseline_path, v.kernel, c.metric,
                          Series(v.kernel, v.name, c.metric, c.unit, fp, points))
                )  # fmt: skip
    return out


def _number(v: object) -> float | None:
    got = value(v)
    return got if isinstance(got, float) else None
