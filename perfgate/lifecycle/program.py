"""Recording the whole-program GPU time: each capture file's total over every launch, and a
bound from its noise (docs/noise.md "Whole-program time")."""

from __future__ import annotations

from perfgate.baseline.model import ProgramBaseline
from perfgate.ingest.launches import Capture
from perfgate.metrics.program import UNIT, time_per_run

# What varies across machine starts, which one start's runs cannot see: the largest change of
# the fastest run's total between two starts of the same build was +1.36% (H200 triton-good,
# start 1 -> start2-) over 14 tuning pairs of tests/data/field/h100 (h100-a -> h100-b) and
# tests/data/h200/real; 2% is that rounded up and still catches +3% (docs/noise.md
# "Whole-program time", held by tests/test_program_time.py).
FLOOR = 0.02


def program_bound(runs: tuple[float, ...]) -> tuple[float, str]:
    """max(2 x the relative spread of the per-run totals, FLOOR), and the arithmetic."""
    fastest = min(runs)
    spread = (max(runs) - fastest) / fastest if fastest > 0 else 0.0
    bound = max(2 * spread, FLOOR)
    rule = (
        f"max(2 x spread {spread:.2%} of {len(runs)} runs, cross-start floor {FLOOR:.0%}) "
        f"= {bound:.2%}"
    )
    return round(bound, 4), rule


def record_program(capture: Capture) -> ProgramBaseline | None:
    """None when a capture file holds no time for some launch (a partial metric list)."""
    totals = time_per_run(capture.launches, capture.paths)
    runs = tuple(t for t in totals if t is not None)
    if not runs or len(runs) != len(totals):
        return None
    relative, rule = program_bound(runs)
    return ProgramBaseline(min(runs), relative, runs, UNIT, rule)
