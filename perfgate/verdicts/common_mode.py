"""A process's common factor applied to its kernels' durations (perfgate.judge.common_mode
decides the factor and the bound): each kernel whose process ran slow or fast as a whole is
judged against its recorded time scaled by that factor, under the corrected floor.

The recorded entry is adjusted before judging, as an autotuned kernel's expected duration is,
so that every route through the check (metric by metric, or a passing kernel's column
statistics) judges the same numbers; the comparison then says what it was judged against
(perfgate.judge.rules.word_noise)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfgate.baseline.model import KernelBaseline, MetricBaseline
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.common_mode import (
    CommonFactor,
    Timed,
    common_factors,
    corrected_bound,
)
from perfgate.judge.rules import CORRECTED
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


def _scaled(
    metric: MetricBaseline, factor: float, recorded_ns: float, gpu: str | None
) -> MetricBaseline:
    threshold = metric.threshold
    if (
        metric.calibration is None
        or threshold is None
        or threshold.relative is None
        or not isinstance(metric.value, float | int)
    ):
        return metric
    low, high = metric.low, metric.high
    spread = (high - low) / float(metric.value) if low is not None and high is not None else 0.0
    bound = corrected_bound(threshold.relative, recorded_ns, gpu, max(spread, 0.0))
    if bound is None:
        return metric
    return replace(
        metric,
        value=float(metric.value) * factor,
        low=metric.low * factor if metric.low is not None else None,
        high=metric.high * factor if metric.high is not None else None,
        threshold=ThresholdOverride(bound, threshold.absolute, threshold.direction),
    )


def corrected(
    kernel: KernelBaseline, factor: CommonFactor | None, gpu: str | None
) -> KernelBaseline:
    """`kernel` with its times scaled by its process's factor and bounded by the corrected
    floor; as it was where there is no factor."""
    recorded = kernel.value("duration")
    if factor is None or not isinstance(recorded, float | int):
        return kernel
    metrics = tuple(
        _scaled(m, factor.factor, float(recorded), gpu) if m.name in CORRECTED else m
        for m in kernel.metrics
    )
    if all(a is b for a, b in zip(metrics, kernel.metrics, strict=True)):
        return kernel  # no correction applies (perfgate.judge.common_mode.corrected_bound)
    return replace(kernel, metrics=metrics)
