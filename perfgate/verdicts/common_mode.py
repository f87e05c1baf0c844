"""A process's common factor applied to its kernels' durations (perfgate.judge.common_mode
decides the factor and the bound): each kernel whose process ran slow or fast as a whole is
judged against its recorded time scaled by that factor, under the corrected floor; and a
kernel whose time is the fastest launch of two capture files or more is bounded by the two-run
floor where the time floor set its bound (perfgate.judge.two_runs).

The recorded entry is adjusted before judging, as an autotuned kernel's expected duration is,
so that every route through the check (metric by metric, or a passing kernel's column
statistics) judges the same numbers; the comparison then says what it was judged against
(perfgate.judge.rules.word_noise)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from perfgate.baseline.model import KernelBaseline, MetricBaseline
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.common_mode import (
    CommonFactor,
    Timed,
    common_factors,
    corrected_bound,
)
from perfgate.judge.rules import CORRECTED
from perfgate.judge.two_runs import MIN_RUNS, TWO_RUN_METRICS, four_run_bound, two_run_bound
from perfgate.metrics.catalog import lookup
from perfgate.metrics.measure import Measured, measure
from perfgate.metrics.thresholds import ThresholdOverride


def _fastest(launches: Sequence[Launch], capture: Capture) -> float | None:
    got = measure(lookup("duration"), launches, capture.columns)
    if isinstance(got, Measured) and isinstance(got.value, float) and got.value > 0:
        return got.value
    return None


def process_factors(
    kernels: Sequence[KernelBaseline],
    launches: Sequence[Sequence[Launch]],
    plain: Sequence[bool],
    capture: Capture,
) -> dict[str, CommonFactor]:
    """Each kernel's common factor from the others of this capture. Only kernels matched as
    they were recorded take part (`plain`: not split, renamed, reshaped or reconfigured), and
    no autotuned one: another configuration's time is no noise."""
    timed: list[Timed] = []
    for kernel, some, ok in zip(kernels, launches, plain, strict=True):
        recorded = kernel.value("duration")
        if not (ok and some) or kernel.tuned or not isinstance(recorded, float | int):
            continue
        now = _fastest(some, capture)
        if now is not None and recorded > 0:
            timed.append(Timed(kernel.id, float(recorded), now, float(kernel.launches or 1)))
    return common_factors(timed)


@dataclass(frozen=True)
class TimeBounds:
    """A kernel's entry as its times are judged, and why its bounds differ from the
    recorded ones."""

    kernel: KernelBaseline
    # The common factor its times were scaled by; None: judged against the recorded times.
    factor: CommonFactor | None = None
    # The time metrics bounded by the two-run floor (perfgate.judge.two_runs), and the runs.
    two_run: frozenset[str] = frozenset()
    runs: int = 1
    # Those of them judged as measured under the four-run floor (perfgate.judge.two_runs).
    as_measured: frozenset[str] = frozenset()


def _bounded(
    metric: MetricBaseline,
    factor: float | None,
    recorded_ns: float,
    gpu: str | None,
    runs: int,
) -> tuple[MetricBaseline, bool, bool, bool]:
    """`metric` scaled by `factor` under the corrected bound, and bounded by the two-run floor
    where it is tighter; or, in a check of four runs or more, judged as measured under the
    four-run floor where that applies; whether each applied."""
    threshold = metric.threshold
    if (
        metric.calibration is None
        or threshold is None
        or threshold.relative is None
        or not isinstance(metric.value, float | int)
    ):
        return metric, False, False, False
    low, high = metric.low, metric.high
    spread = (high - low) / float(metric.value) if low is not None and high is not None else 0.0
    own = max(spread, 0.0)
    four = four_run_bound(threshold.relative, recorded_ns, gpu, runs)
    if four is not None:
        # Not scaled: four runs outvote a slow process, which the factor is for.
        bounded = ThresholdOverride(four, threshold.absolute, threshold.direction)
        return replace(metric, threshold=bounded), False, True, True
    bound = (
        corrected_bound(threshold.relative, recorded_ns, gpu, own) if factor is not None else None
    )
    scaled = bound is not None
    judged = threshold.relative if bound is None else bound
    tighter = two_run_bound(threshold.relative, judged, recorded_ns, gpu, own, runs, scaled)
    if not scaled and tighter is None:
        return metric, False, False, False
    by = factor if factor is not None and scaled else 1.0
    return (
        replace(
            metric,
            value=float(metric.value) * by,
            low=metric.low * by if metric.low is not None else None,
            high=metric.high * by if metric.high is not None else None,
            threshold=ThresholdOverride(
                judged if tighter is None else tighter, threshold.absolute, threshold.direction
            ),
        ),
        scaled,
        tighter is not None,
        False,
    )


def time_bounds(
    kernel: KernelBaseline, factor: CommonFactor | None, gpu: str | None, runs: int = 1
) -> TimeBounds:
    """`kernel` with its times scaled by its process's factor and bounded by the corrected
    floor, and bounded by the two-run floor where its time is the fastest launch of `runs`
    capture files (two or more), or by the four-run floor, as measured (four or more, 10-20
    us); as it was where none applies."""
    recorded = kernel.value("duration")
    if (factor is None and runs < MIN_RUNS) or not isinstance(recorded, float | int):
        return TimeBounds(kernel)
    by = factor.factor if factor is not None else None
    metrics: list[MetricBaseline] = []
    scaled_any, two_run, as_measured = False, set(), set()
    for m in kernel.metrics:
        if m.name not in CORRECTED:
            metrics.append(m)
            continue
        got, scaled, tighter, measured = _bounded(
            m, by, float(recorded), gpu, runs if m.name in TWO_RUN_METRICS else 1
        )
        metrics.append(got)
        scaled_any |= scaled
        if tighter:
            two_run.add(m.name)
        if measured:
            as_measured.add(m.name)
    if all(a is b for a, b in zip(metrics, kernel.metrics, strict=True)):
        return TimeBounds(kernel)  # no correction applies (judge.common_mode.corrected_bound)
    return TimeBounds(
        replace(kernel, metrics=tuple(metrics)),
        factor if scaled_any else None,
        frozenset(two_run),
        runs if two_run else 1,
        frozenset(as_measured),
    )
