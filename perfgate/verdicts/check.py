"""Checking a capture against a baseline: one verdict per kernel, each with its metric
comparisons and the root causes of what changed (like asv compare, every comparison ends in an
explicit state, and the exit code follows from the states alone)."""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from perfgate import causes as differential
from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
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
from perfgate.causes.model import CauseKind, Evidence, KernelDelta, RootCause, Side
from perfgate.identity.configs import (
    CONFIG_INDEPENDENT,
    expected_duration,
    pin_advice,
    slower_choice,
)
from perfgate.identity.families import family_of
from perfgate.identity.grouping import (
    WORK_GAP,
    KernelGroup,
    KernelKey,
    group_launches,
    new_ids,
)
from perfgate.identity.matching import OTHER_WORK, SPLIT, Matching, match, recorded_work
from perfgate.ingest.launches import Capture, Launch, per_file
from perfgate.ingest.names import short_name
from perfgate.judge.common_mode import CommonFactor
from perfgate.judge.comparison import (
    Bounds,
    Comparison,
    State,
    compare_metric,
    merged_bounds,
)
from perfgate.judge.skips import Skip, passes
from perfgate.judge.states import SEVERITY, KernelState, kernel_state
from perfgate.metrics.catalog import (
    SHORT_KERNEL_NS,
    SHORT_KERNEL_SLACK_NS,
    MetricDef,
    Role,
    lookup,
    role_of,
)
from perfgate.metrics.columns import KernelRows, LaunchTable, Stats
from perfgate.metrics.measure import (
    ColumnRoute,
    Measured,
    Unavailable,
    column_route,
    measure,
    rule_speedups,
)
from perfgate.metrics.names import absent_note
from perfgate.metrics.passes import NOT_IN_GATE, in_gate_set
from perfgate.metrics.program import time_in
from perfgate.metrics.stalls import FAMILY_MISMATCH, family_mismatch, mismatch_text
from perfgate.metrics.thresholds import CategoricalOverride, describe_bound
from perfgate.verdicts.common_mode import corrected, noted, process_factors
from perfgate.verdicts.model import CheckResult, KernelVerdict, LaunchCount, ProgramVerdict
from perfgate.verdicts.program import judge_program, recorded_time


@dataclass(frozen=True)
class CheckSettings:
    report_new_kernels: bool = True
    extra_warnings: tuple[str, ...] = field(default_factory=tuple)
    # Why the capture's launch counts do not compare with the baseline's (it was scoped by
    # other ncu launch filters); "": they do. Then the counts are skipped, not judged.
    other_scope: str = ""
    # Why the capture's durations do not compare with the baseline's (a gate capture against
    # a baseline of full captures, or the reverse: perfgate.ingest.meta.time_basis); "": they
    # do. Then the time metrics and the program time are skipped, not judged.
    other_basis: str = ""
    # The reasons the user waived by name (check --waive, a baseline's `waive:`): a gate not
    # judged for one of them is SKIPPED and passes; for any other, UNJUDGED, which fails.
    waived: frozenset[Skip] = frozenset()


# The kernel states a gate not judged can change: a regression or an error stays what it is.
_SETTLED_BY_COMPARISONS = frozenset(
    {KernelState.PASS, KernelState.IMPROVED, KernelState.SKIPPED, KernelState.INCOMPLETE}
)

# What depends on how many launches the capture holds (perfgate.ingest.scope).
SCOPED_METRICS = ("launches", "total_time")
# What depends on the metric set the durations were measured under (the time basis).
TIME_METRICS = ("duration", "total_time")
# What else a gate capture reads otherwise than a full capture: DRAM bytes, 2-8% fewer in
# gate captures of the same kernels (H100, measured), and the rate derived from them.
CAPTURE_TYPE_METRICS = ("dram_bytes", "dram_throughput")
OTHER_CAPTURE_TYPE = "DRAM traffic of gate and full captures of one kernel differs by 2-8%"

# A metric not judged, with the reason that decides its state and the reasons in words.
_Reason = tuple[Skip, str]


def _not_compared(settings: CheckSettings) -> dict[str, _Reason]:
    """The metrics a check cannot judge, each with its reason: launch counts of another
    scope, durations and DRAM bytes of another time basis. A metric with two reasons is
    decided by the first one not waived (both must be waived for it to pass)."""
    found: dict[str, list[tuple[Skip, str]]] = {}
    if settings.other_basis:
        for m in TIME_METRICS:
            found.setdefault(m, []).append((Skip.TIME_BASIS, settings.other_basis))
        for m in CAPTURE_TYPE_METRICS:
            found.setdefault(m, []).append((Skip.CAPTURE_TYPE, OTHER_CAPTURE_TYPE))
    if settings.other_scope:
        for m in SCOPED_METRICS:
            found.setdefault(m, []).append((Skip.SCOPE, settings.other_scope))
    out: dict[str, _Reason] = {}
    for m, reasons in found.items():
        deciding = next((r for r, _ in reasons if r not in settings.waived), reasons[0][0])
        out[m] = (deciding, "not compared: " + "; ".join(text for _, text in reasons))
    return out


def _settle(
    verdict: KernelVerdict, kernel: KernelBaseline, baseline: Baseline, waived: frozenset[Skip]
) -> KernelVerdict:
    """A gate the baseline holds that was not judged fails (UNJUDGED) unless its reason was
    waived by name or is judged otherwise (perfgate.judge.skips); an evidence metric is no
    gate, so it stays SKIPPED, named. The kernel's state follows its comparisons."""
    if all(c.skip is None for c in verdict.comparisons):
        return verdict
    explicit = _explicit(kernel, baseline)
    comparisons = []
    for c in verdict.comparisons:
        if c.skip is not None:  # (only a comparison not judged carries its reason)
            gate = role_of(c.metric) is Role.PRIMARY or c.metric in explicit
            fails = gate and not passes(c.skip, waived)
            c = replace(c, state=State.UNJUDGED if fails else State.SKIPPED)
        comparisons.append(c)
    state = verdict.state
    if state in _SETTLED_BY_COMPARISONS:
        state = kernel_state(comparisons)
    return replace(verdict, comparisons=tuple(comparisons), state=state)


# A metric without its own override has the bounds of its name in its baseline: a check of
# 1,000 kernels asks the same few dozen 37,000 times. One per check() call.
_Bounds = dict[str, Bounds]


def _bounds(defn: MetricDef, metric: MetricBaseline, baseline: Baseline, memo: _Bounds) -> Bounds:
    if metric.threshold is not None or metric.check is not None:
        return merged_bounds(defn, metric, baseline)
    hit = memo.get(defn.name)
    if hit is None:
        hit = memo[defn.name] = merged_bounds(defn, metric, baseline)
    return hit


def _measure(
    metric: MetricBaseline,
    launches: Sequence[Launch],
    columns: frozenset[str],
    rows: KernelRows | None = None,
) -> Measured | Unavailable:
    # Stall shares compare over the baseline's own reason set, whatever else the capture holds.
    return measure(metric.definition, launches, columns, metric.formula_group, metric.reasons, rows)


def _family_warning(verdicts: Sequence[KernelVerdict]) -> str:
    """One warning for every stall metric the capture's stall family could not give: the
    families (the metrics' own message), how many metrics of how many kernels, the lever."""
    hit = [
        (v.kernel, c.message)
        for v in verdicts
        for c in v.comparisons
        if c.message.startswith(FAMILY_MISMATCH)
    ]
    if not hit:
        return ""
    kernels = len({k for k, _ in hit})
    return (
        f"{hit[0][1]}: {len(hit)} stall metrics of {kernels} kernel{'s' if kernels != 1 else ''}"
        " not compared; recapture with perfgate capture -b BASELINE"
    )


def _compare_metric(
    kernel: KernelBaseline,
    metric: MetricBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    baseline: Baseline,
    memo: _Bounds | None = None,
    rows: KernelRows | None = None,
) -> tuple[Comparison, Measured | None]:
    defn = metric.definition
    measured = _measure(metric, launches, capture.columns, rows)
    if isinstance(measured, Unavailable):
        gated_out = capture.gate and not measured.architecture and _outside_gate(measured.needed)
        if defn.stall is not None and not measured.architecture and not gated_out:
            # (A gate capture holds no stall counters: its stall metrics are left to the
            # diagnosis capture below, not a family mismatch.)
            cc = next((la.cc for la in launches if la.cc), None)
            other, held = family_mismatch(metric.formula_group, capture.columns, cc)
            if other:
                # The family is written on dominant_stall; the others share the fingerprint's.
                fp = baseline.fingerprint
                family = metric.family or (fp.stall_family if fp is not None else None)
                message = mismatch_text(family, metric.formula_group, held)
                return Comparison(
                    kernel.id, metric.name, State.MISSING_METRIC, metric.value,
                    unit=defn.unit, message=message,
                ), None  # fmt: skip
        message, state = measured.reason, State.SKIPPED
        skip: Skip | None = Skip.ARCHITECTURE
        if gated_out:
            # Left to the diagnosis capture: a real result, never a silent pass.
            message, skip = NOT_IN_GATE, Skip.CAPTURE_TYPE
        elif not measured.architecture:
            skip = None
            state = State.MISSING_METRIC
            if measured.needed:
                more = ", ..." if len(measured.needed) > 4 else ""
                message += f" (needs {', '.join(measured.needed[:4])}{more})" + absent_note(
                    measured.needed[:4], capture.columns, next((la.cc for la in launches), None)
                )
        return Comparison(
            kernel.id, metric.name, state, metric.value, unit=defn.unit, message=message,
            skip=skip,
        ), None  # fmt: skip
    judged_by = (
        merged_bounds(defn, metric, baseline)
        if memo is None
        else _bounds(defn, metric, baseline, memo)
    )
    comparison = compare_metric(
        kernel.id, metric, defn, measured.value, measured.unit, judged_by,
        current_shares=measured.shares,
    )  # fmt: skip
    return comparison, measured


def _outside_gate(needed: Sequence[str]) -> bool:
    return bool(needed) and not all(in_gate_set(n) for n in needed)


def _explain_rates(
    comparisons: list[Comparison], kernel: KernelBaseline, current: Side
) -> list[Comparison]:
    """A rate (DRAM %, throughput %) divides work by time: when the kernel got faster, or the
    work fell with the rate, the lower rate is the consequence of a good change, not a
    regression (a kernel reading half the bytes 20% faster uses less DRAM bandwidth)."""
    by_metric = {c.metric: c for c in comparisons}
    duration = by_metric.get("duration")
    # The change's sign, not the state alone: a baseline may override duration's direction.
    faster = duration is not None and duration.state is State.IMPROVED and _fell(duration)
    # A slower kernel's rates are never explained away by its work: the time is the point.
    slower = duration is not None and duration.state is State.REGRESSED and not _fell(duration)
    out = []
    for c in comparisons:
        defn = lookup(c.metric)
        if c.state is not State.REGRESSED or not defn.rate_of:
            out.append(c)
            continue
        reason = ""
        if faster and duration is not None:
            reason = f"the kernel got faster (duration {_pct(duration.relative_change)})"
        for work in () if slower else defn.rate_of:
            before, after = kernel.value(work), current.values.get(work)
            fell = isinstance(before, float) and isinstance(after, float) and before > 0
            if fell and after < before * 0.98:  # type: ignore[operator]
                reason = f"{work} fell with it ({_pct(after / before - 1)})"  # type: ignore[operator]
        if reason:
            out.append(replace(c, state=State.PASS, explained=f"a rate: {reason}"))
        else:
            out.append(c)
    return out


def _fell(comparison: Comparison) -> bool:
    return comparison.change is not None and comparison.change < 0


def _corroborate_stall_mix(comparisons: list[Comparison]) -> list[Comparison]:
    """Shares are zero-sum: when two reasons are close, the dominant one flips between runs
    with no stall getting longer (seen: a Triton matmul's barrier and long_scoreboard on an
    H100, within one machine start). A changed dominant stall counts when the stall cycles
    per instruction of some reason regressed beyond their own bound; without stall_cpi in the
    baseline the categorical check stands alone."""
    cpi = [c for c in comparisons if c.metric.startswith("stall_cpi.")]
    if not cpi or any(c.state is State.REGRESSED for c in cpi):
        return comparisons
    return [
        replace(
            c,
            state=State.PASS,
            explained="the stall mix shifted, but no reason's stall cycles per instruction "
            "grew beyond its bound",
        )
        # Only the "must not change" check: an expect or forbid the user wrote stands.
        if c.metric == "dominant_stall"
        and c.state is State.REGRESSED
        and c.message.startswith("changed from")
        else c
        for c in comparisons
    ]


def _explicit(kernel: KernelBaseline, baseline: Baseline) -> frozenset[str]:
    """The metrics whose bound the baseline sets itself: a per-metric `threshold:` perfgate
    did not calibrate (a calibrated one has `calibration:` beside it), a `check:`, or an entry
    of the file's `thresholds:` or `checks:` map."""
    own = {
        m.name
        for m in kernel.metrics
        if (m.threshold is not None and m.calibration is None) or _sets_check(m.check)
    }
    return frozenset(own | set(baseline.thresholds) | set(baseline.checks))


def _sets_check(check: CategoricalOverride | None) -> bool:
    # The loader gives every metric an override, empty where the file wrote none.
    return check is not None and any(
        v is not None for v in (check.stable, check.expect, check.forbid, check.margin)
    )


def _note_evidence(
    comparisons: list[Comparison], kernel: KernelBaseline, baseline: Baseline
) -> list[Comparison]:
    """An evidence metric (perfgate.metrics.catalog.Role) beyond its bound fails its kernel
    only beside a primary regression of the same kernel, or under a bound the baseline set
    itself; otherwise it is NOTED. Beyond its bound the better way it is NOTED too, never
    IMPROVED, unless the baseline set its bound itself. Rates, shares and stall cycles moved
    that far between machine starts of unchanged builds (tests/data/field/h100,
    docs/noise.md), while the work and launch configuration did not."""
    recorded = kernel.value("duration")
    duration = recorded if isinstance(recorded, float | int) else None

    def role(c: Comparison) -> Role:
        moved = _moved_per_launch(c, kernel)
        if c.state is State.IMPROVED and moved is not None:
            moved = abs(moved)  # a short kernel faster by more than the slack gained for real
        return role_of(c.metric, duration, moved)

    primary = any(c.state is State.REGRESSED and role(c) is Role.PRIMARY for c in comparisons)
    # Beside a primary regression an evidence regression explains it and stays; an evidence
    # move the better way is never an improvement: the same noise between machine starts
    # (tests/data/field against h100-a: a fill kernel's achieved occupancy +42% on h100-c, an
    # add's stall cycles per instruction -24% and a layout kernel's store sectors -7.5% on
    # h100-b) would otherwise be reported as one, and tightened in by the ratchet.
    noted = [
        c.metric
        for c in comparisons
        if (c.state is State.IMPROVED or (c.state is State.REGRESSED and not primary))
        and role(c) is Role.EVIDENCE
    ]
    if not noted:
        return comparisons
    explicit = _explicit(kernel, baseline)
    return [
        replace(
            c,
            state=State.NOTED,
            explained=_why_noted(c.metric, better=c.state is State.IMPROVED),
        )
        if c.metric in noted and c.metric not in explicit
        else c
        for c in comparisons
    ]


def _moved_per_launch(c: Comparison, kernel: KernelBaseline) -> float | None:
    """How far a time comparison moved, in ns a launch (total_time is per run)."""
    if not isinstance(c.current, float | int) or not isinstance(c.baseline, float | int):
        return None
    launches = kernel.launches if c.metric == "total_time" and kernel.launches else 1
    return (c.current - c.baseline) / launches


def _why_noted(metric: str, better: bool = False) -> str:
    if role_of(metric) is Role.PRIMARY:  # primary in general: evidence for a short kernel
        return (
            f"evidence only: a kernel under {SHORT_KERNEL_NS / 1000:g} us that moved by at most "
            f"{SHORT_KERNEL_SLACK_NS / 1000:g} us a launch, whose time the program's GPU time "
            "gates; "
            + ("no improvement to lock in" if better else "no primary metric of it regressed")
        )
    if better:
        return "evidence only: not gated, so no improvement to lock in"
    return "evidence only: no primary metric of this kernel regressed"


def _pct(rel: float | None) -> str:
    return "" if rel is None else f"{rel * 100:+.1f}%"


def _dominant_shares(kernel: KernelBaseline) -> dict[str, float] | None:
    for m in kernel.metrics:
        if m.shares:
            return dict(m.shares)
    return None


def _delta(
    kernel: KernelBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    comparisons: Sequence[Comparison],
    measured: dict[str, Measured],
) -> KernelDelta:
    base_values: dict[str, float | str] = dict(kernel.info)
    for m in kernel.metrics:
        base_values[m.name] = m.value
    # The gated values were measured by the comparisons; the diagnosis's others once more.
    rest = [n for n in differential.metrics() if n not in measured]
    current = {**differential.measure_all(launches, capture.columns, rest), **measured}
    cur_values: dict[str, float | str] = {name: got.value for name, got in current.items()}
    cur_shares = next(
        (dict(got.shares) for got in current.values() if got.shares is not None), None
    )
    cur_values.update(rule_speedups(launches))
    first = launches[0]
    messages: dict[str, str] = {}
    lines: dict[str, tuple[tuple[str, float], ...]] = {}
    for launch in launches:
        for rule, text in launch.rules.items():
            messages.setdefault(rule, text)
        for counter, where in launch.lines.items():
            lines.setdefault(counter, where)
    family = _family(kernel, first.name)
    runs = len({la.source for la in launches}) or 1
    return KernelDelta(
        kernel=kernel.id,
        baseline=Side(
            name=kernel.name or first.name,
            values=base_values,
            shares=_dominant_shares(kernel),
            launches=float(kernel.launches) if kernel.launches is not None else None,
            grid=kernel.match.grid,
            block=kernel.match.block,
        ),
        current=Side(
            name=first.name,
            values=cur_values,
            shares=cur_shares,
            launches=len(launches) / runs,
            grid=first.grid,
            block=first.block,
            rules=messages,
            lines=lines,
        ),
        comparisons=tuple(comparisons),
        family=family,
    )


def _family(kernel: KernelBaseline, name: str) -> str | None:
    """The family of a kernel's name, else as recorded: a baseline recorded before a family's
    naming was known says another (cuDNN's xmma engines, `..._cudnn`, were called cuBLAS)."""
    family = family_of(name)
    return family.name if family else kernel.family


def _causes(delta: KernelDelta) -> tuple[RootCause, ...]:
    return tuple(differential.diagnose(delta).causes)


_HEADLINE_ORDER: dict[KernelState, tuple[CauseKind, ...]] = {
    KernelState.REGRESSED: (CauseKind.REGRESSION, CauseKind.TRADE_OFF, CauseKind.CHANGE),
    KernelState.INCOMPLETE: (CauseKind.REGRESSION, CauseKind.TRADE_OFF, CauseKind.CHANGE),
    KernelState.IMPROVED: (CauseKind.IMPROVEMENT, CauseKind.CHANGE),
}


def _launch_count(
    kernel: KernelBaseline, launches: Sequence[Launch], paths: Sequence[str]
) -> LaunchCount:
    count = float(kernel.launches) if kernel.launches is not None else None
    return LaunchCount(count, per_file(launches, paths))


def _judge_kernel(
    kernel: KernelBaseline,
    launches: list[Launch],
    capture: Capture,
    baseline: Baseline,
    how: str,
    memo: _Bounds | None = None,
    rows: KernelRows | None = None,
    passed: list[Comparison] | None = None,
) -> KernelVerdict:
    """`passed`: the kernel's comparisons when every one passed (_passing), else None."""
    comparisons: list[Comparison] = []
    measured: dict[str, Measured] = {}
    if passed is not None:
        comparisons = passed
    else:
        reconfigured = kernel.pinned is not None and "reconfigured" in how
        for metric in kernel.metrics:
            if reconfigured and metric.name not in CONFIG_INDEPENDENT:
                # The tile changed: this metric follows it (docs/identity.md).
                comparisons.append(_configuration_changed(kernel, metric))
                continue
            comparison, got = _compare_metric(
                kernel, metric, launches, capture, baseline, memo, rows
            )
            comparisons.append(comparison)
            if got is not None:
                measured[metric.name] = got
    changed = how.startswith(_CHANGED)
    family = _family(kernel, launches[0].name)
    causes: tuple[RootCause, ...] = ()
    if changed or any(c.state is not State.PASS for c in comparisons):
        # Only a kernel that moved is diagnosed: the common all-pass check measures its gated
        # metrics and nothing more (docs/scale.md).
        delta = _delta(kernel, launches, capture, comparisons, measured)
        comparisons = _corroborate_stall_mix(_explain_rates(comparisons, kernel, delta.current))
        comparisons = _note_evidence(comparisons, kernel, baseline)
        delta = replace(delta, comparisons=tuple(comparisons))
        causes = _causes(delta)
    state = kernel_state(comparisons)
    if state is KernelState.PASS:
        causes = tuple(c for c in causes if c.kind is CauseKind.CHANGE)
    # The headline answers the verdict: why it regressed (or the trade-off that made it), why
    # it improved. The rules' own ranking holds within a kind.
    order = _HEADLINE_ORDER.get(state, ())
    causes = tuple(
        sorted(causes, key=lambda c: order.index(c.kind) if c.kind in order else len(order))
    )
    return KernelVerdict(
        kernel=kernel.id,
        name=launches[0].name,
        state=state,
        comparisons=tuple(comparisons),
        causes=causes,
        launches=_launch_count(kernel, launches, capture.paths),
        captures=tuple(sorted({la.source for la in launches})),
        message=how if changed else "",
        family=family,
        nvtx=kernel.match.nvtx,
        matched_by=how.split(":")[0] if changed else how,
        line=kernel.line,
    )


# Counted per captured run over all of a kernel's launches: judged on every work class at once.
_PER_RUN = frozenset({"launches", "total_time"})


def _judge_split(
    kernel: KernelBaseline,
    classes: Sequence[KernelGroup],
    capture: Capture,
    baseline: Baseline,
    memo: _Bounds,
    reasons: Mapping[str, _Reason] | None = None,
) -> KernelVerdict:
    """A baselined kernel whose launches now fall into work classes its entry does not have
    (one launch of three ran 40% more instructions): each class is judged against the entry,
    the counts per run over all of them, and the verdict is the worst class's. Never "new":
    a regressed launch fails the kernel it belongs to (docs/identity.md). The metrics in
    `reasons` (another scope's launch counts, another time basis's durations) are skipped."""
    skipped = tuple(
        Comparison(kernel.id, m.name, State.SKIPPED, m.value, unit=m.definition.unit,
                   message=reasons[m.name][1], skip=reasons[m.name][0])
        for m in kernel.metrics if reasons and m.name in reasons
    )  # fmt: skip
    if reasons:
        kernel = replace(
            kernel,
            launches=None if "launches" in reasons else kernel.launches,
            metrics=tuple(m for m in kernel.metrics if m.name not in reasons),
        )
    pooled = sorted((la for g in classes for la in g.launches), key=lambda la: la.index)
    whole = _judge_kernel(kernel, pooled, capture, baseline, "name", memo)
    per_launch = replace(
        kernel,
        launches=None,
        metrics=tuple(m for m in kernel.metrics if m.name not in _PER_RUN),
    )
    rank = {s: i for i, s in enumerate(SEVERITY)}
    parts = [
        (g, _judge_kernel(per_launch, list(g.launches), capture, baseline, "name", memo))
        for g in classes
    ]
    group, worst = min(parts, key=lambda part: rank[part[1].state])
    comparisons = worst.comparisons + tuple(c for c in whole.comparisons if c.metric in _PER_RUN)
    comparisons += skipped
    state = kernel_state(comparisons)
    instructions = group.instructions
    work = f", {instructions:,.0f} instructions" if instructions is not None else ""
    count = len(group.launches)
    message = (
        f"its launches split into {len(classes)} work classes (instruction counts more than "
        f"{(WORK_GAP - 1) * 100:.0f}% apart) where the baseline recorded one; each is judged "
        f"against this entry, and the verdict is work class {group.key.work}'s "
        f"({count} launch{'es' if count != 1 else ''}{work}): {state.value}"
    )
    return replace(
        worst,
        state=state,
        comparisons=comparisons,
        causes=worst.causes if state is not KernelState.PASS else whole.causes,
        launches=whole.launches,
        captures=whole.captures,
        message=message,
        matched_by=SPLIT,
    )


def _out_of_scope(
    kernel: KernelBaseline,
    launches: list[Launch],
    capture: Capture,
    baseline: Baseline,
    how: str,
    reasons: Mapping[str, _Reason],
    memo: _Bounds,
) -> KernelVerdict:
    """A kernel of a capture scoped otherwise than the baseline, or measured under another
    time basis: the metrics in `reasons` (its launch counts, its durations) are skipped with
    their reason, never judged (nor diagnosed: no "launched less often"); the rest of its
    metrics are judged as always."""
    counted = [m for m in kernel.metrics if m.name in reasons]
    configured = _per_configuration(kernel, launches)
    judged = replace(
        configured,
        launches=None if "launches" in reasons else configured.launches,
        metrics=tuple(m for m in configured.metrics if m.name not in reasons),
    )
    verdict = _named_choice(
        _judge_kernel(judged, launches, capture, baseline, how, memo), judged, launches, capture
    )
    skipped = tuple(
        Comparison(kernel.id, m.name, State.SKIPPED, m.value, unit=m.definition.unit,
                   message=reasons[m.name][1], skip=reasons[m.name][0])
        for m in counted
    )  # fmt: skip
    return replace(verdict, comparisons=verdict.comparisons + skipped)


def _configuration_changed(kernel: KernelBaseline, metric: MetricBaseline) -> Comparison:
    return Comparison(
        kernel=kernel.id,
        metric=metric.name,
        state=State.SKIPPED,
        baseline=metric.value,
        unit=metric.unit,
        message="configuration changed",
        skip=Skip.CONFIGURATION,
    )


def _per_configuration(kernel: KernelBaseline, launches: Sequence[Launch]) -> KernelBaseline:
    """An autotuned entry with its duration set to what the check's configurations took when
    recorded (perfgate.identity.configs.expected_duration); its bound is one configuration's
    noise (perfgate.lifecycle.record)."""
    expected = expected_duration(kernel.configurations, launches) if kernel.tuned else None
    if expected is None:
        return kernel
    metrics = tuple(
        replace(m, value=expected) if m.name == "duration" else m for m in kernel.metrics
    )
    return replace(kernel, metrics=metrics)


def _named_choice(
    verdict: KernelVerdict, kernel: KernelBaseline, launches: Sequence[Launch], capture: Capture
) -> KernelVerdict:
    """An autotuned kernel slower than the best configuration its baseline saw: its duration
    says which configuration the autotuner chose and which was the best
    (perfgate.identity.configs.slower_choice)."""
    if not kernel.tuned or not any(
        c.metric == "duration" and c.state is State.REGRESSED for c in verdict.comparisons
    ):
        return verdict

    def duration(some: Sequence[Launch]) -> float | None:
        got = measure(lookup("duration"), some, capture.columns)
        timed = isinstance(got, Measured) and isinstance(got.value, float)
        return float(got.value) if timed else None  # type: ignore[union-attr]

    named = slower_choice(kernel.configurations, launches, duration)
    if not named:
        return verdict
    comparisons = tuple(
        replace(c, message=f"{c.message}; {named}" if c.message else named)
        if c.metric == "duration" and c.state is State.REGRESSED
        else c
        for c in verdict.comparisons
    )
    # The headline: a rule comparing the counters of two configurations explains the tile.
    chosen = RootCause(
        "autotuned-configuration", CauseKind.REGRESSION,
        "Slower autotuner choice", named,
        pin_advice(kernel.name or launches[0].name), explains=("duration", "total_time"),
    )  # fmt: skip
    causes = tuple(c for c in verdict.causes if not _tile_work(c))
    # A mechanism of the kernel's own code that changed its work per element outranks the
    # tile choice (a softmax writing fp32: every configuration stores twice the bytes).
    if causes and causes[0].mechanism in _OUTRANKS_CHOICE:
        return replace(verdict, comparisons=comparisons, causes=(causes[0], chosen, *causes[1:]))
    return replace(verdict, comparisons=comparisons, causes=(chosen, *causes))


_OUTRANKS_CHOICE = ("wider-stores",)
# Counts a launch configuration decides: another tile or warp count runs other instructions
# for the same elements (fam-b's softmax at 16 warps against a median of 4: x2.11), so "More
# work" on them alone is the autotuner's choice again, not work the program asked for.
_TILE_COUNTS = frozenset({"instructions_executed", "tensor_instructions"})


def _tile_work(cause: RootCause) -> bool:
    """A "More work" cause whose evidence is only counts the configuration decides."""
    return cause.mechanism == "more-work" and all(e.metric in _TILE_COUNTS for e in cause.evidence)


# Matched by another identity, or an autotuned kernel at another configuration than most
# recorded runs used (perfgate.identity.configs): always diagnosed, the message says how.
_CHANGED = ("renamed", "reshaped", "reconfigured")


class _Passing:
    """The comparisons of a kernel whose every metric passes, worked out with the least
    work per metric: the route to each metric's statistics (perfgate.metrics.measure.column_route)
    once per metric, formula group, reason set and compute capability, the statistics once
    for every kernel, no Measured values (a kernel that passes is not diagnosed). Anything
    else (a metric that moved, a label, a bound of its own, a value the column table cannot
    give) returns None, and the kernel is judged metric by metric by _compare_metric, whose
    comparisons these equal (tests/test_columns.py)."""

    def __init__(
        self, table: LaunchTable, baseline: Baseline, columns: frozenset[str], memo: _Bounds
    ) -> None:
        self.table = table
        self.baseline = baseline
        self.columns = columns
        self.memo = memo
        self.routes: dict[tuple[str, str | None, tuple[str, ...] | None, str | None], Any] = {}

    def _route(self, metric: MetricBaseline, cc: str | None) -> _Route | None:
        # The recorded group (None: the catalog's first formula's), not formula_group: a
        # property call saved 35,000 times.
        key = (metric.name, metric.group, metric.reasons, cc)
        hit = self.routes.get(key, _UNSEEN)
        if hit is _UNSEEN:
            defn = metric.definition
            route = column_route(defn, self.columns, cc, metric.formula_group, metric.reasons)
            stats = route.stats(self.table) if route is not None else None
            hit = None
            if route is not None and stats is not None:
                # Only metrics without bounds of their own come here: the bounds of the name.
                judged_by = _bounds(defn, metric, self.baseline, self.memo)
                text = describe_bound(judged_by.threshold, judged_by.direction, route.unit)
                hit = _Route(route, stats, defn, judged_by, text)
            self.routes[key] = hit
        return hit  # type: ignore[no-any-return]

    def comparisons(
        self,
        kernel: KernelBaseline,
        launches: list[Launch],
        capture: Capture,
        rows: KernelRows,
    ) -> list[Comparison] | None:
        out: list[Comparison] = []
        index, cc = rows.group, rows.cc
        for metric in kernel.metrics:
            value = metric.value
            hit = None
            if metric.threshold is None and metric.check is None and value.__class__ is not str:
                hit = self._route(metric, cc)
            stats = hit.stats[index] if hit is not None else None
            if hit is None or stats is None or not stats[0]:
                # A label, a bound of its own, a count per capture file: the plain way.
                comparison, _ = _compare_metric(
                    kernel, metric, launches, capture, self.baseline, self.memo, rows
                )
                if comparison.state is not State.PASS:
                    return None
                out.append(comparison)
                continue
            # The same judgement as the plain way's, from the column statistics.
            comparison = compare_metric(
                kernel.id, metric, hit.defn, hit.route.value(stats), hit.route.unit,
                hit.bounds, hit.bound,
            )  # fmt: skip
            if comparison.state is not State.PASS:
                return None
            out.append(comparison)
        return out


class _Route(NamedTuple):
    route: ColumnRoute
    stats: list[Stats]  # per group of the table
    defn: MetricDef
    bounds: Bounds
    bound: str  # describe_bound() of the bounds in the route's unit


_UNSEEN = object()


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


def _missing(
    kernel: KernelBaseline, matching: Matching, ids: Mapping[KernelKey, str], capture: Capture
) -> KernelVerdict:
    name = kernel.name or kernel.match.name or kernel.id
    family = _family(kernel, name)
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


def _new(
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


def _notice(baseline: Baseline, capture: Capture, groups: Sequence[KernelGroup]) -> str:
    held = sorted({short_name(g.key.name) for g in groups})
    shown = ", ".join(held[:8]) + (f" and {len(held) - 8} more" if len(held) > 8 else "")
    n = len(baseline.kernels)
    lead = "the baselined kernel is not" if n == 1 else f"none of the {n} baselined kernels is"
    return (
        f"{lead} in {', '.join(capture.paths)}: is it a capture of another program, or did a "
        f"kernel filter (-k, --nvtx-include, --launch-count) leave {'it' if n == 1 else 'them'} "
        f"out? It holds {len(held)} kernel{'' if len(held) == 1 else 's'}: {shown}"
    )


def check(
    baseline: Baseline, capture: Capture, settings: CheckSettings | None = None
) -> CheckResult:
    # The comparisons make ~10 objects per metric, none in a reference cycle: the cyclic
    # collector, run every 700 of them, would walk the capture's launches and the baseline
    # again each time it reached its oldest generation (docs/scale.md). Paused, as yamlload
    # pauses it while building a baseline.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check(baseline, capture, settings or CheckSettings())
    finally:
        if collecting:
            gc.enable()


def _check(baseline: Baseline, capture: Capture, settings: CheckSettings) -> CheckResult:
    groups = group_launches(capture.launches, by_nvtx=baseline.by_nvtx)
    matching = match(baseline, groups)
    ids = new_ids([g.key for g in matching.unclaimed], (k.id for k in baseline.kernels))
    verdicts: list[KernelVerdict] = []
    memo: _Bounds = {}
    matched = [matching.launches(kernel.id) for kernel in baseline.kernels]
    # Every kernel's metrics from the capture's columns at once (perfgate.metrics.columns).
    table = LaunchTable(capture.launches, matched)
    passing = _Passing(table, baseline, capture.columns, memo)
    not_compared = _not_compared(settings)
    factors = _factors(baseline, matching, matched, capture, not_compared)
    for index, (kernel, launches) in enumerate(zip(baseline.kernels, matched, strict=True)):
        if launches and matching.how[kernel.id].startswith(SPLIT):
            verdict = _judge_split(
                kernel, matching.groups[kernel.id], capture, baseline, memo, not_compared
            )
            verdicts.append(_settle(verdict, kernel, baseline, settings.waived))
        elif launches and not_compared:
            verdict = _out_of_scope(
                kernel, launches, capture, baseline, matching.how[kernel.id], not_compared, memo
            )
            verdicts.append(_settle(verdict, kernel, baseline, settings.waived))
        elif launches:
            kernel = _per_configuration(kernel, launches)
            adjusted = corrected(kernel, factors.get(kernel.id), baseline.gpu.gpu)
            factor = factors.get(kernel.id) if adjusted is not kernel else None
            kernel = adjusted
            how = matching.how[kernel.id]
            cc = next((la.cc for la in launches if la.cc), None)
            rows = table.kernel(index, cc)
            passed = None
            if rows is not None and not how.startswith(_CHANGED):
                passed = passing.comparisons(kernel, launches, capture, rows)
            verdict = _judge_kernel(kernel, launches, capture, baseline, how, memo, rows, passed)
            verdict = _named_choice(verdict, kernel, launches, capture)
            verdict = noted(verdict, kernel, factor)
            verdicts.append(_settle(verdict, kernel, baseline, settings.waived))
        else:
            verdicts.append(_missing(kernel, matching, ids, capture))
    if settings.report_new_kernels:
        for group in matching.unclaimed:
            replaced = tuple(kid for kid, (gs, _) in matching.replaced_by.items() if group in gs)
            verdicts.append(_new(group, ids[group.key], replaced, capture))
    missing = [k for k, launches in zip(baseline.kernels, matched, strict=True) if not launches]
    # With no baselined kernel left in the capture it may be another program's capture (the
    # notice says so): only a change of the whole program (its dtype, its math mode) is told.
    unchanged = len(missing) < len(baseline.kernels)
    changes = _changes(missing, matching.unclaimed, ids, capture, unchanged, verdicts)
    explained = {m for c in changes for m in c.members}
    notice = ""
    if all(k.id in explained for k in missing) and missing:
        pass  # every kernel gone is explained by a change: no other program (the findings say)
    elif baseline.kernels and not matching.groups and groups:
        notice = _notice(baseline, capture, groups)
    elif baseline.kernels and not capture.launches:
        notice = (
            f"no launch in {', '.join(capture.paths)} comes from this baseline's GPU: capture "
            "on that GPU too, or leave its baseline out of this check"
        )
    # Which GPU's launches this baseline judges was decided before (perfgate.baseline.selection).
    gpu = baseline.gpu.gpu
    warnings = list(capture.warnings) + list(settings.extra_warnings) + list(baseline.warnings)
    mismatch = _family_warning(verdicts)
    if mismatch:
        warnings.append(mismatch)
    # Another scope, time basis or capture type is said once per reason by every report
    # (verdicts.model.not_judged), not as a warning here.
    devices = capture.devices
    new_launches = [la for group in matching.unclaimed for la in group.launches]
    return CheckResult(
        baseline_path=baseline.path,
        capture_paths=capture.paths,
        verdicts=tuple(verdicts),
        warnings=tuple(warnings),
        devices=devices,
        baseline_gpu=gpu,
        notice=notice,
        program=_program(baseline, capture, new_launches, missing, settings),
        changes=changes,
    )


def _factors(
    baseline: Baseline,
    matching: Matching,
    matched: Sequence[Sequence[Launch]],
    capture: Capture,
    not_compared: Mapping[str, Any],
) -> dict[str, CommonFactor]:
    """Each kernel's common factor (perfgate.verdicts.common_mode); none where durations are
    not compared at all."""
    if any(m in not_compared for m in TIME_METRICS):
        return {}
    plain = [
        not matching.how.get(k.id, "").startswith((SPLIT, *_CHANGED)) for k in baseline.kernels
    ]
    return process_factors(baseline.kernels, matched, plain, capture)


def _program(
    baseline: Baseline,
    capture: Capture,
    new_launches: list[Launch],
    missing: list[KernelBaseline],
    settings: CheckSettings,
) -> ProgramVerdict | None:
    """The whole-program time, a sum over the captured launches: of another scope or time
    basis it is not judged, like the kernels' launch counts and durations, and fails
    (UNJUDGED) unless every reason was waived by name."""
    program = judge_program(baseline, capture, new_launches, missing)
    reasons = [
        (skip, text)
        for skip, text in (
            (Skip.TIME_BASIS, settings.other_basis),
            (Skip.SCOPE, settings.other_scope),
        )
        if text
    ]
    if program.skip is not None:  # the capture could not give it: judged below like the rest
        reasons = [(program.skip, program.reason), *reasons]
    elif program.state is KernelState.SKIPPED or not reasons:
        return program  # judged, or no program time recorded: nothing the baseline gates
    deciding = next((r for r, _ in reasons if r not in settings.waived), None)
    return replace(
        program,
        state=KernelState.SKIPPED if deciding is None else KernelState.UNJUDGED,
        skip=deciding or reasons[0][0],
        reason="not compared: " + "; ".join(text for _, text in reasons),
    )


def _changes(
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
