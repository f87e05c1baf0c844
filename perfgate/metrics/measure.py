"""From a kernel's launches to one value per logical metric: the median, with its spread."""

from __future__ import annotations

import functools
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import isfinite

from perfgate.common.frozen import maker
from perfgate.ingest.launches import RULE_PREFIX, Launch, Value, cc_version
from perfgate.metrics.catalog import Aggregate, Formula, MetricDef, StallKind
from perfgate.metrics.columns import KernelRows, LaunchTable, Stats
from perfgate.metrics.stalls import (
    FAMILY_BY_NAME,
    GROUP_TITLES,
    ISSUING,
    NOT_STALLS,
    StallFamily,
    cycles_from,
    present_reasons,
    shares_by_name,
)
from perfgate.metrics.thresholds import Direction


@dataclass(frozen=True)
class Measured:
    metric: str
    value: float | str
    low: float | None  # the smallest and largest per-launch value (numeric metrics)
    high: float | None
    launches: int  # launches that had a value
    source: str  # the formula used
    group: str
    unit: str
    shares: dict[str, float] | None = None  # dominant stall: median share of every reason
    # Stall metrics: the reasons the value was computed over (part of the measurement: a
    # baseline's set is passed back to measure() so a check compares like with like) and the
    # stall family (perfgate.metrics.stalls) it was read from.
    reasons: tuple[str, ...] = ()
    family: str = ""


@dataclass(frozen=True)
class Unavailable:
    metric: str
    reason: str
    needed: tuple[str, ...] = ()
    # True when no formula of the metric applies to the capture's architecture at all (no
    # DRAM counters on CC 12.1, say): nothing is missing that a capture could have held.
    architecture: bool = False


def _unit(defn: MetricDef, launches: Sequence[Launch]) -> str:
    if not defn.raw:
        return defn.unit
    return next((launch.units.get(defn.name, "") for launch in launches), "")


def _missing_reason(defn: MetricDef, group: str | None) -> str:
    if group is not None and not defn.formulas_for(group):
        return f"no formula of group {group!r}"
    if len({f.group for f in defn.formulas}) > 1 and group is not None:
        # The metric's own raw sources: the group names ("counters") are shared by every
        # metric, and the stall families' titles describe only the stall metrics.
        sources = (
            GROUP_TITLES[group]
            if defn.stall is not None and group in GROUP_TITLES
            else " or ".join(f.text for f in defn.formulas_for(group))
        )
        return (
            f"the baseline's values come from {sources}, which this capture does not hold; "
            "capture with the same metrics as the baseline"
        )
    return "the capture does not hold the raw metrics it needs"


# (id(defn), columns, cc, group) -> (defn, the formula it resolves to). A check asks the same
# few dozen metrics of every kernel with one set of columns: 37,000 resolutions for 1,000
# kernels, each a walk over formulas and their inputs. The definition is kept in the value so
# that a reused id() never answers for another one.
_ResolveKey = tuple[int, frozenset[str], str | None, str | None]
_RESOLVED: dict[_ResolveKey, tuple[MetricDef, Formula | None]] = {}


def _resolve(
    defn: MetricDef, columns: frozenset[str], cc: str | None, group: str | None
) -> Formula | None:
    key = (id(defn), columns, cc, group)
    hit = _RESOLVED.get(key)
    if hit is not None and hit[0] is defn:
        return hit[1]
    formula = defn.resolve(columns, cc, group)
    if len(_RESOLVED) > 4096:
        _RESOLVED.clear()
    _RESOLVED[key] = (defn, formula)
    return formula


def measure(
    defn: MetricDef,
    launches: Sequence[Launch],
    columns: frozenset[str],
    group: str | None = None,
    reasons: tuple[str, ...] | None = None,
    rows: KernelRows | None = None,
) -> Measured | Unavailable:
    """The kernel-level value of `defn` over `launches`; `group` pins the formula's group
    (a check measures in the group its baseline was recorded in). For stall metrics,
    `reasons` pins the reason set (the baseline's `Measured.reasons`): shares are computed
    over exactly that set, and a reason the capture lacks makes the metric unavailable.
    `rows`: the same launches in a column table (perfgate.metrics.columns), asked first by the
    metric's column_route.

    The routes, first that applies: no formula fits the capture (unavailable); a count or
    total per capture file; the column table; a stall metric's per-launch shares; the other
    metrics' per-launch values."""
    cc = rows.cc if rows is not None else next((la.cc for la in launches if la.cc), None)
    formula = _formula(defn, columns, cc, group)
    if formula is None:
        return _unresolved(defn, cc, group)
    if defn.per_capture:
        return _per_capture(defn, formula, launches)
    if rows is not None:
        columnar = _from_columns(defn, columns, cc, group, reasons, rows)
        if columnar is not None:
            return columnar
    if defn.stall is not None and formula.family:
        family = FAMILY_BY_NAME[formula.family]
        return _stall(defn, formula, family, launches, columns, reasons, rows)
    return _per_launch(defn, formula, launches)


def _formula(
    defn: MetricDef, columns: frozenset[str], cc: str | None, group: str | None
) -> Formula | None:
    # Only a frozenset is hashable for the cache; a caller may pass another set.
    if isinstance(columns, frozenset):
        return _resolve(defn, columns, cc, group)
    return defn.resolve(columns, cc, group)


def _unresolved(defn: MetricDef, cc: str | None, group: str | None) -> Unavailable:
    """Why no formula of `defn` fits: none is for the capture's architecture at all, or
    the capture lacks the raw metrics the formula (of the pinned group) needs."""
    version = cc_version(cc)
    if version is not None and not any(f.for_cc(version) for f in defn.formulas):
        return Unavailable(defn.name, f"not measured on compute capability {cc}", architecture=True)
    candidates = defn.formulas_for(group) or defn.formulas
    return Unavailable(
        defn.name, _missing_reason(defn, group), candidates[0].inputs if candidates else ()
    )


def _from_columns(
    defn: MetricDef,
    columns: frozenset[str],
    cc: str | None,
    group: str | None,
    reasons: tuple[str, ...] | None,
    rows: KernelRows,
) -> Measured | None:
    """The value from the column table by the metric's column_route; None where it has no
    route, or no launch of the kernel has a value there (the per-launch path words why)."""
    route = column_route(defn, columns, cc, group, reasons)
    if route is None:
        return None
    stats = route.stats(rows.table)
    if stats is None or not stats[rows.group][0]:
        return None
    return route.measured(defn.name, stats[rows.group])


def _per_launch(
    defn: MetricDef, formula: Formula, launches: Sequence[Launch]
) -> Measured | Unavailable:
    """The formula on each launch: the most common label of a MODE metric (or of a raw
    metric ncu writes as text), else the median (or the best launch) of the numbers."""
    values = [formula.compute(launch.metrics) for launch in launches]
    present = [v for v in values if v is not None]
    if not present:
        return Unavailable(
            defn.name, f"no launch has a value for {formula.text} (n/a or empty)", formula.inputs
        )
    unit = _unit(defn, launches)
    if defn.aggregate is Aggregate.MODE:
        return _most_common(defn, formula, present, unit)
    numbers = [float(v) for v in present if isinstance(v, float)]
    if numbers:
        value = _best(defn, numbers) if defn.aggregate is Aggregate.FASTEST else _median(numbers)
        return Measured(defn.name, value, min(numbers), max(numbers), len(numbers),
                        formula.text, formula.group, unit)  # fmt: skip
    if defn.raw:
        # A raw metric that ncu writes as text (launch__func_cache_config): compare as a label.
        return _most_common(defn, formula, present, unit)
    texts = sorted({str(v) for v in present})
    return Unavailable(
        defn.name, f"the values are not numbers: {', '.join(texts[:3])}", formula.inputs
    )


def _most_common(
    defn: MetricDef, formula: Formula, present: Sequence[object], unit: str
) -> Measured:
    """The label most launches read (the first of them on a tie)."""
    top_label, _ = Counter(str(v) for v in present).most_common(1)[0]
    return Measured(
        defn.name, top_label, None, None, len(present), formula.text, formula.group, unit
    )


# What the column path computes: numbers only (the per-launch path words a text's refusal).
# A tuple: `in` compares by identity first, where a set would hash the enum in Python code.
_COLUMNAR = (Aggregate.MEDIAN, Aggregate.FASTEST)
_measured = maker(Measured)


def _median(numbers: list[float]) -> float:
    """statistics.median(numbers), step for step (the same value to the last bit), without
    its generic checks: a check takes 50,000 of them."""
    data = sorted(numbers)
    n = len(data)
    if not n:
        return statistics.median(data)  # its StatisticsError
    if n % 2 == 1:
        return data[n // 2]
    i = n // 2
    return (data[i - 1] + data[i]) / 2


def _best(defn: MetricDef, numbers: list[float]) -> float:
    """The best launch: the fastest time, the highest rate."""
    return max(numbers) if defn.direction is Direction.LOWER_IS_WORSE else min(numbers)


def _per_capture(defn: MetricDef, formula: Formula, launches: Sequence[Launch]) -> Measured:
    """Count or total over each capture file's launches, then the median over the files: one
    file is one captured run, so a kernel launched twice per run reads 2 whatever the number
    of runs merged. The total is launches x the fastest launch of the file: a plain sum would
    carry every launch's one-sided interference noise (seen +5% on one launch of three)."""
    values: dict[str, list[float]] = {}
    for launch in launches:
        v = formula.compute(launch.metrics)
        if isinstance(v, float):
            values.setdefault(launch.source, []).append(v)
    if defn.aggregate is Aggregate.COUNT:
        numbers = [float(len(v)) for v in values.values()] or [0.0]
    else:
        numbers = [len(v) * min(v) for v in values.values()] or [0.0]
    return Measured(
        defn.name,
        statistics.median(numbers),
        min(numbers),
        max(numbers),
        len(launches),
        formula.text,
        formula.group,
        defn.unit,
    )


def _cpi(
    family: StallFamily, values: Mapping[str, Value], stalled: str, issuing: str
) -> float | None:
    """cycles_from() of one launch, its common case (both finite, instructions issued) done
    here: a check of 1,000 kernels asks 150,000 of them."""
    raw, issued = values.get(stalled), values.get(issuing)
    if (
        not family.per_instruction
        and isinstance(raw, float)
        and isinstance(issued, float)
        and isfinite(raw)
        and isfinite(issued)
        and issued != 0
    ):
        return raw / issued
    return cycles_from(family, raw, issued)


# (family, reasons, columns) -> the reasons whose column the capture lacks. Every kernel of a
# check asks it of the same baseline reason set, once per stall metric.
_LACKING: dict[tuple[str, tuple[str, ...], frozenset[str]], list[str]] = {}


def _lacking(family: StallFamily, chosen: tuple[str, ...], columns: frozenset[str]) -> list[str]:
    if not isinstance(columns, frozenset):
        return [r for r in chosen if family.metric(r) not in columns]
    key = (family.name, chosen, columns)
    hit = _LACKING.get(key)
    if hit is None:
        if len(_LACKING) > 4096:
            _LACKING.clear()
        hit = _LACKING[key] = [r for r in chosen if family.metric(r) not in columns]
    return list(hit)


def _stall(
    defn: MetricDef,
    formula: Formula,
    family: StallFamily,
    launches: Sequence[Launch],
    columns: frozenset[str],
    reasons: tuple[str, ...] | None,
    rows: KernelRows | None = None,
) -> Measured | Unavailable:
    if defn.stall is not StallKind.CPI and reasons is None:
        cc = rows.cc if rows is not None else next((la.cc for la in launches if la.cc), None)
        reasons = present_reasons(family, columns, cc, [la.metrics for la in launches])
    chosen = _chosen(defn, family, columns, reasons)
    if isinstance(chosen, Unavailable):
        return chosen
    unit = defn.unit
    if rows is not None and defn.stall is StallKind.DOMINANT:
        dominant = _dominant_columns(defn, formula, family, chosen, rows)
        if dominant is not None:
            return dominant
    if defn.stall is StallKind.CPI:
        stalled, issuing = family.metric(defn.reason), family.metric(ISSUING)
        values = [_cpi(family, la.metrics, stalled, issuing) for la in launches]
        numbers = [v for v in values if v is not None]
        if not numbers:
            return Unavailable(
                defn.name, f"no launch has a value for {formula.text} (n/a or empty)",
                formula.inputs,
            )  # fmt: skip
        return Measured(defn.name, _median(numbers), min(numbers), max(numbers),
                        len(numbers), formula.text, formula.group, unit, reasons=chosen,
                        family=family.name)  # fmt: skip
    names = [(r, family.metric(r)) for r in chosen if r not in NOT_STALLS]
    vectors = [v for v in (shares_by_name(names, la.metrics) for la in launches) if v]
    if not vectors:
        return Unavailable(
            defn.name,
            f"no launch has a value for every stall reason of {', '.join(chosen)} "
            "(n/a, empty or nothing stalled)",
            tuple(family.metric(r) for r in chosen),
        )
    medians = {r: statistics.median(vec.get(r, 0.0) for vec in vectors) for r in chosen}
    if defn.stall is StallKind.DOMINANT:
        top = max(medians, key=lambda r: (medians[r], r))
        return Measured(defn.name, top, None, None, len(vectors), formula.text, formula.group,
                        unit, medians, reasons=chosen, family=family.name)  # fmt: skip
    own = [vec[defn.reason] for vec in vectors]
    return Measured(defn.name, medians[defn.reason], min(own), max(own), len(own), formula.text,
                    formula.group, unit, reasons=chosen, family=family.name)  # fmt: skip


def _chosen(
    defn: MetricDef, family: StallFamily, columns: frozenset[str], reasons: tuple[str, ...] | None
) -> tuple[str, ...] | Unavailable:
    """The reasons a stall metric is computed over: the given set (the baseline's), or for
    one reason's cycles per instruction without a set, that reason when its column is
    there."""
    chosen: tuple[str, ...]
    if reasons is None:
        # One reason's cycles per instruction need no reason set: only its own column.
        chosen = (defn.reason,) if family.metric(defn.reason) in columns else ()
    else:
        chosen = tuple(reasons)
        lacking = _lacking(family, chosen, columns)
        if lacking:
            return Unavailable(
                defn.name,
                f"the baseline's stall reasons include {', '.join(lacking)}, which this "
                f"capture's {family.template.format(reason='<reason>')} columns lack; "
                "capture the same stall reasons as the baseline",
                tuple(family.metric(r) for r in lacking),
            )
    if defn.stall is not StallKind.DOMINANT and defn.reason not in chosen:
        return Unavailable(
            defn.name,
            f"'{defn.reason}' is not among the stall reasons measured ({', '.join(chosen)})",
            (family.metric(defn.reason),),
        )
    return chosen


@dataclass(frozen=True)
class ColumnRoute:
    """Where a numeric metric's kernel-level value comes from in a column table, worked out
    once for every kernel measured alike (the same columns, compute capability, formula
    group and reason set): what measure() with `rows` computes, without its per-call work,
    for a check that asks it of 1,000 kernels (perfgate.verdicts.check)."""

    stats: Callable[[LaunchTable], list[Stats] | None]  # per group of the table
    fastest: Direction | None  # FASTEST metrics: the direction picking the best launch
    source: str
    group: str
    unit: str
    reasons: tuple[str, ...] = ()
    family: str = ""

    def value(self, stats: Stats) -> float:
        if self.fastest is None:
            return stats[1]
        return stats[3] if self.fastest is Direction.LOWER_IS_WORSE else stats[2]

    def measured(self, metric: str, stats: Stats) -> Measured:
        count, _, low, high = stats
        return _measured(metric=metric, value=self.value(stats), low=low, high=high,
                         launches=count, source=self.source, group=self.group, unit=self.unit,
                         reasons=self.reasons, family=self.family)  # fmt: skip


def column_route(
    defn: MetricDef,
    columns: frozenset[str],
    cc: str | None,
    group: str | None,
    reasons: tuple[str, ...] | None,
) -> ColumnRoute | None:
    """The ColumnRoute of a numeric metric, or None where measure() takes another path
    (a label, a per-capture count, a raw metric with the capture's unit, a metric the
    capture cannot give): ask measure() then."""
    formula = _resolve(defn, columns, cc, group)
    if formula is None or defn.per_capture or defn.raw or defn.categorical:
        return None
    if defn.stall is not None and formula.family:
        family = FAMILY_BY_NAME[formula.family]
        if defn.stall is not StallKind.CPI and reasons is None:
            return None  # the reasons would come from the launches' values
        chosen = _chosen(defn, family, columns, reasons)
        if isinstance(chosen, Unavailable):
            return None
        reason = defn.reason
        stats: Callable[[LaunchTable], list[Stats] | None]
        if defn.stall is StallKind.CPI:
            stats = functools.partial(LaunchTable.cpi_stats, family=family, reason=reason)
        else:
            stats = functools.partial(
                LaunchTable.share_stats, family=family, chosen=chosen, reason=reason
            )
        return ColumnRoute(stats, None, formula.text, formula.group, defn.unit, chosen,
                           family.name)  # fmt: skip
    if defn.stall is not None or formula.columnar is None or defn.aggregate not in _COLUMNAR:
        return None
    fastest = defn.direction if defn.aggregate is Aggregate.FASTEST else None
    spec = formula.columnar
    return ColumnRoute(
        functools.partial(LaunchTable.formula_stats, spec=spec),
        fastest,
        formula.text,
        formula.group,
        defn.unit,
    )


def _dominant_columns(
    defn: MetricDef,
    formula: Formula,
    family: StallFamily,
    chosen: tuple[str, ...],
    rows: KernelRows,
) -> Measured | None:
    """The dominant stall from the column table's shares; None leaves it to the per-launch
    path. (Numeric stall metrics come from column_route.)"""
    got = rows.shares(family, chosen)
    if got is None:
        return None
    count, per_reason = got
    medians = {r: per_reason[r][1] for r in chosen}
    top = max(medians, key=lambda r: (medians[r], r))
    return Measured(defn.name, top, None, None, count, formula.text, formula.group,
                    defn.unit, medians, reasons=chosen, family=family.name)  # fmt: skip


def rule_speedups(launches: Sequence[Launch]) -> dict[str, float]:
    """NCU's estimated speedup (%) per rule that fired, median over the launches it fired in
    (.ncu-rep captures with sections only): a later check says which rules newly fire."""
    by_rule: dict[str, list[float]] = {}
    for launch in launches:
        if not launch.rules:  # only .ncu-rep reports captured with sections carry rules
            continue
        for name, value in launch.metrics.items():
            if name.startswith(RULE_PREFIX) and isinstance(value, float):
                by_rule.setdefault(name, []).append(value)
    return {name: round(statistics.median(v), 1) for name, v in sorted(by_rule.items())}
