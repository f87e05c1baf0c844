"""From a kernel's launches to one value per logical metric: the median, with its spread."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.capture import Launch, cc_version
from perfgate.catalog import Aggregate, Formula, MetricDef
from perfgate.stalls import GROUP_TITLES


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
    if group in GROUP_TITLES and len({f.group for f in defn.formulas}) > 1:
        return (
            f"the baseline's values come from {GROUP_TITLES[group]}, which this capture "
            "does not hold; capture with the same metrics as the baseline"
        )
    return "the capture does not hold the raw metrics it needs"


def measure(
    defn: MetricDef,
    launches: Sequence[Launch],
    columns: frozenset[str],
    group: str | None = None,
) -> Measured | Unavailable:
    """The kernel-level value of `defn` over `launches`; `group` pins the formula's group
    (a check measures in the group its baseline was recorded in)."""
    cc = next((launch.cc for launch in launches if launch.cc), None)
    formula = defn.resolve(columns, cc, group)
    if formula is None:
        version = cc_version(cc)
        if version is not None and not any(f.for_cc(version) for f in defn.formulas):
            return Unavailable(
                defn.name, f"not measured on compute capability {cc}", architecture=True
            )
        candidates = defn.formulas_for(group) or defn.formulas
        return Unavailable(
            defn.name, _missing_reason(defn, group), candidates[0].inputs if candidates else ()
        )
    if defn.per_capture:
        return _per_capture(defn, formula, launches)
    values = [formula.compute(launch.metrics) for launch in launches]
    present = [v for v in values if v is not None]
    unit = _unit(defn, launches)
    if not present:
        return Unavailable(
            defn.name, f"no launch has a value for {formula.text} (n/a or empty)", formula.inputs
        )
    if defn.aggregate is Aggregate.DOMINANT:
        vectors = [v for v in present if isinstance(v, dict)]
        reasons = sorted({r for vec in vectors for r in vec})
        shares = {r: statistics.median(vec.get(r, 0.0) for vec in vectors) for r in reasons}
        top = max(shares, key=lambda r: (shares[r], r)) if shares else None
        if top is None:
            return Unavailable(defn.name, "no stall was recorded", formula.inputs)
        return Measured(defn.name, top, None, None, len(vectors), formula.text, formula.group,
                        unit, shares)  # fmt: skip
    if defn.aggregate is Aggregate.MODE:
        labels = [str(v) for v in present]
        top_label, _ = Counter(labels).most_common(1)[0]
        return Measured(
            defn.name, top_label, None, None, len(labels), formula.text, formula.group, unit
        )
    numbers = [float(v) for v in present if isinstance(v, float)]
    if not numbers:
        texts = sorted({str(v) for v in present})
        if defn.raw:
            # A raw metric that ncu writes as text (launch__func_cache_config): compare as a label.
            top_label, _ = Counter(str(v) for v in present).most_common(1)[0]
            return Measured(
                defn.name, top_label, None, None, len(present), formula.text, formula.group, unit
            )
        return Unavailable(
            defn.name, f"the values are not numbers: {', '.join(texts[:3])}", formula.inputs
        )
    return Measured(
        defn.name,
        statistics.median(numbers),
        min(numbers),
        max(numbers),
        len(numbers),
        formula.text,
        formula.group,
        unit,
    )


def _per_capture(defn: MetricDef, formula: Formula, launches: Sequence[Launch]) -> Measured:
    """Count or sum over each capture file's launches, then the median over the files: one
    file is one captured run, so a kernel launched twice per run reads 2 whatever the number
    of runs merged."""
    per_file: dict[str, float] = {}
    for launch in launches:
        v = formula.compute(launch.metrics)
        if isinstance(v, float):
            per_file[launch.source] = per_file.get(launch.source, 0.0) + v
    numbers = list(per_file.values()) or [0.0]
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
