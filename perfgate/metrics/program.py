"""Whole-program GPU time: what one capture file (one ncu run of the captured range) spent on
the GPU, summed over every launch in it, baselined or not (docs/noise.md "Whole-program time").

A per-kernel bound cannot see a change spread thinly over many kernels, nor a redundant launch
of a kernel the baseline does not hold; the sum over the whole range sees both."""

from __future__ import annotations

from collections.abc import Iterable

from perfgate.ingest.launches import Launch

GPU_TIME = "gpu__time_duration.sum"
UNIT = "ns"


def launch_time(launch: Launch) -> float | None:
    value = launch.metrics.get(GPU_TIME)
    return value if isinstance(value, float) else None


def time_per_run(launches: Iterable[Launch], paths: Iterable[str]) -> tuple[float | None, ...]:
    """The GPU time of each capture file, in the order of `paths`; None for a file whose
    launches lack gpu__time_duration.sum (a partial metric list), where no total can be
    trusted."""
    totals: dict[str, float] = {}
    incomplete: set[str] = set()
    for launch in launches:
        t = launch_time(launch)
        if t is None:
            incomplete.add(launch.source)
        else:
            totals[launch.source] = totals.get(launch.source, 0.0) + t
    return tuple(None if (p in incomplete or p not in totals) else totals[p] for p in paths)


def time_in(launches: Iterable[Launch], path: str) -> float:
    """The GPU time of the given launches that came from one capture file."""
    return sum(t for la in launches if la.source == path and (t := launch_time(la)) is not None)
