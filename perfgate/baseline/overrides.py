"""Bounds given on the command line for one run (`perfgate check --threshold METRIC=5%`): the
bound of a metric for every kernel of every baseline of the check, over the file's own
(`thresholds:`, a metric's `threshold:`, a calibrated bound), without editing the file.

`METRIC=5%` sets the relative bound (a fraction of the baseline's value), `METRIC=0.5` the
absolute one, in the metric's unit as `perfgate metrics` lists it (percentage points for a
metric in %). Give both as two options; a change counts only beyond both, as in a baseline
file (docs/check.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.common.errors import UsageError
from perfgate.metrics.catalog import lookup
from perfgate.metrics.thresholds import ThresholdOverride

OPTION = "--threshold"


def _bound(text: str, option: str, given: str) -> ThresholdOverride:
    relative = text.endswith("%")
    number = text[:-1].strip() if relative else text
    try:
        amount = float(number)
    except ValueError:
        amount = math.nan
    if not math.isfinite(amount) or amount < 0:
        raise UsageError(
            f"{option} {given!r}: the bound must be a number from 0 up, with % for a relative "
            "bound (duration=5%) or without for an absolute one in the metric's unit "
            "(registers_per_thread=4)"
        )
    if relative:
        return ThresholdOverride(relative=amount / 100)
    return ThresholdOverride(absolute=amount)


def parse_thresholds(values: Iterable[str], option: str = OPTION) -> dict[str, ThresholdOverride]:
    """`METRIC=5%` and `METRIC=0.5` options -> metric name -> the bounds they set. An unknown
    metric, a categorical one (it has no numeric bound) or a bound that is not a number is
    refused (exit 2) before anything is read."""
    out: dict[str, ThresholdOverride] = {}
    for given in values:
        name, eq, text = given.partition("=")
        name, text = name.strip(), text.strip()
        if not eq or not name or not text:
            raise UsageError(f"{option} {given!r}: give METRIC=BOUND, e.g. {option} duration=5%")
        try:
            defn = lookup(name)
        except UsageError as exc:
            raise UsageError(f"{option} {given!r}: {exc.message}") from exc
        if defn.categorical:
            raise UsageError(
                f"{option} {given!r}: {name} is categorical (a label, not a number): it has no "
                "numeric bound; set its check in the baseline (docs/baselines.md)"
            )
        bound = _bound(text, option, given)
        before = out.get(name, ThresholdOverride())
        out[name] = ThresholdOverride(
            relative=before.relative if bound.relative is None else bound.relative,
            absolute=before.absolute if bound.absolute is None else bound.absolute,
            direction=before.direction,
        )
    return out


def _over(base: ThresholdOverride | None, given: ThresholdOverride) -> ThresholdOverride:
    base = base or ThresholdOverride()
    return ThresholdOverride(
        relative=base.relative if given.relative is None else given.relative,
        absolute=base.absolute if given.absolute is None else given.absolute,
        direction=base.direction,
    )


def _metric(metric: MetricBaseline, given: Mapping[str, ThresholdOverride]) -> MetricBaseline:
    bound = given.get(metric.name)
    if bound is None or metric.threshold is None:
        return metric  # the file-level entry below applies to it
    # Its own bound, calibrated or written by hand, gives way; the direction stays. Judged as
    # a bound that was not calibrated is: from the edge of the recorded launches' range.
    return replace(metric, threshold=_over(metric.threshold, bound), calibration=None)


def _kernel(kernel: KernelBaseline, given: Mapping[str, ThresholdOverride]) -> KernelBaseline:
    metrics = tuple(_metric(m, given) for m in kernel.metrics)
    return kernel if metrics == kernel.metrics else replace(kernel, metrics=metrics)


def with_thresholds(baseline: Baseline, given: Mapping[str, ThresholdOverride]) -> Baseline:
    """The baseline as the check judges it under `given`: each metric named there bounded so
    for every kernel, as if the file's `thresholds:` said it and no metric set its own."""
    if not given:
        return baseline
    thresholds = dict(baseline.thresholds)
    for name, bound in given.items():
        thresholds[name] = _over(thresholds.get(name), bound)
    kernels = tuple(_kernel(k, given) for k in baseline.kernels)
    return replace(baseline, thresholds=thresholds, kernels=kernels)


def unused(baseline: Baseline, given: Mapping[str, ThresholdOverride]) -> list[str]:
    """The metrics of `given` that no kernel of the baseline gates (the option does nothing
    there: a note says so, not a silence)."""
    gated = {m.name for k in baseline.kernels for m in k.metrics}
    return [name for name in given if name not in gated]
