"""When a change counts: a numeric value against its baseline under a threshold, and a label
(dominant stall, occupancy limiter) against its categorical check.

A numeric change counts only when it exceeds BOTH the absolute and the relative bound, so a
stall share moving from 0% to 0.27% (a huge relative change, a tiny absolute one) is not a
regression, and neither is a 2 ns change of a 2 ms kernel. Exact counters default to zero
bounds: any change in the worse direction is a regression.

The change is measured from the edge of the range the baseline's own launches covered (their
min and max), not from their median: a value the good build produced itself (a cold first
launch's instruction-cache stalls, say) is never a regression. For exact metrics the range is
a single value, so nothing is loosened there."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from perfgate.metrics.thresholds import (
    CategoricalCheck,
    Direction,
    Threshold,
)

# Values read from text carry float noise; a change below this share of the value is none.
_EPSILON = 1e-9


class Outcome(enum.Enum):
    WITHIN = "within"
    WORSE = "worse"
    BETTER = "better"


def numeric_outcome(
    baseline: float,
    current: float,
    threshold: Threshold,
    direction: Direction,
    low: float | None = None,
    high: float | None = None,
) -> Outcome:
    """Compare one value against its baseline under `threshold`, `direction` already the
    threshold's own where it has one (perfgate.judge.comparison.compare_metric, the one caller
    that judges a metric, resolves it).

    `baseline` is the baseline's median; `low` and `high` the range its launches covered:
    the judgement is from the range's edge."""
    low = baseline if low is None else min(low, baseline)
    high = baseline if high is None else max(high, baseline)
    slack = _EPSILON * max(1.0, abs(baseline))
    above, below = current - high, low - current  # how far outside the range, per side
    # A move counts beyond both allowances (one comparison each, not a closure per call).
    past_absolute = threshold.absolute + slack
    past_relative = threshold.relative * abs(baseline) + slack

    if math.isnan(current):
        return Outcome.WORSE
    if direction is Direction.ANY_CHANGE:
        return (
            Outcome.WORSE
            if (above > past_absolute and above > past_relative)
            or (below > past_absolute and below > past_relative)
            else Outcome.WITHIN
        )
    worse, better = (above, below) if direction is Direction.HIGHER_IS_WORSE else (below, above)
    if worse > past_absolute and worse > past_relative:
        return Outcome.WORSE
    if better > past_absolute and better > past_relative:
        return Outcome.BETTER
    return Outcome.WITHIN


@dataclass(frozen=True)
class CategoricalVerdict:
    outcome: Outcome
    reason: str


def judge_categorical(
    baseline: str | None,
    current: str,
    check: CategoricalCheck,
    lead: float | None = None,
) -> CategoricalVerdict:
    """`lead`: for a changed dominant stall, how many points the new top leads the old one by
    in the current capture (None when the metric has no scores)."""
    if check.expect and current not in check.expect:
        return CategoricalVerdict(Outcome.WORSE, f"expected one of {', '.join(check.expect)}")
    if current in check.forbid:
        return CategoricalVerdict(Outcome.WORSE, f"{current} is forbidden")
    if check.stable and baseline is not None and current != baseline:
        if lead is not None and lead <= check.margin:
            return CategoricalVerdict(
                Outcome.WITHIN,
                f"{current} leads {baseline} by {lead:.1f} points, "
                f"within the margin of {check.margin:g}",
            )
        return CategoricalVerdict(Outcome.WORSE, f"changed from {baseline}")
    return CategoricalVerdict(Outcome.WITHIN, "")
