"""`perfgate history detect`: change points over a branch's series, and one run held to the
branch's recent history (the drift rule). The statistics are perfgate.history.changepoints';
this reads the kept runs, groups them into series and says, for each change, which run began
the new level, its commit, and the finding the check gave the kernel in that run.

A series is one kernel's metric on one fingerprint (queries.py says why), oldest first, over
the runs of one branch: main's history is what a change is measured against. Only numbers are
examined; a label (the dominant stall, the occupancy limiter) moves with the numbers that
explain it. Without `--metric`, only the metrics that gate on their own are examined: an
evidence metric (stall cycles, throughput percentages) moves between machine starts of an
unchanged build, and what it explains moves a primary metric too. A change counts against the
build (`--fail-on-change`) when it goes the metric's worse way and the metric gates on its
own (catalog roles), as a check counts it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from perfgate.common.errors import PerfgateError, UsageError
from perfgate.history.base import HistoryStore
from perfgate.history.changepoints import (
    DEFAULT,
    DEFAULT_DRIFT,
    Detection,
    DriftResult,
    DriftRule,
    change_points,
    drift,
    level_medians,
    relative,
)
from perfgate.history.model import Finding, KernelRecord, RunContext, RunFingerprint, RunRecord
from perfgate.metrics.catalog import Role, lookup, role_of
from perfgate.metrics.thresholds import Direction, Noise


class Runs(Protocol):
    """What detection reads of a store (every store has these)."""

    def run_ids(self) -> list[str]: ...

    def load(self, run_id: str) -> RunRecord | None: ...


@dataclass(frozen=True)
class MetricKind:
    exact: bool  # an exact counter: every change of value is a new level
    direction: Direction
    gates: bool  # a primary metric: its change alone counts against the build


def kind_of(metric: str) -> MetricKind:
    try:
        defn = lookup(metric)
    except PerfgateError:  # a name the catalog does not know: a noisy metric, either way
        return MetricKind(False, Direction.ANY_CHANGE, True)
    return MetricKind(defn.noise is Noise.EXACT, defn.direction, defn.role is Role.PRIMARY)


def gates(metric: str, before: float, after: float) -> bool:
    """Whether a move of the metric from `before` to `after` counts on its own, as a check
    counts it: a primary metric, except the time of a kernel under 10 us that moved by 1.5 us
    a launch or less (perfgate.metrics.catalog.role_of: such kernels' times move that much
    between machine starts of an unchanged build)."""
    if not kind_of(metric).gates:
        return False
    if metric == "duration":
        return role_of(metric, before, abs(after - before)) is Role.PRIMARY
    return True


def drift_gates(metric: str, result: DriftResult, value: float) -> bool:
    """Whether a flagged drift counts on its own: the value's move where it was flagged by
    itself, else the move of the newest runs' mean that flagged it."""
    if result.alone or result.level is None:
        return gates(metric, result.median, value)
    return gates(metric, result.level.median, result.level.mean)


def is_worse(change: float, direction: Direction) -> bool:
    if direction is Direction.HIGHER_IS_WORSE:
        return change > 0
    if direction is Direction.LOWER_IS_WORSE:
        return change < 0
    return change != 0


@dataclass(frozen=True)
class RunPoint:
    """One run's value of a series, with what the check said of the kernel in that run."""

    run_id: str
    recorded_at: str
    commit: str | None
    branch: str | None
    value: float
    kernel_state: str
    finding: Finding | None
    machine_start: str | None = None  # the run's (model.ResultRecord.machine_start)


@dataclass(frozen=True)
class KeptSeries:
    fingerprint: RunFingerprint
    kernel: str
    name: str  # as ncu printed it in the newest run
    metric: str
    unit: str
    points: tuple[RunPoint, ...]  # oldest first

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


@dataclass(frozen=True)
class ChangePoint:
    series: KeptSeries
    index: int  # the first run of the new level, in the series
    before: float  # the median of the level before
    after: float  # ... and of the new one
    change: float  # relative: (after - before) / |before|
    worse: bool  # in the metric's worse direction
    gates: bool  # worse, and the metric gates on its own

    @property
    def first(self) -> RunPoint:
        return self.series.points[self.index]


@dataclass(frozen=True)
class DriftFlag:
    series: KeptSeries  # the branch's runs the value was held to, oldest first
    run: RunPoint  # the run judged
    result: DriftResult
    gates: bool
    own_start: bool = False  # held to the runs of its own machine start only (held_points)


def held_points(
    points: Sequence[RunPoint], start: str | None, rule: DriftRule
) -> tuple[tuple[RunPoint, ...], bool]:
    """The earlier runs a run is held to, and whether they are its own machine start's: those
    of its start where the start is known and holds `rule.min_runs` of them, else every run on
    the fingerprint. Why: a card runs a short kernel a few percent fast or slow in every run of
    a start (docs/history.md), so across starts a +5% step can hide in the card's offset; a
    runner that keeps its card and boot (a self-hosted runner) has no such offset within its
    own runs. A new boot or another card is a new start: the fingerprint's runs judge it until
    the start holds enough of its own."""
    if start is not None:
        mine = tuple(p for p in points if p.machine_start == start)
        if len(mine) >= rule.min_runs:
            return mine, True
    return tuple(points), False


@dataclass(frozen=True)
class Detected:
    branch: str | None
    series: int  # how many series were examined
    runs: int  # runs of the branch read
    change_points: tuple[ChangePoint, ...]
    drifts: tuple[DriftFlag, ...] = ()
    judged: RunContext | None = None  # --drift: the run held to the branch's history

    @property
    def failing(self) -> bool:
        return any(c.gates for c in self.change_points) or any(d.gates for d in self.drifts)


@dataclass(frozen=True)
class DetectRequest:
    kernels: tuple[str, ...] = ()  # baseline ids; none: every kernel
    metric: str | None = None
    branch: str | None = "main"  # None: every run, whatever its branch
    last: int | None = None  # only change points among each series' last N runs
    drift: bool = False
    run_id: str | None = None  # --drift: the run judged (default: the newest kept)
    detection: Detection = DEFAULT
    rule: DriftRule = DEFAULT_DRIFT


SeriesKey = tuple[str, str, str]  # fingerprint key, kernel, metric


@dataclass
class _Growing:
    fingerprint: RunFingerprint
    name: str
    unit: str
    points: list[RunPoint]


def _wanted(request: DetectRequest, kernel: KernelRecord) -> bool:
    return not request.kernels or kernel.kernel in request.kernels


def _points(record: RunRecord, request: DetectRequest) -> Iterable[tuple[SeriesKey, _Growing]]:
    ctx = record.context
    for result in record.results:
        fp = result.fingerprint
        start = result.machine_start
        for k in result.kernels:
            if not _wanted(request, k):
                continue
            for m in k.metrics:
                if not isinstance(m.value, float):
                    continue
                if request.metric is None and not kind_of(m.metric).gates:
                    continue  # evidence alone gates nothing: examined when --metric names it
                if request.metric is not None and m.metric != request.metric:
                    continue
                point = RunPoint(
                    ctx.run_id, ctx.recorded_at, ctx.commit, ctx.branch, m.value, k.state,
                    k.finding, start,
                )  # fmt: skip
                yield (fp.key(), k.kernel, m.metric), _Growing(fp, k.name, m.unit, [point])


def _series(records: Iterable[RunRecord], request: DetectRequest) -> dict[SeriesKey, KeptSeries]:
    grown: dict[SeriesKey, _Growing] = {}
    for record in records:
        for key, one in _points(record, request):
            kept = grown.get(key)
            if kept is None:
                grown[key] = one
            else:
                kept.points.extend(one.points)
                kept.name, kept.unit = one.name, one.unit  # the newest run's
    return {
        key: KeptSeries(g.fingerprint, key[1], g.name, key[2], g.unit, tuple(g.points))
        for key, g in sorted(grown.items())
    }


def _on_branch(record: RunRecord, branch: str | None) -> bool:
    return branch is None or record.context.branch == branch


def _records(store: Runs) -> list[RunRecord]:
    out = []
    for run_id in store.run_ids():
        record = store.load(run_id)
        if record is not None:
            out.append(record)
    return out


def _check_found(request: DetectRequest, found: dict[SeriesKey, KeptSeries], where: str) -> None:
    on = f" on branch {request.branch}" if request.branch is not None else ""
    kernels = {key[1] for key in found}
    for kernel in request.kernels:
        if kernel not in kernels:
            raise UsageError(f"no runs of kernel {kernel!r}{on} in this history", where)
    if request.metric is not None and not found:
        raise UsageError(f"no numbers of metric {request.metric!r}{on} in this history", where)


def series_changes(s: KeptSeries, detection: Detection = DEFAULT) -> list[ChangePoint]:
    """The change points of one series, each with the levels either side."""
    kind = kind_of(s.metric)
    values = s.values
    cuts = change_points(values, exact=kind.exact, detection=detection)
    out = []
    for cut in cuts:
        before, after = level_medians(values, cuts, cut)
        change = relative(after, before)
        worse = is_worse(change, kind.direction)
        counts = worse and gates(s.metric, before, after)
        out.append(ChangePoint(s, cut, before, after, change, worse, counts))
    return out


def detect(store: Runs, request: DetectRequest, where: str) -> Detected:
    """Change points over the branch's series (or, with request.drift, one run held to the
    branch's recent history). `where` names the history in messages."""
    records = _records(store)
    if request.drift:
        return _drift(records, request, where)
    on_branch = [r for r in records if _on_branch(r, request.branch)]
    found = _series(on_branch, request)
    _check_found(request, found, where)
    changes: list[ChangePoint] = []
    for s in found.values():
        for c in series_changes(s, request.detection):
            if request.last is None or c.index >= len(s.points) - request.last:
                changes.append(c)
    changes.sort(key=lambda c: (c.first.recorded_at, c.first.run_id, c.series.kernel))
    return Detected(request.branch, len(found), len(on_branch), tuple(changes))


def _judged(records: Sequence[RunRecord], request: DetectRequest, where: str) -> int:
    if request.run_id is None:
        if not records:
            raise UsageError("no runs in this history", where)
        return len(records) - 1
    for i, r in enumerate(records):
        if r.context.run_id == request.run_id:
            return i
    raise UsageError(f"no run {request.run_id!r} in this history", where)


def _drift(records: Sequence[RunRecord], request: DetectRequest, where: str) -> Detected:
    at = _judged(records, request, where)
    judged = records[at]
    earlier = [r for r in records[:at] if _on_branch(r, request.branch)]
    history = _series(earlier, request)
    this_run = _series([judged], request)
    _check_found(request, this_run, where)
    flags = []
    for key, one in this_run.items():
        kept = history.get(key)
        point = one.points[0]
        if kept is None:
            continue
        flag = _held(kept, point, request.rule)
        if flag is not None:
            flags.append(flag)
    return Detected(request.branch, len(this_run), len(earlier), (), tuple(flags), judged.context)


def _held(kept: KeptSeries, run: RunPoint, rule: DriftRule) -> DriftFlag | None:
    """`run` held to the earlier runs `kept` (its own start's where held_points says so),
    by `rule` or, for an exact counter, by the rule of any move; None unless it drifted."""
    kind = kind_of(kept.metric)
    if kind.exact:  # a counter that does not move between runs: any move is one
        rule = rule.exact()
    points, own = held_points(kept.points, run.machine_start, rule)
    held = replace(kept, points=points)
    got = drift(held.values, run.value, kind.direction, rule)
    if got is None or not got.drifted:
        return None
    return DriftFlag(held, run, got, drift_gates(kept.metric, got, run.value), own)


def run_detect(db: str, request: DetectRequest) -> Detected:
    """The use case: open the history `db` names (it must exist) and detect."""
    from perfgate.history.store import open_store

    with open_store(db, create=False) as store:
        return detect(store, request, db)


def held_to_history(
    record: RunRecord,
    store: HistoryStore,
    *,
    branch: str | None = "main",
    rule: DriftRule = DEFAULT_DRIFT,
) -> tuple[DriftFlag, ...]:
    """A check's run (`from_report` of a check just made, kept or not) held to the branch's
    recent history, as `history detect --drift --run` holds a kept one: each metric that
    gates on its own, against the runs of the branch on the same fingerprint recorded before
    it. Each series is read alone (one range of the series' index, queries.series), not every
    run loaded: a check of a few dozen kernels reads a few dozen series."""
    from perfgate.history.queries import series

    ctx = record.context
    flags: list[DriftFlag] = []
    for result in record.results:
        fp = result.fingerprint.key()
        for k in result.kernels:
            for m in k.metrics:
                kind = kind_of(m.metric)
                if not isinstance(m.value, float) or not kind.gates:
                    continue
                kept = next(
                    (s for s in series(store, k.kernel, m.metric) if s.fingerprint.key() == fp),
                    None,
                )
                if kept is None:
                    continue
                # A series reads each run's metric state, not its kernel's: the state shown.
                earlier = [
                    RunPoint(p.run_id, p.recorded_at, p.commit, p.branch, p.value, p.state,
                             _finding(p.finding, p.finding_title), p.machine_start)
                    for p in kept.points
                    if isinstance(p.value, float)
                    and (branch is None or p.branch == branch)
                    and (p.recorded_at, p.run_id) < (ctx.recorded_at, ctx.run_id)
                ]  # fmt: skip
                run = RunPoint(ctx.run_id, ctx.recorded_at, ctx.commit, ctx.branch, m.value,
                               k.state, k.finding, result.machine_start)  # fmt: skip
                history = KeptSeries(result.fingerprint, k.kernel, kept.name, m.metric, m.unit,
                                     tuple(earlier))  # fmt: skip
                flag = _held(history, run, rule)
                if flag is not None:
                    flags.append(flag)
    # In `detect --drift`'s order: by fingerprint, kernel, metric.
    return tuple(sorted(flags, key=_order))


def _order(flag: DriftFlag) -> tuple[str, str, str]:
    return flag.series.fingerprint.key(), flag.series.kernel, flag.series.metric


def _finding(mechanism: str | None, title: str | None) -> Finding | None:
    """A point's finding as a series keeps it (its lever is not read with a series)."""
    return None if mechanism is None or title is None else Finding(mechanism, title, "")
