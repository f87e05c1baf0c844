"""Recording the whole-program GPU time: each capture file's total over every launch, and a
bound from its noise (docs/noise.md "Whole-program time")."""

from __future__ import annotations

from perfgate.baseline.model import ProgramBaseline
from perfgate.ingest.launches import Capture
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


def record_program(capture: Capture) -> ProgramBaseline | None:
    """None when a capture file holds no time for some launch (a partial metric list)."""
    totals = time_per_run(capture.launches, capture.paths)
    runs = tuple(t for t in totals if t is not None)
    if not runs or len(runs) != len(totals):
        return None
    relative, rule = program_bound(runs, next(iter(capture.devices), None))
    return ProgramBaseline(min(runs), relative, runs, UNIT, rule)
