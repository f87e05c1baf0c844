"""The states one kernel can end in. Which one it ends in, from its comparisons, and what each
means for the build and every report: perfgate.judge.policy's status table.

Like asv compare, every comparison ends in an explicit state and the exit code follows from the
states alone."""

from __future__ import annotations

import enum


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
