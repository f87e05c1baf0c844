"""The whole-program GPU time's state: one comparison, ending in an explicit state that the
policy table (perfgate.judge.policy) turns into an exit code like a kernel's."""

from __future__ import annotations

from perfgate.judge.states import KernelState
from perfgate.metrics.timefloors import program_floor, two_run_program_floor

# A recorded program bound within this of the floor was set by it (bounds are kept to 4 places).
_SAME_BOUND = 1e-4


def check_bound(recorded: float, gpu: str | None, runs: int) -> tuple[float, bool]:
    """The bound a check judges the program's time under, and whether it is the two-run floor:
    with two capture files or more, where the GPU's program floor set the recorded bound (not
    the baseline runs' own spread), the narrower two-run floor; else the recorded bound."""
    two_runs = two_run_program_floor(gpu)
    if (
        runs >= 2
        and two_runs is not None
        and abs(recorded - program_floor(gpu)) <= _SAME_BOUND
        and two_runs < recorded
    ):
        return two_runs, True
    return recorded, False


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
