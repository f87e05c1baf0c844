"""Recording a baseline from one or more captures of a known-good build."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path

from perfgate import __version__
from perfgate.baseline import Baseline, KernelBaseline, MetricBaseline
from perfgate.capture import Capture
from perfgate.catalog import default_metrics, lookup
from perfgate.errors import UsageError
from perfgate.kernels import group_launches, identity, select
from perfgate.measure import Measured, Unavailable, measure


@dataclass(frozen=True)
class RecordSettings:
    kernel_patterns: tuple[str, ...] = ()  # regexes over the kernel name; none: every kernel
    metrics: tuple[str, ...] = ()  # metric names; none: the catalog's default set
    reason: str | None = None


@dataclass(frozen=True)
class RecordResult:
    baseline: Baseline
    skipped: tuple[str, ...]  # "kernel: metric: why" for metrics a kernel could not record


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def record(capture: Capture, settings: RecordSettings) -> RecordResult:
    launches = select(capture.launches, settings.kernel_patterns)
    for name in settings.metrics:
        lookup(name)  # unknown names fail here, before any work
    cc = next((launch.cc for launch in launches if launch.cc), None)
    names = list(settings.metrics) or default_metrics(capture.columns, cc)
    groups = group_launches(launches)
    kernels: list[KernelBaseline] = []
    skipped: list[str] = []
    recorded_any: dict[str, bool] = dict.fromkeys(names, False)
    for group in groups:
        kid, match = identity(group, groups)
        metrics: list[MetricBaseline] = []
        for name in names:
            result = measure(lookup(name), group, capture.columns)
            if isinstance(result, Unavailable):
                skipped.append(f"{kid}: {name}: {result.reason}")
                continue
            recorded_any[name] = True
            metrics.append(_metric_baseline(result))
        if metrics:
            kernels.append(KernelBaseline(kid, match, tuple(metrics), group[0].name, len(group)))
    missing = [n for n, ok in recorded_any.items() if not ok]
    if settings.metrics and missing:
        needed = sorted({raw for n in missing for raw in lookup(n).inputs(cc)})
        raise UsageError(
            f"the capture cannot give {', '.join(missing)} for any kernel; "
            f"ncu needs: --metrics {','.join(needed)}"
        )
    if not kernels:
        raise UsageError("no metric could be recorded for any kernel of the capture")
    devices = capture.devices
    provenance = {
        "recorded_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "recorded_by": f"perfgate {__version__}",
        "reason": settings.reason,
        "gpu": {"name": devices[0] if len(devices) == 1 else None, "cc": cc},
        "captures": [
            {"file": Path(p).name, **({"sha256": h} if (h := _sha256(p)) else {}),
             "launches": sum(1 for launch in capture.launches if launch.source == p)}
            for p in capture.paths
        ],
    }  # fmt: skip
    baseline = Baseline(kernels=tuple(kernels), provenance=provenance)
    return RecordResult(baseline, tuple(skipped))


def _metric_baseline(m: Measured) -> MetricBaseline:
    return MetricBaseline(
        name=m.metric,
        value=m.value,
        low=m.low,
        high=m.high,
        unit=m.unit,
        source=m.source,
        group=m.group,
        shares=m.shares,
    )
