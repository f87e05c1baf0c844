"""A baseline recorded from captures of several machine starts: each start's value, the median
over starts (docs/noise.md "A baseline from several machine starts").

Fact: a kernel's time moves more between machine starts than between the runs of one start
(an H200 start ran Triton's rmsnorm kernel 2.2-3.3% slower than three later starts, and its
three runs spread a 79 us GEMM by 2.45%); a baseline of one start carries that start's level
and its runs' spread into every later check. With starts known (each capture's sidecar names
its machine start: perfgate.ncu.machine.machine_start), a start's value is the metric over
its own launches (the fastest launch of its runs, for a time), the baseline's value the median
over starts, so that one slow start does not set it; the bound counts the spread within a
start (the median over starts, so that one start's wide runs do not set it) and the spread
across starts where it exceeds the floor."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfgate.ingest.launches import Capture, Launch

# A start whose value sits this far from the median over starts, times this, bounds the metric
# at least (the floor covers the cross-start noise of an ordinary kernel; a kernel noisier
# across starts than that shows it here).
CROSS_K = 1.15


@dataclass(frozen=True)
class Starts:
    """Which machine start each capture file came from (two starts or more)."""

    by_file: Mapping[str, str]

    @property
    def count(self) -> int:
        return len(set(self.by_file.values()))

    def split(self, launches: Sequence[Launch]) -> list[list[Launch]]:
        """The launches per start, in the order the starts first appear."""
        out: dict[str, list[Launch]] = {}
        for la in launches:
            out.setdefault(self.by_file[la.source], []).append(la)
        return list(out.values())


def starts_of(capture: Capture) -> tuple[Starts | None, str | None]:
    """The capture's starts where every file names one and they name two or more, with a note
    where some files name none (then the files are recorded as one start's runs, as captures
    by hand are: a start that cannot be told apart cannot be pooled)."""
    named = dict(capture.starts)
    unnamed = [p for p in capture.paths if p not in named]
    if named and unnamed:
        return None, (
            f"{len(named)} of {len(capture.paths)} captures name their machine start and "
            f"{len(unnamed)} do not (captures by hand, or of an older perfgate): recorded as "
            "the runs of one start, not pooled over starts (docs/noise.md)"
        )
    if len(set(named.values())) < 2:
        return None, None
    return Starts(named), None


@dataclass(frozen=True)
class PooledValue:
    """One metric over the starts: the median of the starts' values, the range of launches a
    typical start has around its own value (low and high relative to it, the median over
    starts), the spread within a start and the largest distance of a start from the median."""

    value: float
    low: float | None
    high: float | None
    within: float  # median over starts of (max - min) / median of the start's runs' values
    across: float  # max over starts of |start's value / value - 1|
    starts: int


def pooled_value(
    start_values: Sequence[float],
    start_ranges: Sequence[tuple[float | None, float | None]],
    start_spreads: Sequence[float],
) -> PooledValue:
    """`start_values`: each start's value; `start_ranges`: each start's (low, high) over its
    launches; `start_spreads`: the spread of each start's runs (starts of two runs or more)."""
    value = statistics.median(start_values)
    relative = [
        (lo / v, hi / v)
        for v, (lo, hi) in zip(start_values, start_ranges, strict=True)
        if v and lo is not None and hi is not None
    ]
    low = value * statistics.median(r[0] for r in relative) if relative else None
    high = value * statistics.median(r[1] for r in relative) if relative else None
    across = max(abs(v / value - 1.0) for v in start_values) if value else 0.0
    within = statistics.median(start_spreads) if start_spreads else 0.0
    return PooledValue(value, low, high, within, across, len(start_values))
