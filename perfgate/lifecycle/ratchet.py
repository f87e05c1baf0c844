"""`perfgate baseline update --ratchet`: only what improved beyond its bound takes the new
value, and no bound or range ever widens (perfgate.lifecycle.plan's text). The passing
range a check gives a metric, one metric tightened, and the ratchet's plan."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline, ProgramBaseline
from perfgate.identity.matching import SPLIT
from perfgate.ingest.launches import Capture
from perfgate.judge.comparison import State, merged_bounds
from perfgate.judge.policy import failing
from perfgate.judge.states import KernelState
from perfgate.lifecycle.editplan import Action, EditPlan, KernelEdit, program_taken
from perfgate.lifecycle.fresh import for_gpu, record_fresh
from perfgate.lifecycle.ownership import threshold_is_perfgates
from perfgate.lifecycle.program import record_program
from perfgate.lifecycle.stamps import Stamp
from perfgate.metrics.thresholds import Direction
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.model import CheckResult, KernelVerdict, RatchetTakes


def _allowance(relative: float, absolute: float, value: float) -> float:
    """How far a bound lets a value move: beyond both parts counts (perfgate.judge.outcome)."""
    return max(absolute, relative * abs(value))


def passing_range(metric: MetricBaseline, baseline: Baseline) -> tuple[float, float]:
    """The values a check lets pass as not worse for `metric` (as judge.outcome judges them:
    from the edge of the recorded launch range, or from the median under a calibrated bound,
    widened by the bound's allowance on each worse side); -inf/inf on a side that is never
    worse. A ratchet's edit must leave this range as it was or narrower."""
    value = float(metric.value)
    bounds = merged_bounds(metric.definition, metric, baseline)
    ranged = metric.calibration is None or metric.threshold is None
    low = min(metric.low, value) if ranged and metric.low is not None else value
    high = max(metric.high, value) if ranged and metric.high is not None else value
    allow = _allowance(bounds.threshold.relative, bounds.threshold.absolute, value)
    direction = bounds.direction
    top = high + allow if direction is not Direction.LOWER_IS_WORSE else math.inf
    bottom = low - allow if direction is not Direction.HIGHER_IS_WORSE else -math.inf
    return bottom, top


def _within(inner: tuple[float, float], outer: tuple[float, float]) -> bool:
    slack = 1e-9 * max([1.0, *(abs(x) for x in (*inner, *outer) if math.isfinite(x))])
    return inner[0] >= outer[0] - slack and inner[1] <= outer[1] + slack


def ratcheted_metric(
    baseline: Baseline, old: MetricBaseline, fresh: MetricBaseline
) -> MetricBaseline | None:
    """`old` tightened by what `fresh` (recorded from the captures) improved, or None when it
    cannot be without widening something. The median moves only the better way; the launch
    range only inward on the worse side (on the better side no further than the new median);
    the bound is the old one, or the freshly calibrated one where perfgate calibrated the old
    (threshold_is_perfgates) and the new lets less through. Everything else is the old
    entry's: unit, formula, shares, categorical rules."""
    if isinstance(old.value, str) or isinstance(fresh.value, str):
        return None
    value, new = float(old.value), float(fresh.value)
    direction = merged_bounds(old.definition, old, baseline).direction
    if direction is Direction.ANY_CHANGE or new == value:
        return None
    if (new < value) != (direction is Direction.HIGHER_IS_WORSE):
        return None  # not better: the median never moves the worse way
    low = min(old.low if old.low is not None else value, value)
    high = max(old.high if old.high is not None else value, value)
    fresh_low = min(fresh.low if fresh.low is not None else new, new)
    fresh_high = max(fresh.high if fresh.high is not None else new, new)
    # Inward of both ranges, and never so far that the range leaves out the new median.
    new_low, new_high = min(max(fresh_low, low), new), max(min(fresh_high, high), new)
    options = [(old.threshold, old.calibration)]
    if threshold_is_perfgates(old) and fresh.calibration is not None:
        # The bound the new runs calibrated, where it lets the new median move no further
        # than the one in force (as the writer, perfgate.lifecycle.edit, decides it too).
        in_force = merged_bounds(old.definition, old, baseline).threshold
        proposed = merged_bounds(
            fresh.definition, replace(old, threshold=fresh.threshold), baseline
        )
        if _allowance(proposed.threshold.relative, proposed.threshold.absolute, new) <= (
            _allowance(in_force.relative, in_force.absolute, new)
        ):
            options.insert(0, (fresh.threshold, fresh.calibration))
    before = passing_range(old, baseline)
    best: tuple[float, MetricBaseline] | None = None
    for threshold, calibration in options:
        lo, hi = new_low, new_high
        if calibration is None or threshold is None:
            # Judged from the range's worse edge: that edge plus the bound's allowance at the
            # new median (larger, for a value that is better when higher) stays inside.
            bound = merged_bounds(old.definition, replace(old, threshold=threshold), baseline)
            allow = _allowance(bound.threshold.relative, bound.threshold.absolute, new)
            if direction is Direction.HIGHER_IS_WORSE:
                hi = min(hi, before[1] - allow)
            else:
                lo = max(lo, before[0] + allow)
            if not lo <= new <= hi:
                continue
        candidate = replace(
            old, value=new, low=lo, high=hi, threshold=threshold, calibration=calibration
        )
        after = passing_range(candidate, baseline)
        if not _within(after, before):
            continue
        # The worse side's edge: the lower, the tighter (higher is better: the higher).
        edge = after[1] if direction is Direction.HIGHER_IS_WORSE else -after[0]
        if best is None or edge < best[0]:
            best = (edge, candidate)
    return best[1] if best is not None else None


def _ratchet_edit(
    baseline: Baseline, verdict: KernelVerdict, entry: KernelBaseline, kernel: KernelBaseline
) -> tuple[KernelEdit | None, list[str]]:
    """The ratchet's edit of one kernel that improved: each improved metric tightened
    (ratcheted_metric), its entry otherwise as the file has it (match, launches, info)."""
    better = [c.metric for c in verdict.comparisons if c.state is State.IMPROVED]
    olds = {m.name: m for m in entry.metrics}
    news = {m.name: m for m in kernel.metrics}
    taken: list[MetricBaseline] = []
    skipped: list[str] = []
    for name in better:
        old, fresh = olds.get(name), news.get(name)
        tightened = ratcheted_metric(baseline, old, fresh) if old and fresh else None
        if tightened is None:
            skipped.append(name)
        else:
            taken.append(tightened)
    left = []
    if skipped:
        left.append(
            f"{verdict.kernel}: {', '.join(skipped)} improved, but taking "
            f"{'it' if len(skipped) == 1 else 'them'} would widen a bound or range; the "
            "ratchet leaves them as they were"
        )
    if not taken:
        return None, left
    edit = KernelEdit(
        verdict.kernel,
        Action.RATCHET,
        replace(entry, metrics=tuple(taken), history=()),
        tuple(m.name for m in taken),
        {m.name: olds[m.name].value for m in taken},
        verdict.state,
    )
    return edit, left


def _ratcheted_program(
    baseline: Baseline, fresh: ProgramBaseline | None, result: CheckResult
) -> ProgramBaseline | None:
    """The program time the ratchet writes: where it improved beyond its bound and no kernel
    fails (a faster total beside a regressed or missing kernel is the other side of that
    change), the faster value with the tighter of the two bounds; a baseline without one gets
    the fresh one."""
    old, verdict = baseline.program, result.program
    if fresh is None or any(failing(v.state) for v in result.verdicts):
        return None
    if old is None:
        return fresh
    if verdict is None or verdict.state is not KernelState.IMPROVED or fresh.value >= old.value:
        return None
    if fresh.relative <= old.relative:
        return fresh
    return replace(fresh, relative=old.relative, calibration=old.calibration)


def _other_captures(other_scope: str, other_basis: str) -> str:
    return "; ".join(x for x in (other_scope, other_basis) if x)


def _improved(verdict: KernelVerdict) -> bool:
    return any(c.state is State.IMPROVED for c in verdict.comparisons)


def _ratchet_kernels(
    baseline: Baseline, result: CheckResult, fresh: Mapping[str, KernelBaseline]
) -> tuple[list[KernelEdit], list[str]]:
    """The ratchet's edit of each kernel that improved, from `fresh` (the improved kernels
    recorded from the captures), and what it leaves, with why."""
    entries = {k.id: k for k in baseline.kernels}
    edits: list[KernelEdit] = []
    left: list[str] = []
    for verdict in result.verdicts:
        if verdict.state is KernelState.NEW:
            continue
        if verdict.state is KernelState.MISSING:
            left.append(f"{verdict.kernel}: not in the captures; kept as it was")
            continue
        if verdict.state is KernelState.REGRESSED:
            # Its improvements may be the other side of a trade-off: taking them alone
            # would leave a baseline its own build fails.
            left.append(f"{verdict.kernel}: regressed; the ratchet leaves it as it was")
            continue
        if verdict.matched_by == SPLIT:
            # One work class's values are not the kernel's: nothing to tighten from.
            left.append(
                f"{verdict.kernel}: its launches split into work classes the baseline "
                "does not have; the ratchet leaves it as it was"
            )
            continue
        if not _improved(verdict):
            continue  # nothing beyond its bound the better way: nothing to take
        kernel = fresh.get(verdict.kernel)
        if kernel is None:
            left.append(f"{verdict.kernel}: not in the captures; kept as it was")
            continue
        edit, kept = _ratchet_edit(baseline, verdict, entries[verdict.kernel], kernel)
        left.extend(kept)
        if edit is not None:
            edits.append(edit)
    return edits, left


def plan_ratchet(
    baseline: Baseline,
    capture: Capture,
    reason: str | None = None,
    when: Stamp | None = None,
    judged: CheckResult | None = None,
) -> EditPlan:
    """`update --ratchet` (the module's text): the improved metrics of kernels that did not
    regress, tightened, and the program time where it improved and no kernel fails.

    `judged`: the check of `capture` against `baseline` as this function makes it (the
    file's own bounds, no waiver), where the caller has it already. perfgate check's
    suggestion to ratchet is this plan, so it names what the ratchet takes and nothing else.
    Only the kernels that improved are recorded afresh: the ratchet takes nothing else."""
    capture, other_scope, other_basis = for_gpu(baseline, capture)
    result = judged or check(
        baseline,
        capture,
        CheckSettings(report_new_kernels=True, other_scope=other_scope, other_basis=other_basis),
    )
    if other_scope or other_basis:
        # Values of another scope (other launches) or capture type (another metric set: its
        # durations and DRAM bytes differ) are never the baseline's to tighten from.
        why = _other_captures(other_scope, other_basis)
        return EditPlan((), None, (f"nothing ratcheted: {why}",), result, None)
    only = frozenset(v.kernel for v in result.verdicts if _improved(v))
    _, fresh, _, _ = record_fresh(baseline, capture, only=only, judged=result)
    edits, left = _ratchet_kernels(baseline, result, fresh)
    program = _ratcheted_program(baseline, record_program(capture), result)
    written = program_taken(baseline, program, Action.RATCHET, reason, when) if program else None
    return EditPlan(
        tuple(edits),
        None,
        tuple(left),
        result,
        written,
        Action.RATCHET if written is not None else None,
    )


def ratchet_takes(plan: EditPlan) -> RatchetTakes:
    """What a ratchet plan tightens, for a report to name."""
    kernels = tuple((e.kernel, e.metrics) for e in plan.edits if e.action is Action.RATCHET)
    return RatchetTakes(kernels, plan.program is not None)
