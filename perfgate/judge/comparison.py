"""One metric of one kernel judged: the state a comparison ends in, the comparison itself
(baseline and current value, the change, the bound it was judged by), and compare_metric, the
one function that judges a metric, whatever route its values took."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from perfgate.baseline.model import Baseline, MetricBaseline
from perfgate.common.frozen import maker
from perfgate.judge.outcome import Outcome, judge_categorical, numeric_outcome
from perfgate.judge.skips import Skip
from perfgate.metrics.catalog import Aggregate, MetricDef
from perfgate.metrics.thresholds import CategoricalCheck, Direction, Threshold, describe_bound

Value = float | str


class State(enum.Enum):
    """The state one metric comparison ends in."""

    PASS = "pass"  # noqa: S105 (a state, not a password)
    REGRESSED = "regressed"
    IMPROVED = "improved"
    # Beyond its bound, but an evidence metric (perfgate.metrics.catalog.Role) with no primary
    # regression of its kernel beside it and no threshold of the baseline's own: shown as a
    # note, passes the build.
    NOTED = "noted"
    MISSING_METRIC = "missing metric"
    # Not judged (perfgate.judge.skips: another time basis, scope, capture type): SKIPPED
    # where the reason is waived by name or judged otherwise, else UNJUDGED, which fails.
    SKIPPED = "skipped"
    UNJUDGED = "unjudged"
    ERROR = "error"


@dataclass(frozen=True)
class Comparison:
    """One metric of one kernel, baseline against current."""

    kernel: str  # the baseline's kernel id
    metric: str
    state: State
    baseline: Value | None = None
    current: Value | None = None
    unit: str = ""
    change: float | None = None
    relative_change: float | None = None
    bound: str = ""
    message: str = ""
    baseline_shares: Mapping[str, float] | None = None
    current_shares: Mapping[str, float] | None = None
    # The gate's own judgement before rate semantics or a cause explained it away: a rate
    # that fell because the work fell is PASS with `explained` saying so.
    explained: str = ""
    # Why it was not judged (SKIPPED, UNJUDGED); None for a judged comparison.
    skip: Skip | None = None


class Bounds(NamedTuple):
    """The bounds a metric is judged by, merged (catalog default, the file's `thresholds:`,
    the metric's own) with the direction resolved: the threshold's own, else the catalog's."""

    threshold: Threshold
    check: CategoricalCheck
    direction: Direction


_NO_CHECK = CategoricalCheck()


def merged_bounds(defn: MetricDef, metric: MetricBaseline, baseline: Baseline) -> Bounds:
    """Catalog default, then the file's `thresholds:`, then the metric's own override."""
    threshold = defn.threshold.merged(baseline.thresholds.get(defn.name)).merged(metric.threshold)
    check = (defn.check or _NO_CHECK).merged(baseline.checks.get(defn.name))
    return Bounds(threshold, check.merged(metric.check), threshold.direction or defn.direction)


_NUMERIC_STATE = {
    Outcome.WITHIN: State.PASS,
    Outcome.WORSE: State.REGRESSED,
    Outcome.BETTER: State.IMPROVED,
}


def compare_metric(
    kernel: str,
    metric: MetricBaseline,
    defn: MetricDef,
    current: Value,
    unit: str,
    bounds: Bounds,
    bound: str | None = None,
    current_shares: Mapping[str, float] | None = None,
) -> Comparison:
    """The one judgement of one metric: `metric` (the baseline's entry, `defn` its catalog
    entry) against the `current` value measured in `unit`, under `bounds`. Every route a
    value takes to here (metric by metric, or a passing kernel's column statistics) ends in
    this function. `bound`: describe_bound() of `bounds` in `unit`, when the caller already
    worded it; `current_shares`: a dominant stall's shares, for its margin."""
    before = metric.value
    if defn.categorical or isinstance(before, str) or isinstance(current, str):
        return _compare_categorical(kernel, metric, defn, current, bounds.check, current_shares)
    before = float(before)
    # A calibrated bound already covers the spread of the runs it came from: judge from the
    # median. A default bound is judged from the edge of the recorded launches' range.
    ranged = metric.calibration is None or metric.threshold is None
    outcome = numeric_outcome(
        before,
        float(current),
        bounds.threshold,
        bounds.direction,
        metric.low if ranged else None,
        metric.high if ranged else None,
    )
    change = float(current) - before
    # Built once, not as a replace() of a first draft: a check of 1,000 kernels makes 37,000.
    return _comparison(
        kernel=kernel,
        metric=metric.name,
        # An enum's hash is Python code: the common answer first.
        state=State.PASS if outcome is Outcome.WITHIN else _NUMERIC_STATE[outcome],
        baseline=metric.value,
        current=current,
        unit=unit,
        change=change,
        relative_change=change / abs(before) if before else None,
        bound=describe_bound(bounds.threshold, bounds.direction, unit) if bound is None else bound,
    )


_comparison = maker(Comparison)


def _compare_categorical(
    kernel: str,
    metric: MetricBaseline,
    defn: MetricDef,
    current: Value,
    check: CategoricalCheck,
    shares: Mapping[str, float] | None,
) -> Comparison:
    before = metric.value
    if not isinstance(before, str) or not isinstance(current, str):
        message = f"cannot compare {before!r} with {current!r}: one is a number, the other a label"
        return Comparison(
            kernel, metric.name, State.ERROR, before, current, defn.unit, message=message
        )
    lead = None
    if defn.aggregate is Aggregate.DOMINANT and shares is not None:
        lead = shares.get(current, 0.0) - shares.get(before, 0.0)
    verdict = judge_categorical(before, current, check, lead)
    bound_parts = []
    if check.stable:
        margin = f" (margin {check.margin:g} points)" if check.margin else ""
        bound_parts.append("unchanged" + margin)
    if check.expect:
        bound_parts.append("one of " + ", ".join(check.expect))
    if check.forbid:
        bound_parts.append("not " + ", ".join(check.forbid))
    return Comparison(
        kernel,
        metric.name,
        State.REGRESSED if verdict.outcome is Outcome.WORSE else State.PASS,
        before,
        current,
        unit="",
        bound="; ".join(bound_parts),
        message=verdict.reason,
        baseline_shares=dict(metric.shares) if metric.shares else None,
        current_shares=shares,
    )
