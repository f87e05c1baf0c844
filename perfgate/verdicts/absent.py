"""The baselined kernels a capture does not hold and the kernels it holds that no entry
claims: their verdicts (missing, new), the notice of a capture that holds none of a baseline's
kernels, and the change findings that explain several at once (perfgate.causes.changes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perfgate import causes as differential
from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.causes.changes import (
    MISSING,
    NEW,
    RECONFIGURED,
    RECOUNTED,
    SCALED,
    ChangeFinding,
    ChangeKernel,
    find_changes,
    work_ratios,
)
from perfgate.causes.model import CauseKind, Evidence, RootCause, Side
from perfgate.identity.families import family_of
from perfgate.identity.grouping import KernelGroup, KernelKey
from perfgate.identity.matching import OTHER_WORK, Matching, recorded_work
from perfgate.ingest.launches import Capture, Dim3, per_file
from perfgate.ingest.names import short_name
from perfgate.judge.states import KernelState
from perfgate.metrics.program import time_in
from perfgate.verdicts.kernel import family_name
from perfgate.verdicts.model import KernelVerdict, LaunchCount
from perfgate.verdicts.program import recorded_time


def _names(groups: Sequence[KernelGroup], ids: Mapping[KernelKey, str]) -> str:
    shown = [ids[g.key] for g in groups[:4]]
    more = f" and {len(groups) - 4} more" if len(groups) > 4 else ""
    return ", ".join(shown) + more


def _other_work(kernel: KernelBaseline, groups: Sequence[KernelGroup]) -> str:
    """A work class gone while its name and shape run other work (perfgate.identity.matching)."""
    recorded = recorded_work(kernel)
    was = f"{recorded:,.0f} instructions a launch" if recorded is not None else "its work"
    now = ", ".join(f"{g.instructions:,.0f}" for g in groups[:3] if g.instructions is not None)
    return (
        f"work changed: recorded at {was}; its name and shape now run other work "
        f"({now or 'unknown'} instructions), no class of it near the recorded one"
    )


def _not_required(
    kernel: KernelBaseline, name: str, family: str | None, capture: Capture
) -> KernelVerdict:
    """A kernel only some recorded runs launched, absent here as it was from the others: the
    capture agrees with the baseline's own runs, so it is skipped with that reason, never
    missing (a kernel every recorded run launched is)."""
    runs, of = kernel.seen_in or (0, 0)
    message = (
        f"not in the capture, as in {of - runs} of the baseline's {of} recorded runs (only "
        f"{runs} launched it): the program's kernels vary between runs, so it is not required "
        "(docs/identity.md)"
    )
    return KernelVerdict(
        kernel=kernel.id,
        name=name,
        state=KernelState.SKIPPED,
        launches=LaunchCount(
            float(kernel.launches) if kernel.launches is not None else None,
            tuple(0 for _ in capture.paths),
        ),
        captures=capture.paths,
        message=message,
        family=family,
        nvtx=kernel.match.nvtx,
        line=kernel.line,
    )


def missing_verdict(
    kernel: KernelBaseline, matching: Matching, ids: Mapping[KernelKey, str], capture: Capture
) -> KernelVerdict:
    name = kernel.name or kernel.match.name or kernel.id
    family = family_name(kernel, name)
    if kernel.seen_in is not None and kernel.id not in matching.replaced_by:
        return _not_required(kernel, name, family, capture)
    what = f"{family} kernel" if family else "kernel"
    message = f"this {what} is not in the capture (no launch matches {kernel.match.describe()})"
    related: tuple[str, ...] = ()
    gone = differential.substitution_cause(Side(name=name, values=dict(kernel.info)), [], family)
    causes: tuple[RootCause, ...] = (gone,)
    message = f"{gone.title}: {message}"
    if kernel.id in matching.replaced_by:
        groups, why = matching.replaced_by[kernel.id]
        related = tuple(ids[g.key] for g in groups)
        if why.startswith("the same kernel"):
            shapes = ", ".join(f"grid {g.key.grid} block {g.key.block}" for g in groups[:3])
            title = "Launch shape changed"
            message = (
                f"launch shape changed: recorded at grid {kernel.match.grid} block "
                f"{kernel.match.block}, now at {shapes}"
            )
            if why == OTHER_WORK:
                title, message = "Work changed", _other_work(kernel, groups)
            lever = (
                "if the new shape is intended (a new batch or problem size), accept it "
                "(perfgate baseline accept --reason ...); otherwise find what changed the launch "
                "configuration"
            )
            causes = (
                RootCause(
                    "launch-shape",
                    CauseKind.CHANGE,
                    title,
                    message,
                    lever,
                    (Evidence("kernel", name, "; ".join(g.key.name for g in groups[:4])),),
                ),
            )
        else:
            count = len(groups)
            cause = differential.substitution_cause(
                Side(name=name, values=dict(kernel.info)),
                [Side(name=g.key.name, values={}) for g in groups],
                family,
            )
            message = (
                f"{cause.title}: replaced by {count} new kernel{'s' if count > 1 else ''} "
                f"({why}): {_names(groups, ids)}"
            )
            causes = (cause,)
    return KernelVerdict(
        kernel=kernel.id,
        name=name,
        state=KernelState.MISSING,
        causes=causes,
        launches=LaunchCount(
            float(kernel.launches) if kernel.launches is not None else None,
            tuple(0 for _ in capture.paths),
        ),
        captures=capture.paths,
        message=message,
        related=related,
        family=family,
        nvtx=kernel.match.nvtx,
        line=kernel.line,
    )


def new_verdict(
    group: KernelGroup, kid: str, replaced: tuple[str, ...], capture: Capture
) -> KernelVerdict:
    family = family_of(group.key.name)
    message = "not in the baseline; record it to gate it"
    if replaced:
        message = f"new in place of {', '.join(replaced)}; {message}"
    return KernelVerdict(
        kernel=kid,
        name=group.key.name,
        state=KernelState.NEW,
        launches=LaunchCount(None, per_file(group.launches, capture.paths)),
        captures=tuple(sorted({la.source for la in group.launches})),
        message=message,
        related=replaced,
        family=family.name if family else None,
        nvtx=group.key.nvtx,
    )


def notice(baseline: Baseline, capture: Capture, groups: Sequence[KernelGroup]) -> str:
    held = sorted({short_name(g.key.name) for g in groups})
    shown = ", ".join(held[:8]) + (f" and {len(held) - 8} more" if len(held) > 8 else "")
    n = len(baseline.kernels)
    lead = "the baselined kernel is not" if n == 1 else f"none of the {n} baselined kernels is"
    return (
        f"{lead} in {', '.join(capture.paths)}: is it a capture of another program, or did a "
        f"kernel filter (-k, --nvtx-include, --launch-count) leave {'it' if n == 1 else 'them'} "
        f"out? It holds {len(held)} kernel{'' if len(held) == 1 else 's'}: {shown}"
    )


def change_findings(
    missing: Sequence[KernelBaseline],
    new: Sequence[KernelGroup],
    ids: Mapping[KernelKey, str],
    capture: Capture,
    unchanged: bool,
    verdicts: Sequence[KernelVerdict] = (),
) -> tuple[ChangeFinding, ...]:
    """The missing and new kernels grouped by the change that explains them; times a run
    (recorded for the missing, the capture files' mean for the new)."""
    if not missing and not new:
        return ()
    runs = max(len(capture.paths), 1)
    kernels = [
        ChangeKernel(
            id=k.id,
            name=(name := k.name or k.match.name or k.id),
            # The name's family first: a baseline recorded before a family was known says
            # another (cuDNN's xmma engines were called cuBLAS).
            family=f.name if (f := family_of(name)) else k.family,
            side=MISSING,
            time_ns=recorded_time(k),
            launches=float(k.launches or 1),
            blocks=_blocks(k.match.grid) * float(k.launches or 1),
        )
        for k in missing
    ]
    kernels += [
        ChangeKernel(
            id=ids[g.key],
            name=g.key.name,
            family=f.name if (f := family_of(g.key.name)) else None,
            side=NEW,
            time_ns=sum(time_in(g.launches, p) for p in capture.paths) / runs,
            launches=len(g.launches) / runs,
            blocks=_blocks(g.key.grid) * len(g.launches) / runs,
        )
        for g in new
    ]
    # Kernels still there whose only change is how often they run: they may follow the change.
    kernels += [
        ChangeKernel(v.kernel, v.name, v.family, RECOUNTED, 0.0, 0.0)
        for v in verdicts
        if v.state is KernelState.REGRESSED
        and v.causes
        and all(c.mechanism == "launch-count" for c in v.causes if c.kind is CauseKind.REGRESSION)
        and v.headline is not None
        and v.headline.mechanism == "launch-count"
    ]
    # The program's own kernels slower at a launch configuration never recorded.
    kernels += [
        ChangeKernel(
            v.kernel, v.name, None, RECONFIGURED, time[1], _launches(v), recorded_ns=time[0]
        )
        for v in verdicts
        if v.state is KernelState.REGRESSED
        and v.family is None
        and v.matched_by == "reconfigured"
        and (time := _time_before_after(v)) is not None
    ]
    # Kernels still there that regressed, with their work counters: a problem grown or a
    # forward recomputed shows in many of them at once (perfgate.causes.changes).
    kernels += [
        ChangeKernel(
            v.kernel,
            v.name,
            v.family,
            SCALED,
            time[1],
            _launches(v),
            recorded_ns=time[0],
            work=work_ratios(v.comparisons),
            mechanisms=tuple(c.mechanism for c in v.causes if c.kind in _WORSE),
        )
        for v in verdicts
        if v.state is KernelState.REGRESSED and (time := _time_before_after(v)) is not None
    ]
    return find_changes(kernels, unchanged)


_WORSE = (CauseKind.REGRESSION, CauseKind.TRADE_OFF)


def _blocks(grid: Dim3 | None) -> float:
    """Thread blocks of one launch; 0 where the grid is not known."""
    return float(grid[0] * grid[1] * grid[2]) if grid else 0.0


def _time_before_after(v: KernelVerdict) -> tuple[float, float] | None:
    """A kernel's GPU time a run, as recorded and now, from its total_time comparison."""
    c = next((c for c in v.comparisons if c.metric == "total_time"), None)
    if (
        c is None
        or not isinstance(c.baseline, float | int)
        or not isinstance(c.current, float | int)
    ):
        return None
    return float(c.baseline), float(c.current)


def _launches(v: KernelVerdict) -> float:
    runs = v.launches.current if v.launches is not None else ()
    return sum(runs) / len(runs) if runs else 0.0
