"""Recording the whole-program GPU time: each capture file's total over every launch, and a
bound from its noise (docs/noise.md "Whole-program time")."""

from __future__ import annotations

from perfgate.baseline.model import ProgramBaseline
from perfgate.ingest.launches import Capture
from perfgate.metrics.program import UNIT, time_per_run
from perfgate.metrics.timefloors import gpu_kind

# What varies across machine starts, which one start's runs cannot see: the largest upward change
# of the fastest run's total between two starts of the same build, over every start of the
# corpus (autotuned programs aside, whose change is the autotuner's): H100 +1.36% in 126 pairs
# (an NVRTC program), H200 +2.04% in 48 (the reductions program). Each floor is that rounded up
# and still catches +3% on a program that did not run faster than its baseline (docs/noise.md
# "Whole-program time", held by tests/test_program_time.py). A GPU of another kind gets the
# widest: nothing was measured on it.
FLOORS: dict[str, float] = {"H100": 0.02, "H200": 0.025}
FLOOR = FLOORS["H100"]


def program_floor(gpu: str | None) -> float:
    return FLOORS[gpu_kind(gpu)]  # another kind is H200's, the widest (gpu_kind)


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


def record_program(capture: Capture) -> ProgramBaseline | None:
    """None when a capture file holds no time for some launch (a partial metric list)."""
    totals = time_per_run(capture.launches, capture.paths)
    runs = tuple(t for t in totals if t is not None)
    if not runs or len(runs) != len(totals):
        return None
    relative, rule = program_bound(runs, next(iter(capture.devices), None))
    return ProgramBaseline(min(runs), relative, runs, UNIT, rule)
