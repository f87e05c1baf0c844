"""The whole-program GPU time's state: one comparison, ending in an explicit state that the
policy table (perfgate.judge.policy) turns into an exit code like a kernel's."""

from __future__ import annotations

from perfgate.judge.states import KernelState


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
