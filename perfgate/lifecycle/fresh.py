"""The captures recorded afresh against a baseline, for its edit plans: the check of the
captures, each baselined kernel recorded from the launches the check gave it, the kernels
new to it, and what a capture of another scope or time basis cannot give it."""

from __future__ import annotations

from dataclasses import replace

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.baseline.selection import assign
from perfgate.identity.grouping import KernelGroup, group_launches, new_ids
from perfgate.identity.matching import SPLIT, match, pick_work
from perfgate.ingest.launches import Capture
from perfgate.lifecycle.record import record_kernel
from perfgate.metrics.catalog import default_metrics
from perfgate.verdicts.check import (
    CAPTURE_TYPE_METRICS,
    SCOPED_METRICS,
    TIME_METRICS,
    CheckSettings,
    check,
)
from perfgate.verdicts.model import CheckResult


def record_fresh(
    baseline: Baseline,
    capture: Capture,
    other_scope: str = "",
    other_basis: str = "",
    only: frozenset[str] | None = None,
    judged: CheckResult | None = None,
) -> tuple[CheckResult, dict[str, KernelBaseline], list[KernelBaseline], _Classes]:
    """The check of the captures against the baseline, each baselined kernel recorded afresh
    from the launches the check gave it (with the metrics the file gates for it), and the
    kernels new to the baseline recorded with the default set. A baselined kernel whose
    launches split into work classes its entry does not have is recorded as the class nearest
    its recorded work (its match gets `work:`), and its other classes as entries of their own,
    taken with it (never pooled: the next check would split them again).

    `only`: record just these baselined kernels and no new one (the ratchet takes nothing
    else); `judged`: the check, where the caller has made it with these settings already."""
    result = judged or check(
        baseline,
        capture,
        CheckSettings(report_new_kernels=True, other_scope=other_scope, other_basis=other_basis),
    )
    if only is not None and not only:
        return result, {}, [], {}  # nothing to record: no grouping, no matching
    dropped = _dropped(other_scope, other_basis)
    groups = group_launches(capture.launches, by_nvtx=baseline.by_nvtx)
    matching = match(baseline, groups)
    fresh: dict[str, KernelBaseline] = {}
    others: list[tuple[KernelBaseline, KernelGroup]] = []
    for entry in baseline.kernels:
        found = matching.groups.get(entry.id) or []
        if not found or (only is not None and entry.id not in only):
            continue
        group = found[0]
        if matching.how.get(entry.id, "").startswith(SPLIT):
            group = pick_work(entry, found)
            others.extend((entry, g) for g in found if g is not group)
        elif len(found) > 1:  # an explicit function/regex match over several shapes
            group = KernelGroup(found[0].key, tuple(la for g in found for la in g.launches))
        names = [m.name for m in entry.metrics]
        kernel, _ = record_kernel(group, entry.id, names, capture)
        if kernel is not None:
            fresh[entry.id] = _in_scope(kernel, dropped)
    cc = next((la.cc for la in capture.launches if la.cc), None)
    taken = {k.id for k in baseline.kernels}
    ids = new_ids([g.key for g in matching.unclaimed], taken)
    added = []
    for group in matching.unclaimed if only is None else ():
        kernel, _ = record_kernel(
            group, ids[group.key], default_metrics(capture.columns, cc), capture
        )
        if kernel is not None:
            added.append(_in_scope(kernel, dropped))
    class_ids = new_ids([g.key for _, g in others], taken | set(ids.values()))
    classes: _Classes = {}
    for entry, group in others:
        names = [m.name for m in entry.metrics]
        kernel, _ = record_kernel(group, class_ids[group.key], names, capture)
        if kernel is not None:
            kernel = _in_scope(kernel, dropped)
            classes.setdefault(entry.id, []).append(kernel)
    return result, fresh, added, classes


# A split kernel's id -> its other work classes, recorded as entries of their own.
_Classes = dict[str, list[KernelBaseline]]


def for_gpu(baseline: Baseline, capture: Capture) -> tuple[Capture, str, str]:
    """The captures' launches on the baseline's GPU (launches from another GPU are refused:
    a baseline takes values from its own GPU only), why their launch counts do not compare
    with the baseline's, and why their durations do not (another time basis: a gate capture
    against a baseline of full captures); "" when they do."""
    plan = assign([baseline], [True], capture)
    a = plan.assignments[0]
    return a.capture, a.other_scope, a.other_basis


def _dropped(other_scope: str, other_basis: str) -> frozenset[str]:
    """The metrics a capture of another scope or time basis does not give the baseline."""
    out: set[str] = set()
    if other_scope:
        out.update(SCOPED_METRICS)
    if other_basis:
        # Durations, and DRAM bytes a gate capture reads 2-8% lower than a full capture.
        out.update(TIME_METRICS, CAPTURE_TYPE_METRICS)
    return frozenset(out)


def _in_scope(kernel: KernelBaseline, dropped: frozenset[str]) -> KernelBaseline:
    """A kernel recorded from a capture of another scope less its launch counts, of another
    time basis less its durations: they are not the baseline's to take (the ratchet, accept
    and update leave them as they are)."""
    if not dropped:
        return kernel
    return replace(
        kernel,
        launches=None if "launches" in dropped else kernel.launches,
        metrics=tuple(m for m in kernel.metrics if m.name not in dropped),
    )
