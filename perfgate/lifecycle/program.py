"""Recording the whole-program GPU time: each capture file's total over every launch, and a
bound from its noise (docs/noise.md "Whole-program time")."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from perfgate.baseline.model import ProgramBaseline
from perfgate.ingest.launches import Capture
from perfgate.lifecycle.pooled import CROSS_K
from perfgate.metrics.program import UNIT, time_per_run
from perfgate.metrics.timefloors import PROGRAM_FLOORS, gpu_kind, program_floor

# What varies across machine starts, which one start's runs cannot see: the floors and the
# measured moves they rest on are in perfgate.metrics.timefloors (PROGRAM_FLOORS).
FLOORS = PROGRAM_FLOORS
FLOOR = FLOORS["H100"]


def program_bound(runs: tuple[float, ...], gpu: str | None = "H100") -> tuple[float, str]:
    """max(2 x the relative spread of the per-run totals, the GPU's floor), and the arithmetic."""
    fastest = min(runs)
    spread = (max(runs) - fastest) / fastest if fastest > 0 else 0.0
    floor = program_floor(gpu)
    bound = max(2 * spread, floor)
    rule = (
        f"max(2 x spread {spread:.2%} of {len(runs)} runs, cross-start floor {floor * 100:g}% on "
        f"{gpu_kind(gpu)}) = {bound:.2%}"
    )
    return round(bound, 4), rule


def pooled_program(
    runs: tuple[float, ...], starts: tuple[str, ...], gpu: str | None, across_k: float
) -> tuple[float, float, str]:
    """The whole-program time recorded from several machine starts (perfgate.lifecycle.pooled):
    the median of each start's fastest run; the bound: 2 x the spread within a start (the
    median over starts of two runs or more), the GPU's floor and `across_k` x the largest
    distance of a start's fastest run from that median, the largest."""
    by_start: dict[str, list[float]] = {}
    for total, start in zip(runs, starts, strict=True):
        by_start.setdefault(start, []).append(total)
    fastest = [min(totals) for totals in by_start.values()]
    value = statistics.median(fastest)
    spreads = [(max(t) - min(t)) / min(t) for t in by_start.values() if len(t) >= 2 and min(t)]
    within = statistics.median(spreads) if spreads else 0.0
    across = max(abs(f / value - 1.0) for f in fastest) if value else 0.0
    floor = program_floor(gpu)
    bound = max(2 * within, floor, across_k * across)
    rule = (
        f"{len(by_start)} machine starts, {len(runs)} runs: the median of each start's fastest "
        f"run; max(2 x spread within a start {within:.2%}, across starts {across:.2%} x "
        f"{across_k:g}, cross-start floor {floor * 100:g}% on {gpu_kind(gpu)}) = {bound:.2%}"
    )
    return value, round(bound, 4), rule


def record_program(
    capture: Capture, starts: Mapping[str, str] | None = None
) -> ProgramBaseline | None:
    """None when a capture file holds no time for some launch (a partial metric list).
    `starts`: each capture file's machine start, two or more: pooled over them."""
    totals = time_per_run(capture.launches, capture.paths)
    runs = tuple(t for t in totals if t is not None)
    if not runs or len(runs) != len(totals):
        return None
    gpu = next(iter(capture.devices), None)
    if starts is not None:
        value, relative, rule = pooled_program(
            runs, tuple(starts[p] for p in capture.paths), gpu, CROSS_K
        )
        return ProgramBaseline(value, relative, runs, UNIT, rule)
    relative, rule = program_bound(runs, gpu)
    return ProgramBaseline(min(runs), relative, runs, UNIT, rule)
