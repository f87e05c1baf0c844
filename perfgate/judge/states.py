"""The state one kernel ends in, from its comparisons (what a state means for the build:
perfgate.judge.policy).

Like asv compare, every comparison ends in an explicit state and the exit code follows from the
states alone."""

from __future__ import annotations

import enum

from perfgate.judge.comparison import Comparison, State


class KernelState(enum.Enum):
    """The state one kernel ends in; the exit code follows from these alone (judge.policy)."""

    PASS = "pass"  # noqa: S105
    IMPROVED = "improved"  # something got better, nothing worse
    REGRESSED = "regressed"  # a gated metric (or the launch count) got worse
    INCOMPLETE = "incomplete"  # a gated metric could not be measured in the capture
    MISSING = "missing"  # a baselined kernel is not in the capture
    NEW = "new"  # a kernel the baseline does not know
    # A gate it holds was not judged and the reason was not waived (perfgate.judge.skips).
    UNJUDGED = "unjudged"
    SKIPPED = "skipped"  # nothing of it could be compared here (another architecture)
    ERROR = "error"  # the comparison itself failed (a label against a number, say)


# The order reports list kernels in: what blocks a merge first.
SEVERITY: tuple[KernelState, ...] = (
    KernelState.ERROR,
    KernelState.REGRESSED,
    KernelState.UNJUDGED,
    KernelState.MISSING,
    KernelState.INCOMPLETE,
    KernelState.IMPROVED,
    KernelState.NEW,
    KernelState.SKIPPED,
    KernelState.PASS,
)


def kernel_state(comparisons: tuple[Comparison, ...] | list[Comparison]) -> KernelState:
    """A NOTED comparison (evidence alone) counts as a pass: a kernel whose only non-pass
    comparisons are noted passes."""
    if all(c.state is State.PASS for c in comparisons):  # the common case, without hashing
        return KernelState.PASS
    states = {c.state for c in comparisons}
    if State.ERROR in states:
        return KernelState.ERROR
    if State.REGRESSED in states:
        return KernelState.REGRESSED
    if State.UNJUDGED in states:
        return KernelState.UNJUDGED
    if State.MISSING_METRIC in states:
        return KernelState.INCOMPLETE
    if State.IMPROVED in states:
        return KernelState.IMPROVED
    if states and states <= {State.SKIPPED}:
        return KernelState.SKIPPED
    return KernelState.PASS
