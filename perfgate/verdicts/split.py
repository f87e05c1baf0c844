"""Kernels judged on part of what their entry holds: a kernel whose launches split into work
classes its entry does not have, and a kernel of a capture scoped or timed otherwise than its
baseline. Both go through the one route of a kernel (perfgate.verdicts.kernel.judge_kernel);
the metrics not compared are decided before judging and settled there with the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from perfgate.baseline.model import KernelBaseline
from perfgate.identity.grouping import WORK_GAP, KernelGroup
from perfgate.identity.matching import SPLIT
from perfgate.ingest.launches import Launch
from perfgate.judge.comparison import Comparison
from perfgate.judge.policy import SEVERITY, kernel_state, verdict_word
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.verdicts.kernel import Judging, judge_kernel, judged_state, per_configuration
from perfgate.verdicts.metric import not_compared
from perfgate.verdicts.model import KernelVerdict

# A metric not judged, with the reason that decides its state and the reasons in words.
Reason = tuple[Skip, str]

# Counted per captured run over all of a kernel's launches: judged on every work class at once.
_PER_RUN = frozenset({"launches", "total_time"})


def _decided(
    kernel: KernelBaseline, reasons: Mapping[str, Reason], judged: KernelBaseline | None = None
) -> tuple[KernelBaseline, tuple[Comparison, ...]]:
    """The entry to judge (`judged`, else `kernel`) without the metrics in `reasons` (and
    without its launch count when that is one of them), and those metrics' comparisons, not
    compared, with the values `kernel` recorded."""
    decided = tuple(
        not_compared(kernel, m, *reasons[m.name]) for m in kernel.metrics if m.name in reasons
    )
    entry = kernel if judged is None else judged
    if not reasons:
        return entry, decided
    cut = replace(
        entry,
        launches=None if "launches" in reasons else entry.launches,
        metrics=tuple(m for m in entry.metrics if m.name not in reasons),
    )
    return cut, decided


def judge_split(
    kernel: KernelBaseline,
    classes: Sequence[KernelGroup],
    judging: Judging,
    reasons: Mapping[str, Reason] | None = None,
) -> KernelVerdict:
    """A baselined kernel whose launches now fall into work classes its entry does not have
    (one launch of three ran 40% more instructions): each class is judged against the entry,
    the counts per run over all of them, and the verdict is the worst class's. Never "new":
    a regressed launch fails the kernel it belongs to (docs/identity.md). The metrics in
    `reasons` (another scope's launch counts, another time basis's durations) are skipped."""
    cut, decided = _decided(kernel, reasons or {})
    pooled = sorted((la for g in classes for la in g.launches), key=lambda la: la.index)
    whole = judge_kernel(cut, pooled, "name", judging, recorded=kernel, decided=decided)
    per_launch = replace(
        cut, launches=None, metrics=tuple(m for m in cut.metrics if m.name not in _PER_RUN)
    )
    rank = {s: i for i, s in enumerate(SEVERITY)}
    parts = [
        (g, judge_kernel(per_launch, list(g.launches), "name", judging, recorded=kernel))
        for g in classes
    ]
    # Ranked by what was judged: every class shares the gates not judged.
    group, worst = min(parts, key=lambda part: rank[judged_state(part[1].comparisons)])
    # The whole's comparisons end with those decided before judging, settled there.
    cut_at = len(whole.comparisons) - len(decided)
    per_run = tuple(c for c in whole.comparisons[:cut_at] if c.metric in _PER_RUN)
    settled = whole.comparisons[cut_at:]
    comparisons = worst.comparisons + per_run + settled
    judged = judged_state(comparisons)
    instructions = group.instructions
    work = f", {instructions:,.0f} instructions" if instructions is not None else ""
    count = len(group.launches)
    message = (
        f"its launches split into {len(classes)} work classes (instruction counts more than "
        f"{(WORK_GAP - 1) * 100:.0f}% apart) where the baseline recorded one; each is judged "
        f"against this entry, and the verdict is work class {group.key.work}'s "
        f"({count} launch{'es' if count != 1 else ''}{work}): {verdict_word(judged)}"
    )
    return replace(
        worst,
        state=kernel_state(comparisons),
        comparisons=comparisons,
        causes=worst.causes if judged is not KernelState.PASS else whole.causes,
        launches=whole.launches,
        captures=whole.captures,
        message=message,
        matched_by=SPLIT,
    )


def judge_out_of_scope(
    kernel: KernelBaseline,
    launches: list[Launch],
    how: str,
    judging: Judging,
    reasons: Mapping[str, Reason],
) -> KernelVerdict:
    """A kernel of a capture scoped otherwise than the baseline, or measured under another
    time basis: the metrics in `reasons` (its launch counts, its durations) are skipped with
    their reason, never judged (nor diagnosed: no "launched less often"); the rest of its
    metrics are judged as always."""
    cut, decided = _decided(kernel, reasons, per_configuration(kernel, launches))
    return judge_kernel(cut, launches, how, judging, recorded=kernel, decided=decided)
