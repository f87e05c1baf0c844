"""From a kernel's launches to one Side: what a check measures on both sides of a change."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from perfgate.causes.model import Side
from perfgate.common.errors import UsageError
from perfgate.ingest.launches import Launch
from perfgate.judge.comparison import Value
from perfgate.metrics.catalog import lookup
from perfgate.metrics.measure import Measured, measure


def measure_all(
    launches: Sequence[Launch], columns: frozenset[str], metrics: Iterable[str]
) -> dict[str, Measured]:
    """The metrics the capture holds; unknown names (a catalog metric not added yet) and
    metrics it cannot compute are left out, never guessed."""
    out = {}
    for name in metrics:
        try:
            defn = lookup(name)
        except UsageError:
            continue
        got = measure(defn, launches, columns)
        if isinstance(got, Measured):
            out[name] = got
    return out


def side_from_measured(launches: Sequence[Launch], measured: dict[str, Measured]) -> Side:
    values: dict[str, Value] = {name: m.value for name, m in measured.items()}
    stall = measured.get("dominant_stall")
    count = measured.get("launches")
    first = launches[0] if launches else None
    return Side(
        name=first.name if first else "",
        values=values,
        shares=dict(stall.shares) if stall is not None and stall.shares else None,
        launches=float(count.value)
        if count is not None and isinstance(count.value, float)
        else None,
        grid=first.grid if first else None,
        block=first.block if first else None,
    )


def side_from_launches(
    launches: Sequence[Launch], columns: frozenset[str], metrics: Iterable[str]
) -> Side:
    """One side of a KernelDelta from one kernel's launches: the median of every metric the
    capture holds, the stall shares, launches per capture file, and the launch shape."""
    return side_from_measured(launches, measure_all(launches, columns, metrics))
