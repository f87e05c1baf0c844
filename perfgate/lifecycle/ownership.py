"""Which of a baseline's thresholds are perfgate's to replace: exactly the bound its
`calibration` text says perfgate chose. Any other threshold is somebody's decision and
stays through accept, update and the ratchet."""

from __future__ import annotations

import re

from perfgate.baseline.model import MetricBaseline
from perfgate.lifecycle.calibrate import floor_for
from perfgate.metrics.thresholds import ThresholdOverride

_CALIBRATED = re.compile(
    r": (?:floor|spread|launch range) (?P<relative>[0-9.]+)%"
    r"(?:, absolute (?P<absolute>[0-9.e+-]+))?$"
)


def calibrated_bound(text: str | None) -> tuple[float, float] | None:
    """The (relative, absolute) bound a `calibration` text says perfgate chose, or None."""
    if not text:
        return None
    m = _CALIBRATED.search(text)
    if not m:
        return None
    return round(float(m["relative"]) / 100, 4), float(m["absolute"] or 0.0)


# Runs whose median is 0: the text states the absolute part it chose, as `{:g}`; the relative
# part beside it is the catalog floor's (perfgate.lifecycle.calibrate.calibrate).
_AROUND_ZERO = re.compile(r" runs around 0: absolute (?P<absolute>[0-9.e+-]+) \(")


def _is_around_zero_bound(metric: MetricBaseline, t: ThresholdOverride) -> bool:
    m = _AROUND_ZERO.search(metric.calibration or "")
    return (
        m is not None
        and (t.relative or 0.0) == floor_for(metric.definition, None).relative
        and f"{t.absolute or 0.0:g}" == m["absolute"]
    )


def threshold_is_perfgates(metric: MetricBaseline) -> bool:
    """A numeric threshold is perfgate's to replace when it is exactly the bound its
    `calibration` text states; anything else is somebody's decision and stays."""
    t = metric.threshold
    if t is None:
        return True
    if metric.check is not None and any(
        getattr(metric.check, k) is not None for k in ("stable", "expect", "forbid", "margin")
    ):
        return False
    if t.direction is not None:
        return False
    if _is_around_zero_bound(metric, t):
        return True
    bound = calibrated_bound(metric.calibration)
    if bound is None:
        return False
    relative, absolute = bound
    return (t.relative or 0.0) == relative and (t.absolute or 0.0) == absolute
