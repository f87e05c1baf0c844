"""Small pure readers over a KernelDelta that the rules share: values, ratios, shares, and
whether the kernel got faster or slower beyond the catalog's noise bounds."""

from __future__ import annotations

import math

from perfgate.causes.model import Evidence, KernelDelta, Side
from perfgate.common.errors import UsageError
from perfgate.judge.comparison import State, Value
from perfgate.metrics.catalog import lookup


def single(delta: KernelDelta) -> bool:
    """One capture judged alone: `perfgate explain` passes an empty baseline side."""
    return not delta.baseline.values and delta.baseline.launches is None


def has(side: Side, metric: str) -> bool:
    if metric == "launches":
        return launches(side) is not None
    if metric in ("grid", "block"):
        return getattr(side, metric) is not None
    return side.values.get(metric) is not None


def num(side: Side, metric: str) -> float | None:
    return side.number(metric)


def label(side: Side, metric: str) -> str | None:
    v = side.values.get(metric)
    return v if isinstance(v, str) else None


def launches(side: Side) -> float | None:
    return side.launches if side.launches is not None else side.number("launches")


def share(side: Side, reason: str) -> float | None:
    """A stall reason's share (%): the stall.<reason> metric, else the side's share vector."""
    v = side.number(f"stall.{reason}")
    if v is not None:
        return v
    if side.shares:
        return side.shares.get(reason, 0.0)
    return None


def share_rise(delta: KernelDelta, reason: str) -> float:
    """Points a stall share gained; 0 where unknown. Small shares jump 10-100% between runs
    (docs/noise.md), so callers compare against an absolute floor in points."""
    a, b = share(delta.baseline, reason), share(delta.current, reason)
    return 0.0 if a is None or b is None else b - a


def unit(metric: str) -> str:
    try:
        return lookup(metric).unit
    except UsageError:
        return ""


def raw(metric: str) -> tuple[str, ...]:
    try:
        formulas = lookup(metric).formulas
    except UsageError:
        return ()
    return formulas[0].inputs if formulas else ()


def ev(delta: KernelDelta, *metrics: str) -> tuple[Evidence, ...]:
    """Evidence for the metrics either side holds."""
    out = []
    for m in metrics:
        a, b = delta.baseline.values.get(m), delta.current.values.get(m)
        if a is None and b is None:
            continue
        out.append(Evidence(m, a, b, unit(m), raw(m)))
    return tuple(out)


def _beyond_noise(delta: KernelDelta, metric: str, sign: int) -> bool | None:
    # The gate's state says which way under the metric's direction, which a baseline may
    # override: "faster" is the sign of the change itself.
    state = State.IMPROVED if sign < 0 else State.REGRESSED
    if any(
        c.metric == metric and c.state is state and (c.change or 0.0) * sign > 0
        for c in delta.comparisons
    ):
        return True
    a, b = num(delta.baseline, metric), num(delta.current, metric)
    if a is None or b is None or a <= 0:
        return None
    bound = lookup(metric).threshold
    change = (b - a) * sign
    return change > bound.relative * a and change > bound.absolute


def faster(delta: KernelDelta) -> bool:
    """Duration (else total time per capture) fell beyond the catalog's noise bound."""
    got = _beyond_noise(delta, "duration", -1)
    return bool(got if got is not None else _beyond_noise(delta, "total_time", -1))


def slower(delta: KernelDelta) -> bool:
    got = _beyond_noise(delta, "duration", +1)
    return bool(got if got is not None else _beyond_noise(delta, "total_time", +1))


def within(r: float | None, low: float, high: float) -> bool:
    """True where the ratio is unknown: an absent counter never vetoes."""
    return r is None or low <= r <= high


def times(r: float | None) -> str:
    if r is None or not math.isfinite(r):
        return "?"
    return f"x{r:.2f}" if r < 10 else f"x{r:.0f}"


def fmt(v: Value | None) -> str:
    if v is None:
        return "?"
    if isinstance(v, str):
        return v
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
