"""The whole-program GPU time's state: one comparison, ending in an explicit state that the
policy table (perfgate.judge.policy) turns into an exit code like a kernel's."""

from __future__ import annotations

from perfgate.judge.states import KernelState
from perfgate.judge.two_runs import FOUR_RUNS, MIN_RUNS
from perfgate.metrics.timefloors import (
    four_run_program_floor,
    program_floor,
    two_run_program_floor,
)

# A recorded program bound within this of the floor was set by it (bounds are kept to 4 places).
_SAME_BOUND = 1e-4


def check_bound(recorded: float, gpu: str | None, runs: int) -> tuple[float, int]:
    """The bound a check judges the program's time under, and the runs of the floor that set it
    (0: the recorded bound). Where the GPU's program floor set the recorded bound (not the
    baseline runs' own spread), a check of two capture files or more is judged under the
    narrower two-run floor, and one of four or more under the four-run floor."""
    if abs(recorded - program_floor(gpu)) > _SAME_BOUND:
        return recorded, 0
    for fewest, floor in (
        (FOUR_RUNS, four_run_program_floor(gpu)),
        (MIN_RUNS, two_run_program_floor(gpu)),
    ):
        if runs >= fewest and floor is not None and floor < recorded:
            return floor, fewest
    return recorded, 0


def program_state(baseline: float, current: float, bound: float) -> KernelState:
    """Time noise is one-sided (docs/noise.md "The rule"): the check's fastest run against the
    recorded fastest run; slower by more than `bound` (relative) regresses, faster improves."""
    if baseline <= 0:
        return KernelState.PASS if current <= 0 else KernelState.REGRESSED
    change = current / baseline - 1.0
    if change > bound:
        return KernelState.REGRESSED
    if change < -bound:
        return KernelState.IMPROVED
    return KernelState.PASS
