"""One metric of one kernel measured in the capture and compared with its baseline entry: the
plain route of every metric (perfgate.verdicts.passing takes a faster one to the same
judgement for a kernel that passes), and the comparisons of a metric not measured."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.comparison import Bounds, Comparison, State, compare_metric, merged_bounds
from perfgate.judge.skips import Skip
from perfgate.metrics.catalog import MetricDef
from perfgate.metrics.columns import KernelRows
from perfgate.metrics.measure import Measured, Unavailable, measure
from perfgate.metrics.names import absent_note
from perfgate.metrics.passes import NOT_IN_GATE, in_gate_set
from perfgate.metrics.stalls import family_mismatch, mismatch_text

# A metric without its own override has the bounds of its name in its baseline: a check of
# 1,000 kernels asks the same few dozen 37,000 times. One per check() call.
BoundsMemo = dict[str, Bounds]


def bounds_of(
    defn: MetricDef, metric: MetricBaseline, baseline: Baseline, memo: BoundsMemo
) -> Bounds:
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


def compare_one(
    kernel: KernelBaseline,
    metric: MetricBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    baseline: Baseline,
    memo: BoundsMemo | None = None,
    rows: KernelRows | None = None,
) -> tuple[Comparison, Measured | None]:
    """`metric` of `kernel` measured over `launches` and judged (compare_metric), with the
    value measured; a metric the capture cannot give ends in a state of its own."""
    defn = metric.definition
    measured = _measure(metric, launches, capture.columns, rows)
    if isinstance(measured, Unavailable):
        return _unavailable(kernel, metric, launches, capture, baseline, measured), None
    judged_by = (
        merged_bounds(defn, metric, baseline)
        if memo is None
        else bounds_of(defn, metric, baseline, memo)
    )
    comparison = compare_metric(
        kernel.id, metric, defn, measured.value, measured.unit, judged_by,
        current_shares=measured.shares,
    )  # fmt: skip
    return comparison, measured


def _unavailable(
    kernel: KernelBaseline,
    metric: MetricBaseline,
    launches: Sequence[Launch],
    capture: Capture,
    baseline: Baseline,
    measured: Unavailable,
) -> Comparison:
    defn = metric.definition
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
            )  # fmt: skip
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
        kernel.id, metric.name, state, metric.value, unit=defn.unit, message=message, skip=skip
    )


def _outside_gate(needed: Sequence[str]) -> bool:
    return bool(needed) and not all(in_gate_set(n) for n in needed)


def not_compared(
    kernel: KernelBaseline, metric: MetricBaseline, skip: Skip, why: str
) -> Comparison:
    """A metric decided before judging: not compared, for `skip`, in the words `why`."""
    return Comparison(
        kernel.id, metric.name, State.SKIPPED, metric.value, unit=metric.definition.unit,
        message=why, skip=skip,
    )  # fmt: skip


def configuration_changed(kernel: KernelBaseline, metric: MetricBaseline) -> Comparison:
    """A metric that follows a tile the kernel no longer runs at (docs/identity.md)."""
    return Comparison(
        kernel=kernel.id,
        metric=metric.name,
        state=State.SKIPPED,
        baseline=metric.value,
        unit=metric.unit,
        message="configuration changed",
        skip=Skip.CONFIGURATION,
    )
