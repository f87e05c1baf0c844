"""What a change finding reads and says (issue 22): a kernel gone from the capture, new to
it, or still there, as the grouping sees it (ChangeKernel); the one change at the caller's
level that explains several of them (ChangeFinding); the shape of a rule that claims them;
and the work measures a kernel still there is compared by."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perfgate.judge.comparison import Comparison

MISSING = "missing"
NEW = "new"
RECOUNTED = "recounted"  # a kernel still there, launched more or less often
RECONFIGURED = "reconfigured"  # a user kernel at a launch configuration never recorded, slower
SCALED = "scaled"  # a kernel still there that regressed: its work counters, for the program rules
SHOWN = 3  # kernels named per side of a finding, heaviest first


@dataclass(frozen=True)
class ChangeKernel:
    """One kernel gone from the capture or new to it, as the grouping sees it."""

    id: str  # the baseline's id (missing) or the check's readable id (new)
    name: str  # as ncu printed it
    family: str | None
    side: str  # MISSING, NEW, RECOUNTED or RECONFIGURED
    time_ns: float  # GPU time a run: as recorded (missing), in the capture (new, reconfigured)
    launches: float  # a run
    recorded_ns: float = 0.0  # a reconfigured or scaled kernel's GPU time a run as recorded
    # SCALED: after / before of each work measure (WORK_MEASURES) known on both sides, and the
    # mechanisms of its regression and trade-off causes.
    work: tuple[tuple[str, float], ...] = ()
    mechanisms: tuple[str, ...] = ()
    # MISSING and NEW: thread blocks a run (launches x blocks per launch), 0 where the grid is
    # unknown. A kernel whose grid follows the problem (one launch per MoE expert, sized by
    # its tokens) changes identity when the problem grows; by name, its blocks still scale.
    blocks: float = 0.0


@dataclass(frozen=True)
class ChangeFinding:
    """One change at the caller's level and the kernels it explains."""

    kind: str  # "precision", "dtype", "attention", "layout", "compile", "heuristic",
    # "user-code", "configuration"
    title: str
    replaced: tuple[tuple[str, float], ...]  # (name, launches a run), heaviest first, capped
    by: tuple[tuple[str, float], ...]
    replaced_kernels: int  # all of them, beyond the names shown
    by_kernels: int
    before_ns: float  # GPU time a run of the kernels replaced, as recorded
    after_ns: float  # of the kernels that replaced them
    lever: str
    members: tuple[str, ...]  # kernel ids: the missing, the new, then the recounted
    # Kernels still there but launched more or less often along with the change (the eager
    # attention path's mask arithmetic): its consequences, by name.
    recounted: tuple[str, ...] = ()
    # Kernels still there whose own findings follow from this change (a problem grown, the
    # forward recomputed): their ids, not listed one by one again, and their names.
    folded: tuple[str, ...] = ()
    scaled: tuple[tuple[str, float], ...] = ()
    scaled_kernels: int = 0


Kernels = Sequence[ChangeKernel]
Claim = tuple[str, str, str, Sequence[ChangeKernel]]  # kind, title, lever, the kernels claimed
# A rule reads the missing kernels, the new ones, and the kernels still there that regressed
# (SCALED, for the rules of the whole program: a problem grown, a forward recomputed).
Rule = Callable[[Kernels, Kernels, Kernels], Claim | None]


# The work measures of a kernel that a larger problem scales: launches, and per launch the
# instructions and the global sectors. DRAM and L2 bytes are left out: the cache's share of a
# larger working set moves them by other factors.
WORK_MEASURES = (
    "launches",
    "instructions_executed",
    "global_load_sectors",
    "global_store_sectors",
)
# Causes that say only "it does more": the finding of the whole program explains them.


def work_ratios(comparisons: Sequence[Comparison]) -> tuple[tuple[str, float], ...]:
    """after / before of each work measure a kernel's comparisons hold on both sides."""
    out = []
    for c in comparisons:
        b, a = c.baseline, c.current
        known = isinstance(b, float | int) and isinstance(a, float | int)
        if c.metric in WORK_MEASURES and known and float(b) > 0:  # type: ignore[arg-type]
            out.append((c.metric, float(a) / float(b)))  # type: ignore[arg-type]
    return tuple(out)
